// A fresh ring's first pass against the steady state (docs/security.md#1-tracing-never-hurts-the-traced-process): does the
// first trace call of a thread leave the hot path fault-free?
//
//   fresh        a new thread's first pass through a ring it has just claimed,
//                a slot never used before: the claim reserved (fallocate) and
//                populated (MADV_POPULATE_WRITE) the ring's pages
//   steady       the same thread's next pass through the same ring, after the
//                ring was drained as a collector would (pages long mapped)
//   unpopulated  a third pass, after the ring's whole pages were punched out
//                of the shm file: each page faults and is allocated again, as
//                every first pass did before claims populated their ring.
//                A reference, to show what the bench would see without it.
//
// Each batch is a new thread. It stamps once (that call attaches: it is not
// timed), then each pass is kRingRecords - 1 stamps timed with CLOCK_MONOTONIC
// around the pass; ns/stamp = pass time / stamps. A drained, retired slot
// would be handed to the next thread (already mapped: not fresh), so each
// thread leaves its last pass undrained and the segment has a slot per batch.
// /dev/shm holds batches * 512 KiB meanwhile; the segment is removed at the end.
//
//   ./build/bin/first_pass_bench [batches]     (default 100)

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace {

using ticktrace::abi::Record;

constexpr uint32_t kRingRecords = 1u << 14;  // 512 KiB per ring, 128 pages
constexpr uint64_t kPassStamps = kRingRecords - 1;
constexpr uint64_t kPage = 4096;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Batch {
  double fresh_ns = 0;
  double steady_ns = 0;
  double unpopulated_ns = 0;
};

double PassNs(const ticktrace::Tag& tag, uint64_t first_id) {
  const int64_t t0 = MonotonicNs();
  for (uint64_t i = 0; i < kPassStamps; ++i) ticktrace::stamp(tag, first_id + i);
  const int64_t t1 = MonotonicNs();
  return static_cast<double>(t1 - t0) / static_cast<double>(kPassStamps);
}

// Consumes everything published in `slot`, as the collector would.
void Drain(ticktrace::SegmentReader& reader, uint32_t slot, std::vector<Record>* sink) {
  sink->clear();
  const absl::StatusOr<uint64_t> end = reader.Peek(slot, kRingRecords, sink);
  if (end.ok()) reader.Commit(slot, *end);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The segment this run traces into, read as a collector would and open as
// the shm file whose pages PunchOutRing removes (fd -1 when it did not open).
struct Segment {
  std::string name;
  std::unique_ptr<ticktrace::SegmentReader> reader;
  int fd = -1;
};

// Starts tracing with a ring for every batch and opens its segment; false
// after saying why not.
bool OpenSegment(int batches, Segment* segment) {
  ticktrace::Options options;
  options.session = "first_pass_bench_" + std::to_string(getpid());
  options.ring_records = kRingRecords;
  options.rings = static_cast<uint32_t>(batches);
  if (ticktrace::Status st = ticktrace::Init(options); !st.ok()) {
    std::fprintf(stderr, "first_pass_bench: %s\n", st.ToString().c_str());
    return false;
  }
  segment->name = ticktrace::CurrentSegmentName();
  absl::StatusOr<std::unique_ptr<ticktrace::SegmentReader>> opened =
      ticktrace::SegmentReader::Open(segment->name);
  if (!opened.ok()) {
    std::fprintf(stderr, "first_pass_bench: %s\n", opened.status().ToString().c_str());
    return false;
  }
  segment->reader = *std::move(opened);
  segment->fd = shm_open(segment->name.c_str(), O_RDWR, 0);
  return true;
}

// Punches the whole pages of `slot`'s records out of the shm file: the next
// pass faults on each, as an unpopulated ring would.
void PunchOutRing(int fd, uint32_t slot) {
  const uint64_t records = ticktrace::abi::SlotsOffset(1024) +
                           slot * ticktrace::abi::SlotStride(kRingRecords) +
                           sizeof(ticktrace::abi::SlotControl);
  const uint64_t first = (records + kPage - 1) / kPage * kPage;
  const uint64_t last = (records + uint64_t{kRingRecords} * sizeof(Record)) / kPage * kPage;
  if (fd >= 0) {
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(first),
              static_cast<off_t>(last - first));
  }
}

// Every batch on a new thread: its fresh, steady and unpopulated passes.
// Counts in `not_fresh` the batches whose slot had been used before.
std::vector<Batch> RunBatches(int batches, ticktrace::SegmentReader& reader, int fd,
                              int* not_fresh) {
  static const ticktrace::Tag tag("first_pass");
  std::vector<Batch> results(static_cast<size_t>(batches));
  std::vector<Record> sink;
  sink.reserve(kRingRecords);
  for (int b = 0; b < batches; ++b) {
    std::thread([&, b] {
      const uint64_t id = uint64_t{static_cast<uint32_t>(b)} << 32;
      ticktrace::stamp(tag, id);  // attaches: claims, reserves, populates (not timed)
      // This thread's slot: the one the b-th claim took.
      const uint32_t slot = static_cast<uint32_t>(b);
      const ticktrace::SlotView view = reader.Slot(slot);
      if (view.tid != static_cast<uint32_t>(gettid()) || view.generation != 1) ++*not_fresh;
      Batch& r = results[static_cast<size_t>(b)];
      r.fresh_ns = PassNs(tag, id + 1);
      Drain(reader, slot, &sink);
      r.steady_ns = PassNs(tag, id + 1 + kPassStamps);
      Drain(reader, slot, &sink);
      PunchOutRing(fd, slot);
      r.unpopulated_ns = PassNs(tag, id + 1 + 2 * kPassStamps);
      // Left undrained: the retired slot is not handed to the next batch's thread.
    }).join();
  }
  return results;
}

void PrintResults(int batches, const std::vector<Batch>& results,
                  const ticktrace::TracerStatus& status, uint64_t dropped, int not_fresh) {
  std::vector<double> fresh, steady, unpopulated;
  for (const Batch& r : results) {
    fresh.push_back(r.fresh_ns);
    steady.push_back(r.steady_ns);
    unpopulated.push_back(r.unpopulated_ns);
  }
  std::printf("first_pass_bench: %d batches, a fresh thread and ring each; %llu stamps per pass "
              "(ring of %u records, %u pages)\n",
              batches, static_cast<unsigned long long>(kPassStamps), kRingRecords,
              static_cast<unsigned>(kRingRecords * sizeof(Record) / kPage));
  std::printf("%-12s %12s %12s\n", "pass", "median ns", "mean ns");
  std::printf("%-12s %12.2f %12.2f\n", "fresh", Median(fresh), Mean(fresh));
  std::printf("%-12s %12.2f %12.2f\n", "steady", Median(steady), Mean(steady));
  std::printf("%-12s %12.2f %12.2f\n", "unpopulated", Median(unpopulated), Mean(unpopulated));
  std::printf("fresh / steady (median):       %.2fx   (target: <= 1.2x)\n",
              Median(fresh) / Median(steady));
  std::printf("unpopulated / steady (median): %.2fx   (what a first pass cost before)\n",
              Median(unpopulated) / Median(steady));
  std::printf("rings reserved %llu, refused %llu; dropped %llu (must be 0); slots not fresh %d "
              "(must be 0)\n",
              static_cast<unsigned long long>(status.rings_reserved),
              static_cast<unsigned long long>(status.rings_refused),
              static_cast<unsigned long long>(dropped), not_fresh);
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = argc > 1 ? std::max(1, std::atoi(argv[1])) : 100;
  Segment segment;
  if (!OpenSegment(batches, &segment)) return 1;
  int not_fresh = 0;
  const std::vector<Batch> results = RunBatches(batches, *segment.reader, segment.fd, &not_fresh);
  uint64_t dropped = 0;
  for (int b = 0; b < batches; ++b) {
    dropped += segment.reader->Slot(static_cast<uint32_t>(b)).dropped;
  }
  const ticktrace::TracerStatus status = ticktrace::TraceStatus();
  if (segment.fd >= 0) close(segment.fd);
  (void)ticktrace::RemoveSegment(segment.name);
  PrintResults(batches, results, status, dropped, not_fresh);
  return 0;
}
