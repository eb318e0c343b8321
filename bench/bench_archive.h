// The collector bench's raw archive, shared by the programs that replay it
// (collector_bench in-process, replay_bench through a collector binary):
// three processes; per order md_rx (p1), decide span + decide stamp (p2),
// order_sent (p3): 4 records. Chunks of 2048 orders per ring and a clock
// chunk per batch, as the live drainer writes them. Ids count up from 1, so
// every emitted order lingers and leaves its id in the instance memory.
// Header-only; included by the programs in this folder only.

#ifndef TICKTRACE_BENCH_BENCH_ARCHIVE_H_
#define TICKTRACE_BENCH_BENCH_ARCHIVE_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/app/run_info.h"
#include "collector/stream/archive.h"
#include "collector/stream/stream.h"
#include "ticktrace/abi.h"

namespace ticktrace::bench {

inline ticktrace::abi::Record Rec(uint16_t tag, uint64_t order, uint64_t tsc, uint8_t kind,
                                  uint32_t duration = 0) {
  ticktrace::abi::Record r{};
  r.tsc = tsc;
  r.order_id = order;
  r.aux = kind == ticktrace::abi::kSpan ? 1 : ticktrace::abi::kAuxUnknown;
  r.payload.span.end_aux = 1;
  r.payload.span.duration_ticks = duration;
  r.tag_id = tag;
  r.kind = kind;
  return r;
}

// Writes `records` records (whole orders of 4) to a new raw archive at
// `path`; exits the program with a line on failure.
inline void WriteArchive(const std::string& path, uint64_t records) {
  std::remove(path.c_str());
  ticktrace::collect::ArchiveHeader h;
  h.kind = ticktrace::collect::ArchiveKind::kRaw;
  absl::StatusOr<ticktrace::collect::ArchiveWriter> w =
      ticktrace::collect::ArchiveWriter::Create(path, h, false);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", std::string(w.status().message()).c_str());
    std::exit(1);
  }
  std::string buf;
  ticktrace::collect::RunInfo info;
  info.session = "bench";
  info.host = "bench";
  info.tsc_hz = 2e9;
  info.calibration_source = "bench";
  ticktrace::collect::ChunkEncoder::RunInfo(info.ToJson(), &buf);
  const char* names[3][2] = {{"md_rx", ""}, {"decide", "strategy"}, {"order_sent", ""}};
  for (uint32_t p = 1; p <= 3; ++p) {
    ticktrace::collect::ProcessChunk pc;
    pc.process_id = p;
    pc.pid = 100 + p;
    // StrCat, not `literal + to_string`: g++ 12 -O3 warns (-Wrestrict, a
    // false positive) about the inlined std::string concatenation.
    pc.segment = absl::StrCat("ticktrace.bench.", pc.pid);
    pc.name = absl::StrCat("p", p);
    ticktrace::collect::ChunkEncoder::Process(pc, &buf);
    ticktrace::collect::TagsChunk t;
    t.process_id = p;
    t.tags.emplace_back(0, names[p - 1][0]);
    if (names[p - 1][1][0] != '\0') t.tags.emplace_back(1, names[p - 1][1]);
    ticktrace::collect::ChunkEncoder::Tags(t, &buf);
    ticktrace::collect::ThreadChunk th;
    th.process_id = p;
    th.generation = 1;
    th.tid = pc.pid;
    th.name = "main";
    ticktrace::collect::ChunkEncoder::Thread(th, &buf);
  }
  const uint64_t orders = records / 4;
  constexpr uint64_t kBatch = 2048;  // orders per pass
  std::vector<ticktrace::abi::Record> r1, r2, r3;
  uint64_t index[4] = {0, 0, 0, 0};
  uint64_t seed = 12345;
  for (uint64_t first = 1; first <= orders; first += kBatch) {
    r1.clear();
    r2.clear();
    r3.clear();
    const uint64_t last = std::min(orders, first + kBatch - 1);
    for (uint64_t id = first; id <= last; ++id) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t t = 1'000'000 + id * 2000;
      const uint64_t jitter = (seed >> 33) % 400;
      r1.push_back(Rec(0, id, t, ticktrace::abi::kStamp));
      r2.push_back(Rec(1, id, t + 300, ticktrace::abi::kSpan, static_cast<uint32_t>(200 + jitter)));
      r2.push_back(Rec(0, id, t + 600 + jitter, ticktrace::abi::kStamp));
      r3.push_back(Rec(0, id, t + 1500 + jitter, ticktrace::abi::kStamp));
    }
    ticktrace::collect::ChunkEncoder::Clock(1'000'000 + last * 2000 + 3000, &buf);
    ticktrace::collect::ChunkEncoder::Records(1, 0, 1, index[1], r1, &buf);
    ticktrace::collect::ChunkEncoder::Records(3, 0, 1, index[3], r3,
                                              &buf);  // the last stage drained first
    ticktrace::collect::ChunkEncoder::Records(2, 0, 1, index[2], r2, &buf);
    index[1] += r1.size();
    index[2] += r2.size();
    index[3] += r3.size();
    if (buf.size() > (8u << 20)) {
      if (!w->Append(buf).ok()) std::exit(1);
      buf.clear();
    }
  }
  if (!w->Append(buf).ok() || !w->Close().ok()) std::exit(1);
}

}  // namespace ticktrace::bench

#endif  // TICKTRACE_BENCH_BENCH_ARCHIVE_H_
