// The cost of libtrace's hot path against the least a trace point can cost.
//
//   bench_rdtsc          bare rdtsc
//   bench_rdtscp         bare rdtscp
//   bench_clock_gettime  clock_gettime(CLOCK_MONOTONIC), what a clock-based tracer pays
//   floor                rdtsc + one 32-byte store into a thread-local ring + a
//                        release store of its index: written here, no library code
//   stamp, stamp_rdtscp, stamp_fenced, span (Span begin + end), fenced_span
//   stamp_at             a stamp whose time another clock read (the time is
//                        given; the record still takes its own rdtsc)
//
// How it is measured. Each benchmark iteration runs a batch of kBatch
// operations, timed with CLOCK_MONOTONIC around the batch (manual time), so
// the clock's own cost is spread over kBatch operations. The column to read
// is the counter ns_per_op (batch time / kBatch, averaged over the batches);
// "Time" is per batch. After every batch the benchmark drains this thread's
// ring through SegmentReader, outside the timed region, so a ring never holds
// more than kBatch records: no stamp ever takes the drop path (checked at the
// end: the ring's drop counter must be 0). The floor's ring has the ring's
// capacity, so both write over the same amount of memory.
//
// The summary printed at the end gives each benchmark's mean ns/op over the
// repetitions and its ratio to the floor measured in the same run.
//
//   ./build/bin/trace_benchmark --benchmark_repetitions=5

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_setup.h"
#include "bench_util.h"
#include "benchmark/benchmark.h"
#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"
#include "ticktrace/tsc.h"

namespace {

using ticktrace::abi::Record;

constexpr int kBatch = 4096;
constexpr uint32_t kRingRecords = 1u << 14;  // 512 KiB per ring: >= kBatch, fits in L2

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// ---- The floor: the minimum a ring-writing trace point does. ----

struct FloorRing {
  Record* records = nullptr;
  std::atomic<uint64_t>* write_index = nullptr;
  uint64_t next = 0;
};
thread_local FloorRing tls_floor;

void AttachFloor() {
  if (tls_floor.records != nullptr) return;
  tls_floor.records =
      static_cast<Record*>(::operator new(sizeof(Record) * kRingRecords, std::align_val_t{64}));
  // The index on a line of its own, as in the segment.
  tls_floor.write_index = new (::operator new(64, std::align_val_t{64})) std::atomic<uint64_t>(0);
}

inline void FloorStamp(uint16_t tag, uint64_t order_id) noexcept {
  FloorRing& ring = tls_floor;
  const uint64_t w = ring.next;
  Record& r = ring.records[w & (kRingRecords - 1)];
  r.tsc = ticktrace::ReadTsc();
  r.order_id = order_id;
  r.payload.raw = 0;
  r.aux = ticktrace::abi::kAuxUnknown;
  r.tag_id = tag;
  r.kind = ticktrace::abi::kStamp;
  r.flags = 0;
  ring.next = w + 1;
  ring.write_index->store(w + 1, std::memory_order_release);
}

// ---- The batches. noinline so each loop can be read with objdump -d. ----

__attribute__((noinline)) void BatchRdtsc() {
  for (int i = 0; i < kBatch; ++i) benchmark::DoNotOptimize(ticktrace::ReadTsc());
}
__attribute__((noinline)) void BatchRdtscp() {
  for (int i = 0; i < kBatch; ++i) {
    uint32_t aux;
    benchmark::DoNotOptimize(ticktrace::ReadTscp(&aux));
    benchmark::DoNotOptimize(aux);
  }
}
__attribute__((noinline)) void BatchClock() {
  for (int i = 0; i < kBatch; ++i) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
__attribute__((noinline)) void BatchFloor(uint16_t tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) FloorStamp(tag, base + i);
}
__attribute__((noinline)) void BatchStamp(const ticktrace::Tag& tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) ticktrace::stamp(tag, base + i);
}
__attribute__((noinline)) void BatchStampRdtscp(const ticktrace::Tag& tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) ticktrace::stamp_rdtscp(tag, base + i);
}
__attribute__((noinline)) void BatchStampFenced(const ticktrace::Tag& tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) ticktrace::stamp_fenced(tag, base + i);
}
__attribute__((noinline)) void BatchStampAt(const ticktrace::Tag& tag, uint64_t base) {
  // The given time is taken as is (never read here): any ns since the epoch.
  const int64_t ns = int64_t{1'700'000'000} * 1'000'000'000 + static_cast<int64_t>(base);
  for (int i = 0; i < kBatch; ++i) {
    ticktrace::stamp_at(tag, base + i, ns + i, ticktrace::Clock::kRealtime);
  }
}
__attribute__((noinline)) void BatchSpan(const ticktrace::Tag& tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) {
    ticktrace::Span s(tag, base + i);
    s.end();
  }
}
__attribute__((noinline)) void BatchFencedSpan(const ticktrace::Tag& tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) {
    ticktrace::FencedSpan s(tag, base + i);
    s.end();
  }
}

// ---- Draining this thread's ring between batches (untimed). ----

// Set up in main() once this thread made its first trace call.
ticktrace::bench::OwnRingDrainer g_ring;
bool g_ring_attached = false;

void DrainOwnRing() {
  if (g_ring_attached) g_ring.Drain();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times one batch in ns (CLOCK_MONOTONIC around it).
template <typename Batch>
int64_t TimeBatch(Batch& batch) {
  const int64_t t0 = MonotonicNs();
  batch();
  return MonotonicNs() - t0;
}

// Runs `batch` once per iteration, times it, drains afterwards. Counters:
// ns_per_op (mean over the batches) and median_ns_per_op (the median batch:
// robust against batches in which the shared machine preempted us).
template <typename Batch>
void RunBatches(benchmark::State& state, bool drain, Batch batch) {
  std::vector<double> per_op;
  per_op.reserve(1 << 16);
  double sum = 0;
  for (auto _ : state) {
    const int64_t ns = TimeBatch(batch);
    state.SetIterationTime(static_cast<double>(ns) * 1e-9);
    const double v = static_cast<double>(ns) / kBatch;
    sum += v;
    if (per_op.size() < per_op.capacity()) per_op.push_back(v);
    if (drain) DrainOwnRing();
  }
  state.counters["ns_per_op"] = benchmark::Counter(sum, benchmark::Counter::kAvgIterations);
  state.counters["median_ns_per_op"] = Median(per_op);
}

// stamp and floor batches alternating in one loop, so that both see the same
// machine (load, frequency, preemption) over the same stretch of time.
template <typename Floor, typename Stamp>
void RunPaired(benchmark::State& state, Floor floor, Stamp stamp) {
  std::vector<double> floor_ns, stamp_ns;
  floor_ns.reserve(1 << 16);
  stamp_ns.reserve(1 << 16);
  double floor_sum = 0, stamp_sum = 0;
  for (auto _ : state) {
    const int64_t f = TimeBatch(floor);
    const int64_t s = TimeBatch(stamp);
    state.SetIterationTime(static_cast<double>(f + s) * 1e-9);
    floor_sum += static_cast<double>(f) / kBatch;
    stamp_sum += static_cast<double>(s) / kBatch;
    if (floor_ns.size() < floor_ns.capacity()) {
      floor_ns.push_back(static_cast<double>(f) / kBatch);
      stamp_ns.push_back(static_cast<double>(s) / kBatch);
    }
    DrainOwnRing();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["floor_ns"] = floor_sum / n;
  state.counters["stamp_ns"] = stamp_sum / n;
  state.counters["ratio"] = stamp_sum / floor_sum;
  state.counters["median_ratio"] = Median(stamp_ns) / Median(floor_ns);
}

const ticktrace::Tag& BenchTag() {
  static const ticktrace::Tag tag{"bench"};
  return tag;
}

void Register() {
  uint64_t base = 0;
  const auto reg = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->UseManualTime();
  };
  reg("bench_rdtsc", [](benchmark::State& s) { RunBatches(s, false, [] { BatchRdtsc(); }); });
  reg("bench_rdtscp", [](benchmark::State& s) { RunBatches(s, false, [] { BatchRdtscp(); }); });
  reg("bench_clock_gettime",
      [](benchmark::State& s) { RunBatches(s, false, [] { BatchClock(); }); });
  reg("floor", [base](benchmark::State& s) mutable {
    RunBatches(s, false, [&base] { BatchFloor(BenchTag().id(), base += kBatch); });
  });
  reg("stamp", [base](benchmark::State& s) mutable {
    RunBatches(s, true, [&base] { BatchStamp(BenchTag(), base += kBatch); });
  });
  reg("stamp_vs_floor", [base](benchmark::State& s) mutable {
    RunPaired(
        s, [&base] { BatchFloor(BenchTag().id(), base += kBatch); },
        [&base] { BatchStamp(BenchTag(), base += kBatch); });
  });
  reg("stamp_rdtscp", [base](benchmark::State& s) mutable {
    RunBatches(s, true, [&base] { BatchStampRdtscp(BenchTag(), base += kBatch); });
  });
  reg("stamp_fenced", [base](benchmark::State& s) mutable {
    RunBatches(s, true, [&base] { BatchStampFenced(BenchTag(), base += kBatch); });
  });
  reg("stamp_at", [base](benchmark::State& s) mutable {
    RunBatches(s, true, [&base] { BatchStampAt(BenchTag(), base += kBatch); });
  });
  reg("span", [base](benchmark::State& s) mutable {
    RunBatches(s, true, [&base] { BatchSpan(BenchTag(), base += kBatch); });
  });
  reg("fenced_span", [base](benchmark::State& s) mutable {
    RunBatches(s, true, [&base] { BatchFencedSpan(BenchTag(), base += kBatch); });
  });
}

// Prints as usual and keeps each run's ns_per_op for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter()
      : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      for (const auto& [counter, value] : r.counters) {
        values_[r.run_name.function_name + "/" + counter].push_back(value.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintSummary() const {
    const auto mean = [this](const std::string& key) {
      const auto it = values_.find(key);
      if (it == values_.end() || it->second.empty()) return 0.0;
      double s = 0;
      for (double v : it->second) s += v;
      return s / static_cast<double>(it->second.size());
    };
    const double floor = mean("floor/ns_per_op");
    const double floor_median = mean("floor/median_ns_per_op");
    std::printf("\nmeans over %zu repetition(s); ratios against the floor of the same run\n",
                values_.count("floor/ns_per_op") ? values_.at("floor/ns_per_op").size() : 0);
    std::printf("%-20s %12s %9s %14s %9s\n", "benchmark", "mean ns/op", "/ floor",
                "median ns/op", "/ floor");
    for (const char* name : {"bench_rdtsc", "bench_rdtscp", "bench_clock_gettime", "floor",
                             "stamp", "stamp_rdtscp", "stamp_fenced", "stamp_at", "span", "fenced_span"}) {
      const std::string key = std::string(name) + "/ns_per_op";
      if (!values_.count(key)) continue;
      const double m = mean(key);
      const double med = mean(std::string(name) + "/median_ns_per_op");
      std::printf("%-20s %12.2f %8.3fx %14.2f %8.3fx\n", name, m, floor > 0 ? m / floor : 0.0,
                  med, floor_median > 0 ? med / floor_median : 0.0);
    }
    if (floor > 0 && mean("stamp/ns_per_op") > 0) {
      std::printf("\nstamp / floor (separate benchmarks, means):     %.3f\n",
                  mean("stamp/ns_per_op") / floor);
    }
    if (values_.count("stamp_vs_floor/ratio")) {
      std::printf("stamp / floor (interleaved batches, means):     %.3f  (floor %.2f ns, stamp %.2f ns)\n",
                  mean("stamp_vs_floor/ratio"), mean("stamp_vs_floor/floor_ns"),
                  mean("stamp_vs_floor/stamp_ns"));
      std::printf("stamp / floor (interleaved batches, medians):   %.3f\n",
                  mean("stamp_vs_floor/median_ratio"));
      std::printf("target: stamp mean <= 1.2 x floor\n");
    }
  }

 private:
  std::map<std::string, std::vector<double>> values_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  if (!ticktrace::bench::InitTracing("ticktrace::Init", "bench" + std::to_string(getpid()),
                                     kRingRecords, 2)) {
    return 1;
  }
  const std::string segment = ticktrace::CurrentSegmentName();
  // Benchmarks with one thread run on this one: attach it (its first trace
  // call takes the slow path) and find its slot, so no batch pays for that.
  ticktrace::stamp(BenchTag(), 0);
  g_ring_attached = g_ring.Attach();
  if (!g_ring_attached) {
    (void)ticktrace::RemoveSegment(segment);
    return 1;
  }
  DrainOwnRing();
  AttachFloor();

  Register();
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  DrainOwnRing();
  reporter.PrintSummary();

  const ticktrace::SlotView v = g_ring.Slot();
  std::printf(
      "ring: %llu records drained, %llu dropped (must be 0: a drop would mean the drop "
      "path was measured)\n",
      static_cast<unsigned long long>(g_ring.drained()),
      static_cast<unsigned long long>(v.dropped));
  g_ring.Close();
  (void)ticktrace::RemoveSegment(segment);
  return v.dropped == 0 ? 0 : 2;
}
