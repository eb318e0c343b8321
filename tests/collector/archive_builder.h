// Test helper: builds raw archives (collector/stream/archive.h) record by record, so
// replay tests get exactly the input they describe.

#ifndef TICKTRACE_TESTS_COLLECTOR_ARCHIVE_BUILDER_H_
#define TICKTRACE_TESTS_COLLECTOR_ARCHIVE_BUILDER_H_

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collector/stream/archive.h"
#include "collector/app/run_info.h"
#include "collector/stream/stream.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect::testing {

// A record of `kind` with no payload.
inline abi::Record MakeRecord(abi::RecordKind kind, uint16_t tag, uint64_t order, uint64_t tsc,
                              uint32_t aux = abi::kAuxUnknown) {
  return abi::Record{.tsc = tsc,
                     .order_id = order,
                     .payload = {},
                     .aux = aux,
                     .tag_id = tag,
                     .kind = static_cast<uint8_t>(kind),
                     .flags = 0};
}

inline abi::Record Stamp(uint16_t tag, uint64_t order, uint64_t tsc,
                         uint32_t aux = abi::kAuxUnknown) {
  return MakeRecord(abi::kStamp, tag, order, tsc, aux);
}

inline abi::Record SpanRecord(uint16_t tag, uint64_t order, uint64_t begin_tsc,
                              uint32_t duration_ticks, uint32_t begin_aux, uint32_t end_aux) {
  abi::Record r{};
  r.tsc = begin_tsc;
  r.order_id = order;
  r.aux = begin_aux;
  r.payload.span.end_aux = end_aux;
  r.payload.span.duration_ticks = duration_ticks;
  r.tag_id = tag;
  r.kind = abi::kSpan;
  return r;
}

inline abi::Record Link(uint64_t child, uint64_t parent, uint64_t tsc) {
  abi::Record r{};
  r.tsc = tsc;
  r.order_id = child;
  r.payload.parent_order_id = parent;
  r.aux = abi::kAuxUnknown;
  r.tag_id = abi::kTagInvalid;
  r.kind = abi::kLink;
  return r;
}

// The run of a crafted archive: `session` on host "test" at `tsc_hz`, TSC 0
// at 2023-11-14T22:13:20Z.
inline RunInfo TestRunInfo(const std::string& session, double tsc_hz) {
  RunInfo info;
  info.session = session;
  info.host = "test";
  info.tsc_hz = tsc_hz;
  info.calibration_source = "test";
  info.anchor_tsc = 0;
  info.anchor_utc_ns = 1700000000000000000;
  return info;
}

// Appends the chunks that announce process `p` and its tags (ids 0, 1, ...
// in the order of `tags`) to `out`.
inline void AnnounceProcess(const ProcessChunk& p, const std::vector<std::string>& tags,
                            std::string* out) {
  ChunkEncoder::Process(p, out);
  TagsChunk t;
  t.process_id = p.process_id;
  for (size_t i = 0; i < tags.size(); ++i) t.tags.emplace_back(uint16_t(i), tags[i]);
  ChunkEncoder::Tags(t, out);
}

// As above for a process known by its ids alone: `process_id`, `pid` and its
// segment in `session`.
inline void AnnounceProcess(const std::string& session, uint32_t process_id, uint32_t pid,
                            const std::vector<std::string>& tags, std::string* out) {
  ProcessChunk p;
  p.process_id = process_id;
  p.pid = pid;
  p.segment = "ticktrace." + session + "." + std::to_string(pid);
  AnnounceProcess(p, tags, out);
}

class ArchiveBuilder {
 public:
  // 1 GHz by default: one tick is one ns, which keeps expectations readable.
  explicit ArchiveBuilder(double tsc_hz = 1e9) {
    ChunkEncoder::RunInfo(TestRunInfo("test", tsc_hz).ToJson(), &bytes_);
  }
  // A run described by `info` (e.g. TestRunInfo with more settings).
  explicit ArchiveBuilder(const RunInfo& info) { ChunkEncoder::RunInfo(info.ToJson(), &bytes_); }

  // A (TSC, UTC) anchor taken now in the stream (a run info update).
  ArchiveBuilder& Anchor(uint64_t tsc, int64_t utc_ns) {
    RunInfoUpdate u;
    u.kind = RunInfoUpdate::Kind::kAnchor;
    u.anchor = UtcAnchor{tsc, utc_ns};
    ChunkEncoder::RunInfo(u.ToJson(), &bytes_);
    return *this;
  }

  ArchiveBuilder& Process(uint32_t process_id, std::vector<std::string> tags) {
    ProcessChunk p;
    p.process_id = process_id;
    p.pid = 1000 + process_id;
    p.start_ticks = 42;
    p.segment = "ticktrace.test." + std::to_string(p.pid);
    p.name = "proc" + std::to_string(process_id);
    AnnounceProcess(p, tags, &bytes_);
    ThreadChunk th;
    th.process_id = process_id;
    th.slot = 0;
    th.generation = 1;
    th.tid = p.pid;
    th.name = "main";
    ChunkEncoder::Thread(th, &bytes_);
    return *this;
  }

  // Appends records of ring (process_id, slot 0), continuing its index unless `first_index` given.
  ArchiveBuilder& Records(uint32_t process_id, const std::vector<abi::Record>& records,
                          int64_t first_index = -1) {
    uint64_t& next = next_index_[process_id];
    const uint64_t first = first_index >= 0 ? uint64_t(first_index) : next;
    ChunkEncoder::Records(process_id, 0, 1, first, records, &bytes_);
    next = std::max(next, first + records.size());
    return *this;
  }

  ArchiveBuilder& Clock(uint64_t tsc) {
    ChunkEncoder::Clock(tsc, &bytes_);
    return *this;
  }

  ArchiveBuilder& Raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }

  std::string Bytes() const {
    ArchiveHeader h;
    h.kind = ArchiveKind::kRaw;
    return EncodeArchiveHeader(h) + bytes_;
  }

  void Write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string b = Bytes();
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  }

 private:
  std::string bytes_;
  std::map<uint32_t, uint64_t> next_index_;
};

// A fresh temporary directory for one test, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ticktrace_collector_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) {
    }
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_ARCHIVE_BUILDER_H_
