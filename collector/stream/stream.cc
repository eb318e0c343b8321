#include "collector/stream/stream.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/name_text.h"

namespace ticktrace::collect {
namespace {

static_assert(sizeof(abi::Record) == 32);

// Little-endian field writer into a std::string. x86-64 only (as the ABI).
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_->append(b, sizeof(T));
  }
  void PutString(std::string_view s) {
    if (s.size() > kMaxStreamString) s = s.substr(0, kMaxStreamString);
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }
  void PutBytes(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }

 private:
  std::string* out_;
};

// Bounds-checked reader over an untrusted payload. After any failed read,
// ok() is false and every later read returns zero.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  T Get() {
    T v{};
    if (!ok_ || n_ - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string GetString() {
    const uint32_t len = Get<uint32_t>();
    if (!ok_ || len > kMaxStreamString || n_ - pos_ < len) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == n_; }
  size_t remaining() const { return n_ - pos_; }
  const uint8_t* here() const { return p_ + pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Starts a chunk: reserves the header; FinishChunk fills it once the payload is written.
size_t BeginChunk(std::string* out) {
  const size_t start = out->size();
  out->append(kChunkHeaderBytes, '\0');
  return start;
}

void FinishChunk(ChunkType type, size_t start, std::string* out) {
  const size_t payload_bytes = out->size() - start - kChunkHeaderBytes;
  const uint32_t t = static_cast<uint32_t>(type);
  const uint32_t n = static_cast<uint32_t>(payload_bytes);
  const uint64_t sum = ChunkChecksum(
      t, reinterpret_cast<const uint8_t*>(out->data() + start + kChunkHeaderBytes), payload_bytes);
  char* h = out->data() + start;
  std::memcpy(h, &t, 4);
  std::memcpy(h + 4, &n, 4);
  std::memcpy(h + 8, &sum, 8);
}

absl::Status Malformed(ChunkType type, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("chunk type ", static_cast<uint32_t>(type), ": ", what));
}


// Each chunk type's payload, read whole: false when it is short or has bytes
// left over (the caller says which type was malformed). Names come out
// escaped (common/name_text.h): whatever bytes a segment or an archive held,
// the analysis, the store and every message see the same safe text.
bool ReadProcess(Reader& r, ProcessChunk* c) {
  c->process_id = r.Get<uint32_t>();
  c->pid = r.Get<uint32_t>();
  c->start_ticks = r.Get<uint64_t>();
  c->anchor_tsc = r.Get<uint64_t>();
  c->anchor_realtime_ns = r.Get<int64_t>();
  c->first_seen_utc_ns = r.Get<int64_t>();
  c->segment = EscapeName(r.GetString());
  c->name = EscapeName(r.GetString());
  return r.ok() && r.at_end();
}

absl::Status ReadTags(Reader& r, TagsChunk* c) {
  constexpr ChunkType kType = ChunkType::kTags;
  c->process_id = r.Get<uint32_t>();
  const uint32_t count = r.Get<uint32_t>();
  if (!r.ok() || count > abi::kMaxTags) return Malformed(kType, "bad tag count");
  c->tags.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint16_t id = r.Get<uint16_t>();
    std::string name = EscapeName(r.GetString());
    if (!r.ok()) return Malformed(kType, "bad tag entry");
    c->tags.emplace_back(id, std::move(name));
  }
  if (!r.at_end()) return Malformed(kType, "trailing bytes");
  return absl::OkStatus();
}

bool ReadThread(Reader& r, ThreadChunk* c) {
  c->process_id = r.Get<uint32_t>();
  c->slot = r.Get<uint32_t>();
  c->generation = r.Get<uint64_t>();
  c->tid = r.Get<uint32_t>();
  c->name = EscapeName(r.GetString());
  return r.ok() && r.at_end();
}

// The records stay in the payload: c->records points into it.
absl::Status ReadRecords(Reader& r, RecordsChunk* c) {
  constexpr ChunkType kType = ChunkType::kRecords;
  c->process_id = r.Get<uint32_t>();
  c->slot = r.Get<uint32_t>();
  c->generation = r.Get<uint64_t>();
  c->first_index = r.Get<uint64_t>();
  if (!r.ok() || r.remaining() % sizeof(abi::Record) != 0) {
    return Malformed(kType, "records payload is not whole records");
  }
  c->records = r.here();
  c->count = r.remaining() / sizeof(abi::Record);
  if (c->first_index + c->count < c->first_index) return Malformed(kType, "index overflow");
  return absl::OkStatus();
}

bool ReadSlotDropped(Reader& r, SlotDroppedChunk* c) {
  c->process_id = r.Get<uint32_t>();
  c->slot = r.Get<uint32_t>();
  c->generation = r.Get<uint64_t>();
  c->dropped_total = r.Get<uint64_t>();
  return r.ok() && r.at_end();
}

bool ReadProcessCounters(Reader& r, ProcessCountersChunk* c) {
  c->process_id = r.Get<uint32_t>();
  c->tags_rejected = r.Get<uint64_t>();
  c->threads_without_slot = r.Get<uint64_t>();
  c->slotless_dropped = r.Get<uint64_t>();
  return r.ok() && r.at_end();
}

bool ReadProcessExited(Reader& r, ProcessExitedChunk* c) {
  c->process_id = r.Get<uint32_t>();
  c->utc_ns = r.Get<int64_t>();
  return r.ok() && r.at_end();
}

}  // namespace

uint64_t ChunkChecksum(uint32_t type, const uint8_t* payload, size_t n) {
  // Four independent multiply-xor lanes over 8-byte words, so the loop is not
  // one long dependency chain; then the tail and the lengths are folded in.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h0 = 0x243F6A8885A308D3ull ^ type, h1 = 0x13198A2E03707344ull ^ n,
           h2 = 0xA4093822299F31D0ull, h3 = 0x082EFA98EC4E6C89ull;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, payload + i, 32);
    h0 = (h0 ^ w[0]) * kMul;
    h1 = (h1 ^ w[1]) * kMul;
    h2 = (h2 ^ w[2]) * kMul;
    h3 = (h3 ^ w[3]) * kMul;
    h0 ^= h0 >> 29;
    h1 ^= h1 >> 29;
    h2 ^= h2 >> 29;
    h3 ^= h3 >> 29;
  }
  uint64_t tail[4] = {0, 0, 0, 0};
  std::memcpy(tail, payload + i, n - i);
  h0 = (h0 ^ tail[0]) * kMul;
  h1 = (h1 ^ tail[1]) * kMul;
  h2 = (h2 ^ tail[2]) * kMul;
  h3 = (h3 ^ tail[3]) * kMul;
  uint64_t h = h0 ^ (h1 << 1 | h1 >> 63) ^ (h2 << 2 | h2 >> 62) ^ (h3 << 3 | h3 >> 61);
  h = (h ^ (h >> 31)) * kMul;
  return h ^ (h >> 32);
}

void ChunkEncoder::RunInfo(std::string_view json, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer(out).PutBytes(json.data(), std::min<size_t>(json.size(), kMaxChunkPayload));
  FinishChunk(ChunkType::kRunInfo, start, out);
}

void ChunkEncoder::Process(const ProcessChunk& c, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(c.process_id);
  w.Put(c.pid);
  w.Put(c.start_ticks);
  w.Put(c.anchor_tsc);
  w.Put(c.anchor_realtime_ns);
  w.Put(c.first_seen_utc_ns);
  w.PutString(c.segment);
  w.PutString(c.name);
  FinishChunk(ChunkType::kProcess, start, out);
}

void ChunkEncoder::Tags(const TagsChunk& c, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(c.process_id);
  w.Put(static_cast<uint32_t>(c.tags.size()));
  for (const auto& [id, name] : c.tags) {
    w.Put(id);
    w.PutString(name);
  }
  FinishChunk(ChunkType::kTags, start, out);
}

void ChunkEncoder::Thread(const ThreadChunk& c, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(c.process_id);
  w.Put(c.slot);
  w.Put(c.generation);
  w.Put(c.tid);
  w.PutString(c.name);
  FinishChunk(ChunkType::kThread, start, out);
}

void ChunkEncoder::Records(uint32_t process_id, uint32_t slot, uint64_t generation,
                           uint64_t first_index, std::span<const abi::Record> records,
                           std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(process_id);
  w.Put(slot);
  w.Put(generation);
  w.Put(first_index);
  w.PutBytes(records.data(), records.size_bytes());
  FinishChunk(ChunkType::kRecords, start, out);
}

void ChunkEncoder::SlotDropped(const SlotDroppedChunk& c, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(c.process_id);
  w.Put(c.slot);
  w.Put(c.generation);
  w.Put(c.dropped_total);
  FinishChunk(ChunkType::kSlotDropped, start, out);
}

void ChunkEncoder::ProcessCounters(const ProcessCountersChunk& c, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(c.process_id);
  w.Put(c.tags_rejected);
  w.Put(c.threads_without_slot);
  w.Put(c.slotless_dropped);
  FinishChunk(ChunkType::kProcessCounters, start, out);
}

void ChunkEncoder::ProcessExited(const ProcessExitedChunk& c, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer w(out);
  w.Put(c.process_id);
  w.Put(c.utc_ns);
  FinishChunk(ChunkType::kProcessExited, start, out);
}

void ChunkEncoder::Clock(uint64_t tsc, std::string* out) {
  const size_t start = BeginChunk(out);
  Writer(out).Put(tsc);
  FinishChunk(ChunkType::kClock, start, out);
}

absl::StatusOr<ChunkFrame> ParseChunkFrame(const uint8_t* data, size_t n) {
  if (n < kChunkHeaderBytes) return absl::OutOfRangeError("truncated chunk header");
  ChunkFrame f;
  uint64_t sum;
  std::memcpy(&f.type, data, 4);
  std::memcpy(&f.payload_bytes, data + 4, 4);
  std::memcpy(&sum, data + 8, 8);
  if (f.type == 0 || f.payload_bytes > kMaxChunkPayload) {
    return absl::DataLossError(absl::StrCat("impossible chunk header (type ", f.type, ", ",
                                            f.payload_bytes, " bytes)"));
  }
  if (n - kChunkHeaderBytes < f.payload_bytes) {
    return absl::OutOfRangeError("truncated chunk payload");
  }
  f.payload = data + kChunkHeaderBytes;
  f.frame_bytes = kChunkHeaderBytes + size_t{f.payload_bytes};
  if (ChunkChecksum(f.type, f.payload, f.payload_bytes) != sum) {
    return absl::DataLossError(absl::StrCat("chunk checksum mismatch (type ", f.type, ")"));
  }
  return f;
}

absl::Status DispatchChunk(const ChunkFrame& frame, ChunkVisitor* visitor) {
  const auto type = static_cast<ChunkType>(frame.type);
  Reader r(frame.payload, frame.payload_bytes);
  switch (type) {
    case ChunkType::kRunInfo:
      visitor->OnRunInfo(std::string_view(reinterpret_cast<const char*>(frame.payload),
                                          frame.payload_bytes));
      return absl::OkStatus();
    case ChunkType::kProcess: {
      ProcessChunk c;
      if (!ReadProcess(r, &c)) return Malformed(type, "bad process payload");
      visitor->OnProcess(c);
      return absl::OkStatus();
    }
    case ChunkType::kTags: {
      TagsChunk c;
      if (absl::Status s = ReadTags(r, &c); !s.ok()) return s;
      visitor->OnTags(c);
      return absl::OkStatus();
    }
    case ChunkType::kThread: {
      ThreadChunk c;
      if (!ReadThread(r, &c)) return Malformed(type, "bad thread payload");
      visitor->OnThread(c);
      return absl::OkStatus();
    }
    case ChunkType::kRecords: {
      RecordsChunk c;
      if (absl::Status s = ReadRecords(r, &c); !s.ok()) return s;
      visitor->OnRecords(c);
      return absl::OkStatus();
    }
    case ChunkType::kSlotDropped: {
      SlotDroppedChunk c;
      if (!ReadSlotDropped(r, &c)) return Malformed(type, "bad slot-dropped payload");
      visitor->OnSlotDropped(c);
      return absl::OkStatus();
    }
    case ChunkType::kProcessCounters: {
      ProcessCountersChunk c;
      if (!ReadProcessCounters(r, &c)) return Malformed(type, "bad process-counters payload");
      visitor->OnProcessCounters(c);
      return absl::OkStatus();
    }
    case ChunkType::kProcessExited: {
      ProcessExitedChunk c;
      if (!ReadProcessExited(r, &c)) return Malformed(type, "bad process-exited payload");
      visitor->OnProcessExited(c);
      return absl::OkStatus();
    }
    case ChunkType::kClock: {
      const uint64_t tsc = r.Get<uint64_t>();
      if (!r.ok() || !r.at_end()) return Malformed(type, "bad clock payload");
      visitor->OnClock(tsc);
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();  // unknown type: skipped
}

namespace {

// DispatchAll (malformed_chunks null: the first malformed chunk stops it)
// and DispatchEach (counted there, and skipped).
absl::Status DispatchFrames(std::string_view bytes, ChunkVisitor* visitor,
                            uint64_t* malformed_chunks) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t off = 0;
  while (off < bytes.size()) {
    absl::StatusOr<ChunkFrame> f = ParseChunkFrame(p + off, bytes.size() - off);
    if (!f.ok()) {
      return absl::Status(f.status().code(),
                          absl::StrCat("at byte ", off, ": ", f.status().message()));
    }
    absl::Status s = DispatchChunk(*f, visitor);
    if (!s.ok()) {
      if (malformed_chunks == nullptr) {
        return absl::Status(s.code(), absl::StrCat("at byte ", off, ": ", s.message()));
      }
      ++*malformed_chunks;
    }
    off += f->frame_bytes;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DispatchAll(std::string_view bytes, ChunkVisitor* visitor) {
  return DispatchFrames(bytes, visitor, nullptr);
}

absl::Status DispatchEach(std::string_view bytes, ChunkVisitor* visitor,
                          uint64_t* malformed_chunks) {
  return DispatchFrames(bytes, visitor, malformed_chunks);
}

}  // namespace ticktrace::collect
