// libFuzzer target: arbitrary bytes presented as a raw archive (or journal)
// file to collector/stream/archive.h's ArchiveReader, and their chunks to the
// collector's real Analyzer (what --replay and journal recovery run). Whatever
// the bytes, the reader must return a Status and the analysis must neither
// crash nor read out of bounds (ASan and UBSan are built in).
//
// Each input runs twice: as is, as a file through ArchiveReader (header,
// framing, checksums, torn tails, decoding); and with every chunk's checksum
// repaired, chunk by chunk into an Analyzer (so that mutations also reach the
// payload decoders and the analysis, which a bad checksum would hide). The
// Analyzer is fed by ParseChunkFrame/DispatchChunk, as ArchiveReader feeds it,
// rather than through a second ArchiveReader. Both run with small buffers and
// tables (64 KiB read buffer, 64 open orders reserved): the collector's
// defaults (8 MiB, 64 Ki orders) cost page faults that dwarfed the rest of an
// execution under ASan.
//
// Seeds (corpus/archive_reader_fuzzer/) are archives written by the real
// collector with --raw; see docs/reliability.md for how they were made.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "collector/analysis/analyzer.h"
#include "collector/stream/archive.h"
#include "collector/stream/stream.h"
#include "collector/time/time_base.h"

namespace {

using ticktrace::collect::kArchiveHeaderBytes;
using ticktrace::collect::kChunkHeaderBytes;

// One memory-backed file, reused for every input; ArchiveReader::Open takes a path.
int FuzzFd() {
  static const int fd = memfd_create("ticktrace_archive_fuzz", 0);
  return fd;
}

// Touches every decoded field, so that a decoder handing out bad sizes or
// pointers is caught by ASan here too.
class TouchVisitor : public ticktrace::collect::ChunkVisitor {
 public:
  void OnRunInfo(std::string_view json) override { Add(json.size()); }
  void OnProcess(const ticktrace::collect::ProcessChunk& c) override {
    Add(c.pid + c.segment.size() + c.name.size());
  }
  void OnTags(const ticktrace::collect::TagsChunk& c) override {
    for (const auto& [id, name] : c.tags) Add(id + name.size());
  }
  void OnThread(const ticktrace::collect::ThreadChunk& c) override { Add(c.tid + c.name.size()); }
  void OnRecords(const ticktrace::collect::RecordsChunk& c) override {
    for (size_t i = 0; i < c.count; ++i) Add(c.RecordAt(i).tsc);
  }
  void OnSlotDropped(const ticktrace::collect::SlotDroppedChunk& c) override {
    Add(c.dropped_total);
  }
  void OnProcessCounters(const ticktrace::collect::ProcessCountersChunk& c) override {
    Add(c.slotless_dropped);
  }
  void OnProcessExited(const ticktrace::collect::ProcessExitedChunk& c) override {
    Add(static_cast<uint64_t>(c.utc_ns));
  }
  void OnClock(uint64_t tsc) override { Add(tsc); }

 private:
  void Add(uint64_t v) { sum_ += v; }
  uint64_t sum_ = 0;
};

// The bytes as a file, through ArchiveReader (header checks, framing,
// checksums, torn tails, chunk dispatch).
void ReadAsFile(const uint8_t* data, size_t size) {
  const int fd = FuzzFd();
  if (fd < 0 || ftruncate(fd, 0) != 0) return;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto reader = ticktrace::collect::ArchiveReader::Open(path, /*read_buffer_bytes=*/64 << 10);
  if (!reader.ok()) return;
  TouchVisitor visitor;
  (void)reader->ReadAll(&visitor);
}

// The chunks after the file header, framed and dispatched one by one (as
// ArchiveReader does) into the collector's real Analyzer.
void Analyze(const uint8_t* data, size_t size) {
  if (size < kArchiveHeaderBytes) return;
  if (!ticktrace::collect::DecodeArchiveHeader(
           std::string_view(reinterpret_cast<const char*>(data), kArchiveHeaderBytes))
           .ok()) {
    return;
  }
  ticktrace::collect::AnalyzerSettings settings;
  if (size % 2 == 0) settings.stitch.pipeline = {"a", "b"};  // else: learn
  settings.stitch.timeout_ticks = 1000000;
  settings.stitch.expected_open_orders = 64;
  const auto time_base = ticktrace::collect::TimeBase::FromHz(2e9, 0, 1700000000000000000);
  ticktrace::collect::Analyzer analyzer(settings, time_base, nullptr);
  size_t at = kArchiveHeaderBytes;
  while (at < size) {
    auto frame = ticktrace::collect::ParseChunkFrame(data + at, size - at);
    if (!frame.ok()) break;
    (void)ticktrace::collect::DispatchChunk(*frame, &analyzer);
    at += frame->frame_bytes;
  }
  analyzer.Finish();
  (void)analyzer.Processes();
  (void)analyzer.Threads();
  (void)analyzer.Tags();
}

// Rewrites each whole chunk's checksum so that it matches its payload.
std::string RepairChecksums(const uint8_t* data, size_t size) {
  std::string out(reinterpret_cast<const char*>(data), size);
  size_t at = kArchiveHeaderBytes;
  while (at + kChunkHeaderBytes <= out.size()) {
    uint32_t type, payload_bytes;
    std::memcpy(&type, out.data() + at, 4);
    std::memcpy(&payload_bytes, out.data() + at + 4, 4);
    if (payload_bytes > out.size() - at - kChunkHeaderBytes) break;
    const uint64_t sum = ticktrace::collect::ChunkChecksum(
        type, reinterpret_cast<const uint8_t*>(out.data()) + at + kChunkHeaderBytes,
        payload_bytes);
    std::memcpy(out.data() + at + 8, &sum, 8);
    at += kChunkHeaderBytes + payload_bytes;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;  // bounded memory per input
  ReadAsFile(data, size);
  const std::string repaired = RepairChecksums(data, size);
  Analyze(reinterpret_cast<const uint8_t*>(repaired.data()), repaired.size());
  return 0;
}
