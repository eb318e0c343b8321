#include "store/common/detail.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "store/common/varint.h"

namespace ticktrace::store {
namespace {

// Packed detail, version 1 (docs/store.md, "Packed detail"):
//   u8 version (1)
//   zigzag first_tsc_utc_delta_ns
//   varint stamp count, then per stamp:
//     varint name_id, varint (flags << 1 | is_span), varint process_id, varint tid,
//     varint cpu + 1 (0: unknown), zigzag tsc_delta,
//     spans only: varint cpu_end + 1, zigzag duration_ns
//   varint sample count, then per sample (samples.seq order):
//     zigzag start_delta_ns, varint process_begin + 1, varint process_end + 1,
//     varint cpu_begin + 1, varint cpu_end + 1
constexpr uint8_t kDetailVersion = 1;

using internal::Cursor;
using internal::PutVarint;

uint64_t PlusOne(int32_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v) + 1; }

bool MinusOne(uint64_t v, int32_t* out) {
  if (v > (1ull << 31)) return false;
  *out = static_cast<int32_t>(static_cast<int64_t>(v) - 1);
  return true;
}

bool U32(uint64_t v, uint32_t* out) {
  if (v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

uint32_t OrderDetail::flags() const {
  uint32_t f = 0;
  for (const SampleDetail& s : samples) f |= s.flags;
  for (const StampDetail& s : stamps) f |= s.flags;
  return f;
}

void OrderDetail::SetFirstTscFromStamps() {
  bool first = true;
  for (const StampDetail& s : stamps) {
    if (first || s.tsc < first_tsc) {
      first_tsc = s.tsc;
      first_tsc_utc_ns = s.utc_ns;
      first = false;
    }
  }
}

void PackDetail(const PackedDetail& detail, std::string* out) {
  out->push_back(static_cast<char>(kDetailVersion));
  PutVarint(out, ZigZag(detail.first_tsc_utc_delta_ns));
  PutVarint(out, detail.stamps.size());
  for (const PackedStamp& s : detail.stamps) {
    PutVarint(out, s.name_id);
    PutVarint(out, (static_cast<uint64_t>(s.flags) << 1) | (s.is_span ? 1 : 0));
    PutVarint(out, s.process_id);
    PutVarint(out, s.tid);
    PutVarint(out, PlusOne(s.cpu));
    PutVarint(out, ZigZag(s.tsc_delta));
    if (s.is_span) {
      PutVarint(out, PlusOne(s.cpu_end));
      PutVarint(out, ZigZag(s.duration_ns));
    }
  }
  PutVarint(out, detail.samples.size());
  for (const PackedSample& s : detail.samples) {
    PutVarint(out, ZigZag(s.start_delta_ns));
    PutVarint(out, PlusOne(s.process_begin));
    PutVarint(out, PlusOne(s.process_end));
    PutVarint(out, PlusOne(s.cpu_begin));
    PutVarint(out, PlusOne(s.cpu_end));
  }
}

absl::StatusOr<PackedDetail> UnpackDetail(std::string_view bytes) {
  const auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("packed order detail (", bytes.size(), " bytes): ", what));
  };
  Cursor in(bytes);
  uint8_t version = 0;
  if (!in.Byte(&version)) return bad("empty");
  if (version != kDetailVersion) return bad(absl::StrCat("unknown version ", version));
  PackedDetail d;
  uint64_t n = 0;
  if (!in.Varint(&n)) return bad("truncated header");
  d.first_tsc_utc_delta_ns = UnZigZag(n);
  // Each stamp takes at least 6 bytes, each sample 5: a count beyond the
  // bytes left is a lie, refused before anything is allocated.
  if (!in.Varint(&n) || n > bytes.size() / 6) return bad("bad stamp count");
  d.stamps.resize(n);
  for (PackedStamp& s : d.stamps) {
    uint64_t name = 0, kind = 0, process = 0, tid = 0, cpu = 0, delta = 0;
    if (!in.Varint(&name) || !in.Varint(&kind) || !in.Varint(&process) || !in.Varint(&tid) ||
        !in.Varint(&cpu) || !in.Varint(&delta)) {
      return bad("truncated stamp");
    }
    s.is_span = (kind & 1) != 0;
    if (!U32(name, &s.name_id) || !U32(kind >> 1, &s.flags) || !U32(process, &s.process_id) ||
        !U32(tid, &s.tid) || !MinusOne(cpu, &s.cpu)) {
      return bad("stamp field out of range");
    }
    s.tsc_delta = UnZigZag(delta);
    if (s.is_span) {
      uint64_t cpu_end = 0, duration = 0;
      if (!in.Varint(&cpu_end) || !in.Varint(&duration)) return bad("truncated span");
      if (!MinusOne(cpu_end, &s.cpu_end)) return bad("span field out of range");
      s.duration_ns = UnZigZag(duration);
    }
  }
  if (!in.Varint(&n) || n > bytes.size() / 5) return bad("bad sample count");
  d.samples.resize(n);
  for (PackedSample& s : d.samples) {
    uint64_t start = 0, pb = 0, pe = 0, cb = 0, ce = 0;
    if (!in.Varint(&start) || !in.Varint(&pb) || !in.Varint(&pe) || !in.Varint(&cb) ||
        !in.Varint(&ce)) {
      return bad("truncated sample");
    }
    s.start_delta_ns = UnZigZag(start);
    if (!MinusOne(pb, &s.process_begin) || !MinusOne(pe, &s.process_end) ||
        !MinusOne(cb, &s.cpu_begin) || !MinusOne(ce, &s.cpu_end)) {
      return bad("sample field out of range");
    }
  }
  if (!in.done()) return bad("trailing bytes");
  return d;
}

int64_t RoundNs(double ns) {
  if (!std::isfinite(ns)) return 0;
  return std::llround(std::clamp(ns, -9.0e18, 9.0e18));
}

void PackOrderDetail(const OrderDetail& o, absl::Span<const uint32_t> name_ids, std::string* out) {
  // Field for field what PackDetail writes for the PackedDetail of `o`
  // (the layout above), without building it.
  out->push_back(static_cast<char>(kDetailVersion));
  PutVarint(out, ZigZag(o.first_tsc_utc_ns - o.first_utc_ns));
  PutVarint(out, o.stamps.size());
  for (size_t i = 0; i < o.stamps.size(); ++i) {
    const StampDetail& s = o.stamps[i];
    PutVarint(out, name_ids[i]);
    PutVarint(out, (static_cast<uint64_t>(s.flags) << 1) | (s.is_span ? 1 : 0));
    PutVarint(out, s.process_id);
    PutVarint(out, s.tid);
    PutVarint(out, PlusOne(s.cpu));
    PutVarint(out, ZigZag(static_cast<int64_t>(s.tsc - o.first_tsc)));
    if (s.is_span) {
      PutVarint(out, PlusOne(s.cpu_end));
      PutVarint(out, ZigZag(RoundNs(s.duration_ns)));
    }
  }
  PutVarint(out, o.samples.size());
  for (const SampleDetail& s : o.samples) {
    PutVarint(out, ZigZag(s.start_utc_ns - o.first_utc_ns));
    PutVarint(out, PlusOne(s.process_begin));
    PutVarint(out, PlusOne(s.process_end));
    PutVarint(out, PlusOne(s.cpu_begin));
    PutVarint(out, PlusOne(s.cpu_end));
  }
}

PackedDetail MakePackedDetail(const OrderDetail& o, absl::Span<const uint32_t> name_ids) {
  PackedDetail d;
  d.first_tsc_utc_delta_ns = o.first_tsc_utc_ns - o.first_utc_ns;
  d.stamps.resize(o.stamps.size());
  for (size_t i = 0; i < o.stamps.size(); ++i) {
    const StampDetail& s = o.stamps[i];
    PackedStamp& p = d.stamps[i];
    p.name_id = name_ids[i];
    p.is_span = s.is_span;
    p.process_id = s.process_id;
    p.tid = s.tid;
    p.cpu = s.cpu;
    p.tsc_delta = static_cast<int64_t>(s.tsc - o.first_tsc);
    if (s.is_span) {
      p.cpu_end = s.cpu_end;
      p.duration_ns = RoundNs(s.duration_ns);
    }
    p.flags = s.flags;
  }
  d.samples.resize(o.samples.size());
  for (size_t i = 0; i < o.samples.size(); ++i) {
    const SampleDetail& s = o.samples[i];
    PackedSample& p = d.samples[i];
    p.start_delta_ns = s.start_utc_ns - o.first_utc_ns;
    p.process_begin = s.process_begin;
    p.process_end = s.process_end;
    p.cpu_begin = s.cpu_begin;
    p.cpu_end = s.cpu_end;
  }
  return d;
}

}  // namespace ticktrace::store
