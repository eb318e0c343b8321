// libFuzzer target: arbitrary bytes presented as a raw archive (or journal)
// file to collector/archive.h's ArchiveReader, whose chunks go through the
// collector's real Analyzer (what --replay and journal recovery run). Whatever
// the bytes, the reader must return a Status and the analysis must neither
// crash nor read out of bounds (ASan and UBSan are built in).
//
// Each input runs twice: as is (the checksum and framing checks are fuzzed),
// and with every chunk's checksum repaired (so that mutations also reach the
// payload decoders and the analysis, which a bad checksum would hide).
//
// Seeds (corpus/archive_reader_fuzzer/) are archives written by the real
// collector with --raw; see docs/reliability.md for how they were made.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "collector/analyzer.h"
#include "collector/archive.h"
#include "collector/stream.h"
#include "collector/time_base.h"

namespace {

using ticktrace::collect::kArchiveHeaderBytes;
using ticktrace::collect::kChunkHeaderBytes;

// One memory-backed file, reused for every input; ArchiveReader::Open takes a path.
int FuzzFd() {
  static const int fd = memfd_create("ticktrace_archive_fuzz", 0);
  return fd;
}

void RunOnce(const uint8_t* data, size_t size, bool with_pipeline) {
  const int fd = FuzzFd();
  if (fd < 0 || ftruncate(fd, 0) != 0) return;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto reader = ticktrace::collect::ArchiveReader::Open(path);
  if (!reader.ok()) return;
  ticktrace::collect::AnalyzerSettings settings;
  if (with_pipeline) settings.stitch.pipeline = {"a", "b"};
  settings.stitch.timeout_ticks = 1000000;
  const auto time_base = ticktrace::collect::TimeBase::FromHz(2e9, 0, 1700000000000000000);
  ticktrace::collect::Analyzer analyzer(settings, time_base, nullptr);
  (void)reader->ReadAll(&analyzer);
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
  RunOnce(data, size, /*with_pipeline=*/false);
  const std::string repaired = RepairChecksums(data, size);
  RunOnce(reinterpret_cast<const uint8_t*>(repaired.data()), repaired.size(),
          /*with_pipeline=*/true);
  return 0;
}
