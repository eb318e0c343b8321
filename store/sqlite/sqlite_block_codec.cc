#include "store/sqlite/sqlite_block_codec.h"

#include <array>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "store/common/varint.h"

namespace ticktrace::store {
namespace {

// Compact block, version 2 (docs/store.md, "Compact blocks"); "z" is a
// zigzag varint, everything else an unsigned varint:
//   u8 version (2)
//   order count
//   stamp table: count, then per entry: name_id, process_id, tid, cpu + 1,
//     cpu_end + 1 (0 unless a span), is_span
//   sample table: count, then per entry: stage_id, process_begin + 1,
//     process_end + 1, cpu_begin + 1, cpu_end + 1
//   per order:
//     bits: id reference (0..3) | 4 complete | 8 parent | 16 total |
//           32 missing | 64 instance | 128 first_tsc_utc_delta_ns
//     z(order_id - the reference's id)
//     [instance] [z(parent_order_id - order_id)]
//     z(first_utc_ns - previous order's; the first: - the block's start)
//     z(first_tsc - previous order's; the first: - 0)
//     [z(total_ns - the last sample's latency_ns, 0 without samples)]
//     [missing: length, bytes] [z(first_tsc_utc_delta_ns)]
//     sample count, per sample: (entry << 1 | has flags), z(latency_ns),
//       z(start_delta_ns - (previous sample's start_delta_ns + latency_ns),
//         0 for the first)), [flags]
//     stamp count, per stamp: (entry << 1 | has flags),
//       z(tsc_delta - previous stamp's tsc_delta, 0 for the first), [flags],
//       spans: z(duration_ns)
// The id references are the last four ids: each order names the nearest,
// which then takes the order's id when it was within 2^16, else the slot
// that is next in turn does (IdReferences, the same on both sides).
constexpr uint64_t kBitComplete = 4, kBitParent = 8, kBitTotal = 16, kBitMissing = 32, kBitInstance = 64,
                   kBitFirstTscUtc = 128;

using internal::Cursor;
using internal::PutVarint;

uint64_t BiasUp(int32_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v) + 1; }

bool BiasDown(uint64_t v, int32_t* out) {
  if (v > (1ull << 31)) return false;
  *out = static_cast<int32_t>(static_cast<int64_t>(v) - 1);
  return true;
}

bool FitsU32(uint64_t v, uint32_t* out) {
  if (v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// a - b with the wrap-around of uint64, as a signed delta.
int64_t WrapDelta(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

class IdReferences {
 public:
  // The slot whose id is nearest to `id`.
  int Nearest(int64_t id) const {
    int best = 0;
    for (int i = 1; i < 4; ++i) {
      if (ZigZag(WrapDelta(id, ids_[i])) < ZigZag(WrapDelta(id, ids_[best]))) best = i;
    }
    return best;
  }
  int64_t id(int slot) const { return ids_[slot]; }
  void Took(int slot, int64_t id) {
    if (ZigZag(WrapDelta(id, ids_[slot])) < (1u << 16)) {
      ids_[slot] = id;
    } else {
      ids_[next_] = id;
      next_ = (next_ + 1) % 4;
    }
  }

 private:
  std::array<int64_t, 4> ids_{};
  int next_ = 0;
};

using StampKey = std::tuple<uint32_t, uint32_t, uint32_t, int32_t, int32_t, bool>;
using SampleKey = std::tuple<uint32_t, int32_t, int32_t, int32_t, int32_t>;

StampKey KeyOf(const PackedStamp& s) {
  return {s.name_id, s.process_id, s.tid, s.cpu, s.is_span ? s.cpu_end : -1, s.is_span};
}
SampleKey KeyOf(const SampleCell& c, const PackedSample& s) {
  return {c.stage_id, s.process_begin, s.process_end, s.cpu_begin, s.cpu_end};
}

// Entries in the order they were first met.
template <typename Key>
class Table {
 public:
  uint64_t Index(const Key& k) {
    auto [it, added] = index_.try_emplace(k, entries_.size());
    if (added) entries_.push_back(k);
    return it->second;
  }
  const std::vector<Key>& entries() const { return entries_; }

 private:
  std::map<Key, uint64_t> index_;
  std::vector<Key> entries_;
};

void PutZ(std::string* out, int64_t v) { PutVarint(out, ZigZag(v)); }

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

}  // namespace

uint32_t CompactOrder::flags() const {
  uint32_t f = 0;
  for (const SampleCell& c : cells) f |= c.flags;
  for (const PackedStamp& s : detail.stamps) f |= s.flags;
  return f;
}

struct CompactBlockEncoder::State {
  Table<StampKey> stamp_table;
  Table<SampleKey> sample_table;
  std::string stamp_entries, sample_entries, body;
  IdReferences refs;
  int64_t prev_utc = 0, prev_tsc = 0, count = 0;
};

CompactBlockEncoder::CompactBlockEncoder(int64_t block_start) { Reset(block_start); }

void CompactBlockEncoder::Reset(int64_t block_start) {
  state_ = std::make_unique<State>();
  state_->prev_utc = block_start;
}

CompactBlockEncoder::~CompactBlockEncoder() = default;

int64_t CompactBlockEncoder::count() const { return state_->count; }

void CompactBlockEncoder::Add(const CompactOrder& o) {
  State& st = *state_;
  std::string& body = st.body;
  ++st.count;
  const int slot = st.refs.Nearest(o.order_id);
  uint64_t bits = static_cast<uint64_t>(slot);
  if (o.complete) bits |= kBitComplete;
  if (o.parent_order_id.has_value()) bits |= kBitParent;
  if (o.total_ns.has_value()) bits |= kBitTotal;
  if (!o.missing.empty()) bits |= kBitMissing;
  if (o.instance != 0) bits |= kBitInstance;
  if (o.detail.first_tsc_utc_delta_ns != 0) bits |= kBitFirstTscUtc;
  PutVarint(&body, bits);
  PutZ(&body, WrapDelta(o.order_id, st.refs.id(slot)));
  st.refs.Took(slot, o.order_id);
  if (o.instance != 0) PutVarint(&body, static_cast<uint64_t>(o.instance));
  if (o.parent_order_id.has_value()) PutZ(&body, WrapDelta(*o.parent_order_id, o.order_id));
  PutZ(&body, WrapDelta(o.first_utc_ns, st.prev_utc));
  PutZ(&body, WrapDelta(o.first_tsc, st.prev_tsc));
  st.prev_utc = o.first_utc_ns;
  st.prev_tsc = o.first_tsc;
  if (o.total_ns.has_value()) {
    PutZ(&body, WrapDelta(*o.total_ns, o.cells.empty() ? 0 : o.cells.back().latency_ns));
  }
  if (!o.missing.empty()) {
    PutVarint(&body, o.missing.size());
    body.append(o.missing);
  }
  if (o.detail.first_tsc_utc_delta_ns != 0) PutZ(&body, o.detail.first_tsc_utc_delta_ns);
  PutVarint(&body, o.cells.size());
  int64_t expected_start = 0;
  for (size_t i = 0; i < o.cells.size(); ++i) {
    const SampleCell& c = o.cells[i];
    const PackedSample& s = o.detail.samples[i];
    const size_t entries = st.sample_table.entries().size();
    const uint64_t entry = st.sample_table.Index(KeyOf(c, s));
    if (st.sample_table.entries().size() > entries) {
      PutVarint(&st.sample_entries, c.stage_id);
      PutVarint(&st.sample_entries, BiasUp(s.process_begin));
      PutVarint(&st.sample_entries, BiasUp(s.process_end));
      PutVarint(&st.sample_entries, BiasUp(s.cpu_begin));
      PutVarint(&st.sample_entries, BiasUp(s.cpu_end));
    }
    PutVarint(&body, entry << 1 | (c.flags != 0 ? 1 : 0));
    PutZ(&body, c.latency_ns);
    PutZ(&body, WrapDelta(s.start_delta_ns, expected_start));
    if (c.flags != 0) PutVarint(&body, c.flags);
    expected_start = WrapAdd(s.start_delta_ns, c.latency_ns);
  }
  PutVarint(&body, o.detail.stamps.size());
  int64_t prev_delta = 0;
  for (const PackedStamp& s : o.detail.stamps) {
    const size_t entries = st.stamp_table.entries().size();
    const uint64_t entry = st.stamp_table.Index(KeyOf(s));
    if (st.stamp_table.entries().size() > entries) {
      PutVarint(&st.stamp_entries, s.name_id);
      PutVarint(&st.stamp_entries, s.process_id);
      PutVarint(&st.stamp_entries, s.tid);
      PutVarint(&st.stamp_entries, BiasUp(s.cpu));
      PutVarint(&st.stamp_entries, BiasUp(s.is_span ? s.cpu_end : -1));
      PutVarint(&st.stamp_entries, s.is_span ? 1 : 0);
    }
    PutVarint(&body, entry << 1 | (s.flags != 0 ? 1 : 0));
    PutZ(&body, WrapDelta(s.tsc_delta, prev_delta));
    prev_delta = s.tsc_delta;
    if (s.flags != 0) PutVarint(&body, s.flags);
    if (s.is_span) PutZ(&body, s.duration_ns);
  }
}

size_t CompactBlockEncoder::bytes() const {
  const State& st = *state_;
  // The version byte and three counts.
  return 1 + VarintBytes(static_cast<uint64_t>(st.count)) +
         VarintBytes(st.stamp_table.entries().size()) +
         VarintBytes(st.sample_table.entries().size()) + st.stamp_entries.size() +
         st.sample_entries.size() + st.body.size();
}

void CompactBlockEncoder::Finish(std::string* out) const {
  const State& st = *state_;
  out->push_back(static_cast<char>(kCompactBlockVersion));
  PutVarint(out, static_cast<uint64_t>(st.count));
  PutVarint(out, st.stamp_table.entries().size());
  out->append(st.stamp_entries);
  PutVarint(out, st.sample_table.entries().size());
  out->append(st.sample_entries);
  out->append(st.body);
}

void EncodeCompactBlock(int64_t block_start, const std::vector<CompactOrder>& orders,
                        std::string* out) {
  CompactBlockEncoder encoder(block_start);
  for (const CompactOrder& o : orders) encoder.Add(o);
  encoder.Finish(out);
}

absl::StatusOr<std::vector<CompactOrder>> DecodeCompactBlock(int64_t block_key,
                                                             int64_t block_start,
                                                             std::string_view bytes) {
  Cursor in(bytes);
  const auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("order block ", block_key, " (compact, ", bytes.size(), " bytes): ", what));
  };
  // Every count is checked against the bytes there are (an entry or an
  // element takes at least one byte) before anything is allocated.
  const auto count = [&](uint64_t* n) { return in.Varint(n) && *n <= bytes.size(); };
  uint8_t version = 0;
  if (!in.Byte(&version) || version != kCompactBlockVersion) return bad("not a compact block");
  uint64_t n_orders = 0, n = 0;
  if (!count(&n_orders) || n_orders > 256) return bad("bad order count");
  if (!count(&n)) return bad("bad stamp table");
  std::vector<PackedStamp> stamp_table(n);
  for (PackedStamp& s : stamp_table) {
    uint64_t name = 0, process = 0, tid = 0, cpu = 0, cpu_end = 0, span = 0;
    if (!in.Varint(&name) || !in.Varint(&process) || !in.Varint(&tid) || !in.Varint(&cpu) ||
        !in.Varint(&cpu_end) || !in.Varint(&span)) {
      return bad("truncated stamp table");
    }
    if (!FitsU32(name, &s.name_id) || !FitsU32(process, &s.process_id) || !FitsU32(tid, &s.tid) ||
        !BiasDown(cpu, &s.cpu) || !BiasDown(cpu_end, &s.cpu_end) || span > 1) {
      return bad("stamp table entry out of range");
    }
    s.is_span = span == 1;
  }
  if (!count(&n)) return bad("bad sample table");
  std::vector<std::pair<uint32_t, PackedSample>> sample_table(n);
  for (auto& [stage, s] : sample_table) {
    uint64_t id = 0, pb = 0, pe = 0, cb = 0, ce = 0;
    if (!in.Varint(&id) || !in.Varint(&pb) || !in.Varint(&pe) || !in.Varint(&cb) ||
        !in.Varint(&ce)) {
      return bad("truncated sample table");
    }
    if (!FitsU32(id, &stage) || !BiasDown(pb, &s.process_begin) || !BiasDown(pe, &s.process_end) ||
        !BiasDown(cb, &s.cpu_begin) || !BiasDown(ce, &s.cpu_end)) {
      return bad("sample table entry out of range");
    }
  }
  std::vector<CompactOrder> orders(n_orders);
  IdReferences refs;
  int64_t prev_utc = block_start, prev_tsc = 0;
  for (CompactOrder& o : orders) {
    uint64_t bits = 0, v = 0;
    if (!in.Varint(&bits) || bits > 255 || !in.Varint(&v)) return bad("truncated order");
    const int slot = static_cast<int>(bits & 3);
    o.order_id = WrapAdd(refs.id(slot), UnZigZag(v));
    refs.Took(slot, o.order_id);
    o.complete = (bits & kBitComplete) != 0;
    if ((bits & kBitInstance) != 0) {
      if (!in.Varint(&v) || v > INT64_MAX) return bad("bad instance");
      o.instance = static_cast<int64_t>(v);
    }
    if ((bits & kBitParent) != 0) {
      if (!in.Varint(&v)) return bad("truncated parent");
      o.parent_order_id = WrapAdd(o.order_id, UnZigZag(v));
    }
    uint64_t utc = 0, tsc = 0;
    if (!in.Varint(&utc) || !in.Varint(&tsc)) return bad("truncated order");
    o.first_utc_ns = prev_utc = WrapAdd(prev_utc, UnZigZag(utc));
    o.first_tsc = prev_tsc = WrapAdd(prev_tsc, UnZigZag(tsc));
    uint64_t total = 0;
    if ((bits & kBitTotal) != 0 && !in.Varint(&total)) return bad("truncated total");
    if ((bits & kBitMissing) != 0) {
      uint8_t c = 0;
      if (!count(&v)) return bad("bad missing");
      for (uint64_t i = 0; i < v; ++i) {
        if (!in.Byte(&c)) return bad("truncated missing");
        o.missing.push_back(static_cast<char>(c));
      }
    }
    if ((bits & kBitFirstTscUtc) != 0) {
      if (!in.Varint(&v)) return bad("truncated order");
      o.detail.first_tsc_utc_delta_ns = UnZigZag(v);
    }
    if (!count(&n)) return bad("bad sample count");
    o.cells.resize(n);
    o.detail.samples.resize(n);
    int64_t expected_start = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t entry = 0, latency = 0, start = 0, flags = 0;
      if (!in.Varint(&entry) || !in.Varint(&latency) || !in.Varint(&start)) {
        return bad("truncated sample");
      }
      if ((entry & 1) != 0 && !in.Varint(&flags)) return bad("truncated sample");
      if ((entry >> 1) >= sample_table.size()) return bad("sample table index out of range");
      SampleCell& c = o.cells[i];
      PackedSample& s = o.detail.samples[i];
      c.stage_id = sample_table[entry >> 1].first;
      s = sample_table[entry >> 1].second;
      c.latency_ns = UnZigZag(latency);
      if (!FitsU32(flags, &c.flags)) return bad("sample flags out of range");
      s.start_delta_ns = WrapAdd(expected_start, UnZigZag(start));
      expected_start = WrapAdd(s.start_delta_ns, c.latency_ns);
    }
    if ((bits & kBitTotal) != 0) {
      o.total_ns = WrapAdd(o.cells.empty() ? 0 : o.cells.back().latency_ns, UnZigZag(total));
    }
    if (!count(&n)) return bad("bad stamp count");
    o.detail.stamps.resize(n);
    int64_t prev_delta = 0;
    for (PackedStamp& s : o.detail.stamps) {
      uint64_t entry = 0, delta = 0, flags = 0;
      if (!in.Varint(&entry) || !in.Varint(&delta)) return bad("truncated stamp");
      if ((entry >> 1) >= stamp_table.size()) return bad("stamp table index out of range");
      s = stamp_table[entry >> 1];
      s.tsc_delta = prev_delta = WrapAdd(prev_delta, UnZigZag(delta));
      if ((entry & 1) != 0 && (!in.Varint(&flags) || !FitsU32(flags, &s.flags))) {
        return bad("bad stamp flags");
      }
      if (s.is_span) {
        if (!in.Varint(&v)) return bad("truncated span");
        s.duration_ns = UnZigZag(v);
      }
    }
  }
  if (!in.done()) return bad("trailing bytes");
  return orders;
}

}  // namespace ticktrace::store
