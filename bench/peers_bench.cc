// peers_bench: ticktrace's hot path against the floor and against its peers,
// with the same fields (a tag and an order id), the same loop and in the same
// run, as batch means and as per-call distributions.
//
//   floor          rdtsc + one 32-byte record into a thread-local ring + release index
//                  (bench_util.h FloorRing: no library code)
//   stamp          ticktrace::stamp(tag, order_id)
//   stamp_rdtscp   ticktrace::stamp_rdtscp (rdtscp; emulated here, see tsc.h)
//   stamp_fenced   ticktrace::stamp_fenced (lfence; rdtsc; lfence)
//   span           ticktrace::Span begin + end()
//   clock_gettime  a bare clock_gettime(CLOCK_MONOTONIC)
//   clock_stamp    clock_gettime(CLOCK_MONOTONIC) written into the floor's ring layout
//                  (same 32-byte record, ns in the tsc field): a clock-based tracer
//   spdlog_async   spdlog async logger, file sink, policy overrun_oldest (never blocks):
//                  logger->info("RDTSC {} {} {}", tag, order_id, ticks) — a logging
//                  END_MEASURE macro with the tag, the order id and the TSC value
//   lttng          LTTng-UST tracepoint ticktrace_bench:stamp(tag_id, order_id),
//                  recorded by a real session (run_all.sh starts it)
//   lttng_disabled LTTng-UST tracepoint compiled in but not enabled
//
// Two measurements, each interleaved: every round runs one batch of kBatch
// calls of every variant in turn (the order rotates each round), so all
// variants see the same machine over the same stretch of time.
//   batch     CLOCK_MONOTONIC around a batch of kBatch calls / kBatch: the mean
//             cost per call including everything the call leaves to later calls.
//   per call  each call bracketed by `lfence; rdtsc; lfence` pairs; the median
//             empty bracket (measured in the same rounds) is subtracted.
//             Resolution: this AMD TSC advances in steps (~21 ticks, ~10 ns),
//             so per-call percentiles of calls shorter than that are quantised.
// Each batch also records whether the measuring thread was preempted during
// it (its involuntary context switch count, getrusage, read outside the
// timing): figures come twice, over the "quiet" batches (the code's own cost)
// and over all batches (plus whatever else ran on these shared cores). A
// peer whose own helper threads preempt the caller (spdlog's worker) has few
// quiet batches: read its "all" figures.
// Between batches (untimed) every ring is emptied: the ticktrace ring through
// SegmentReader, spdlog's queue by waiting for its worker; LTTng's session has
// buffers larger than everything the run writes. No variant measures its
// full-buffer path; the end of the output checks it (drops must be 0).
//
// Output: markdown tables for docs/benchmarks.md and TARGET lines (bench_util.h).
//
//   peers_bench [--rounds N] [--tmpdir DIR]

#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_setup.h"
#include "bench_util.h"
#include "ticktrace/calibration.h"
#include "ticktrace/trace.h"
#include "ticktrace/tsc.h"

#ifdef TICKTRACE_BENCH_HAVE_SPDLOG
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#endif

#ifdef TICKTRACE_BENCH_HAVE_LTTNG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wshadow"
#include "lttng_provider.h"
#pragma GCC diagnostic pop
#endif

namespace {

namespace tb = ticktrace::bench;
using tb::Fmt;
using tb::InvoluntarySwitches;

constexpr int kBatch = 4096;
constexpr uint32_t kRingRecords = 1u << 14;  // >= kBatch: drained after every batch
constexpr size_t kSpdlogQueue = 8192;         // >= kBatch: emptied after every batch

// Keeps `value` alive for the optimiser without a memory clobber.
template <typename T>
inline void Keep(const T& value) {
  asm volatile("" : : "r,m"(value));
}

struct Variant {
  std::string name;
  std::string what;
  bool in_batch = true;                         // the empty bracket has no batch row
  std::function<int64_t(uint64_t)> timed;       // one batch; returns its ns
  std::function<void(uint64_t, uint64_t*)> bracketed;  // kBatch per-call tick counts
  std::function<void()> after;                  // untimed: empty the buffers
  std::vector<double> batch_ns_per_call;
  std::vector<bool> batch_preempted;            // an involuntary context switch during it
  std::vector<double> call_ticks;
  std::vector<bool> call_batch_preempted;       // one flag per bracketed batch
};

template <typename Op>
__attribute__((noinline)) int64_t TimedBatch(const Op& op, uint64_t base) {
  const int64_t t0 = tb::MonotonicNs();
  for (int i = 0; i < kBatch; ++i) op(base + static_cast<uint64_t>(i));
  return tb::MonotonicNs() - t0;
}

template <typename Op>
__attribute__((noinline)) void BracketedBatch(const Op& op, uint64_t base, uint64_t* ticks) {
  for (int i = 0; i < kBatch; ++i) {
    const uint64_t t0 = tb::BracketBegin();
    op(base + static_cast<uint64_t>(i));
    const uint64_t t1 = tb::BracketEnd();
    ticks[i] = t1 - t0;
  }
}

template <typename Op>
Variant MakeVariant(std::string name, std::string what, Op op, std::function<void()> after) {
  Variant v;
  v.name = std::move(name);
  v.what = std::move(what);
  v.timed = [op](uint64_t base) { return TimedBatch(op, base); };
  v.bracketed = [op](uint64_t base, uint64_t* ticks) { BracketedBatch(op, base, ticks); };
  v.after = std::move(after);
  return v;
}

struct Options {
  int rounds = 200;
  std::string tmpdir;  // empty: a fresh directory, removed at the end
};

// Reads --rounds and --tmpdir into `o`. On any other argument prints the
// usage line and returns false (main exits 2).
bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      o->rounds = std::atoi(argv[++i]);
    } else if (a == "--tmpdir" && i + 1 < argc) {
      o->tmpdir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: peers_bench [--rounds N] [--tmpdir DIR]\n");
      return false;
    }
  }
  if (o->rounds < 1) o->rounds = 1;
  return true;
}

// The rings the variants write into. They live in main's frame because the
// variants' lambdas hold references to them; the two floor rings are made
// only once this thread's ticktrace ring is attached (AddTicktraceVariants).
struct Rings {
  tb::OwnRingDrainer drainer;          // empties this thread's ticktrace ring between batches
  std::optional<tb::FloorRing> floor;  // the floor variant's ring
  std::optional<tb::FloorRing> clock;  // the clock_stamp variant's ring
};

// Attaches this thread to its ticktrace ring, then adds the variants that
// need no peer library: the empty bracket, the floor, ticktrace's calls and
// the two clock_gettime ones, in the order they rotate in. Returns the tag's
// id (the peers write it too), or nullopt when this thread's ring is not
// found (the drainer has said why).
std::optional<uint16_t> AddTicktraceVariants(Rings* rings, std::vector<Variant>* variants) {
  // A static, so that the measured lambdas below name it without a capture.
  static const ticktrace::Tag tag{"bench"};
  const uint16_t tag_id = tag.id();
  ticktrace::stamp(tag, 0);  // attach this thread: the slow path runs here, untimed
  tb::OwnRingDrainer& drainer = rings->drainer;
  if (!drainer.Attach()) return std::nullopt;
  drainer.Drain();
  const auto drain = [&drainer] { drainer.Drain(); };
  const auto nothing = [] {};

  tb::FloorRing& floor_ring = rings->floor.emplace(kRingRecords);
  tb::FloorRing& clock_ring = rings->clock.emplace(kRingRecords);

  {
    Variant empty = MakeVariant("empty", "nothing between the brackets (the baseline)",
                                [](uint64_t) {}, nothing);
    empty.in_batch = false;
    variants->push_back(std::move(empty));
  }
  variants->push_back(MakeVariant(
      "floor", "rdtsc + 32-byte record + release index, written in the bench",
      [&floor_ring, tag_id](uint64_t id) { floor_ring.Write(ticktrace::ReadTsc(), tag_id, id); },
      nothing));
  variants->push_back(MakeVariant(
      "stamp", "`ticktrace::stamp(tag, order_id)`",
      [](uint64_t id) { ticktrace::stamp(tag, id); }, drain));
  variants->push_back(MakeVariant(
      "stamp_rdtscp", "`ticktrace::stamp_rdtscp` (rdtscp emulated: lfence;rdtsc + getcpu)",
      [](uint64_t id) { ticktrace::stamp_rdtscp(tag, id); }, drain));
  variants->push_back(MakeVariant(
      "stamp_fenced", "`ticktrace::stamp_fenced` (lfence;rdtsc;lfence)",
      [](uint64_t id) { ticktrace::stamp_fenced(tag, id); }, drain));
  variants->push_back(MakeVariant(
      "span", "`ticktrace::Span` begin + `end()`",
      [](uint64_t id) {
        ticktrace::Span s(tag, id);
        s.end();
      },
      drain));
  variants->push_back(MakeVariant(
      "clock_gettime", "bare `clock_gettime(CLOCK_MONOTONIC)` (vDSO, kvm-clock)",
      [](uint64_t) {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        Keep(ts.tv_nsec);
      },
      nothing));
  variants->push_back(MakeVariant(
      "clock_stamp", "`clock_gettime(CLOCK_MONOTONIC)` ns into the floor's 32-byte ring record",
      [&clock_ring, tag_id](uint64_t id) {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        clock_ring.Write(static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u +
                             static_cast<uint64_t>(ts.tv_nsec),
                         tag_id, id);
      },
      nothing));
  return tag_id;
}

// What setting up the peers leaves for the rest of the run: why a peer is
// not in the table ("" when it is), and spdlog's logger, whose queue the
// drop check reads and whose file the clean-up removes.
struct Peers {
  std::string spdlog_note = "skipped: libspdlog-dev not installed";
  std::string lttng_note = "skipped: liblttng-ust-dev not installed";
#ifdef TICKTRACE_BENCH_HAVE_SPDLOG
  std::string spdlog_path;
  std::shared_ptr<spdlog::details::thread_pool> pool;
  std::shared_ptr<spdlog::async_logger> logger;
  std::function<void()> wait_spdlog;  // until the worker has emptied the queue (2 s at most)
#endif
};

#ifdef TICKTRACE_BENCH_HAVE_SPDLOG
// spdlog's async logger, writing into `tmpdir`, warmed up and added as the
// spdlog_async variant.
void AddSpdlogVariant(const std::string& tmpdir, Peers* peers, std::vector<Variant>* variants) {
  peers->spdlog_path = tmpdir + "/spdlog_async.log";
  auto pool = std::make_shared<spdlog::details::thread_pool>(kSpdlogQueue, 1);
  auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(peers->spdlog_path, true);
  auto logger = std::make_shared<spdlog::async_logger>(
      "bench", sink, pool, spdlog::async_overflow_policy::overrun_oldest);
  logger->set_pattern("%H:%M:%S.%f %v");  // the time string is made by the worker thread
  peers->spdlog_note.clear();
  {
    // Warm up: the worker thread, the file, fmt's first use.
    for (int i = 0; i < 1000; ++i) logger->info("RDTSC {} {} {}", "bench", i, ticktrace::ReadTsc());
  }
  auto wait_spdlog = [pool] {
    const int64_t deadline = tb::MonotonicNs() + 2'000'000'000;
    while (pool->queue_size() != 0 && tb::MonotonicNs() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  };
  wait_spdlog();
  variants->push_back(MakeVariant(
      "spdlog_async",
      "spdlog async, file sink, overrun_oldest: `info(\"RDTSC {} {} {}\", tag, order_id, ticks)`",
      [logger](uint64_t id) { logger->info("RDTSC {} {} {}", "bench", id, ticktrace::ReadTsc()); },
      wait_spdlog));
  peers->pool = std::move(pool);
  peers->logger = std::move(logger);
  peers->wait_spdlog = std::move(wait_spdlog);
}
#endif

#ifdef TICKTRACE_BENCH_HAVE_LTTNG
// The LTTng-UST tracepoint twice: recorded, when a session has enabled it
// (otherwise the note says why it is missing), and compiled in but disabled.
void AddLttngVariants(uint16_t tag_id, Peers* peers, std::vector<Variant>* variants) {
  const auto nothing = [] {};
  {
    // lttng-ust registers with the session daemon in a constructor (bounded by
    // LTTNG_UST_REGISTER_TIMEOUT); give the enabled state a moment to arrive.
    const int64_t deadline = tb::MonotonicNs() + 5'000'000'000;
    while (!lttng_ust_tracepoint_enabled(ticktrace_bench, stamp) && tb::MonotonicNs() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (lttng_ust_tracepoint_enabled(ticktrace_bench, stamp)) {
    peers->lttng_note.clear();
    variants->push_back(MakeVariant(
        "lttng", "LTTng-UST tracepoint `ticktrace_bench:stamp(tag_id, order_id)`, session recording",
        [tag_id](uint64_t id) { lttng_ust_tracepoint(ticktrace_bench, stamp, tag_id, id); },
        nothing));
  } else {
    peers->lttng_note =
        "skipped: tracepoint ticktrace_bench:stamp not enabled (no LTTng session; "
        "run bench/run_all.sh, which starts one)";
  }
  variants->push_back(MakeVariant(
      "lttng_disabled", "LTTng-UST tracepoint compiled in, not enabled",
      [tag_id](uint64_t id) { lttng_ust_tracepoint(ticktrace_bench, stamp_disabled, tag_id, id); },
      nothing));
}
#endif

// When and under what load the measured rounds ran, for the header line.
struct RunTimes {
  double load_start = 0;  // the 1-minute load average as they began
  double run_s = 0;       // their wall time
};

// A warm-up round (discarded), then `rounds` measured rounds. Each round runs
// one timed batch of every variant, then one bracketed batch of every variant,
// starting one variant further each round; every batch's figures, and whether
// this thread was preempted during it, go into its variant.
RunTimes MeasureRounds(int rounds, std::vector<Variant>* variants) {
  std::vector<uint64_t> ticks(kBatch);
  uint64_t base = 1;
  for (Variant& v : *variants) {
    if (v.in_batch) v.timed(base);
    v.after();
    v.bracketed(base, ticks.data());
    v.after();
  }
  for (Variant& v : *variants) {
    v.batch_ns_per_call.reserve(static_cast<size_t>(rounds));
    v.call_ticks.reserve(static_cast<size_t>(rounds) * kBatch);
  }
  RunTimes times;
  times.load_start = [] {
    double l[3] = {0, 0, 0};
    return getloadavg(l, 3) > 0 ? l[0] : 0.0;
  }();
  const int64_t run_start = tb::MonotonicNs();
  const size_t n = variants->size();
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      Variant& v = (*variants)[(k + static_cast<size_t>(r)) % n];
      if (!v.in_batch) continue;
      base += kBatch;
      const long sw0 = InvoluntarySwitches();
      const int64_t ns = v.timed(base);
      const long sw1 = InvoluntarySwitches();
      v.batch_ns_per_call.push_back(static_cast<double>(ns) / kBatch);
      v.batch_preempted.push_back(sw1 != sw0);
      v.after();
    }
    for (size_t k = 0; k < n; ++k) {
      Variant& v = (*variants)[(k + static_cast<size_t>(r)) % n];
      base += kBatch;
      const long sw0 = InvoluntarySwitches();
      v.bracketed(base, ticks.data());
      const long sw1 = InvoluntarySwitches();
      for (uint64_t t : ticks) v.call_ticks.push_back(static_cast<double>(t));
      v.call_batch_preempted.push_back(sw1 != sw0);
      v.after();
    }
  }
  times.run_s = static_cast<double>(tb::MonotonicNs() - run_start) * 1e-9;
  return times;
}

// Two views of every figure: over all batches, and over the batches during
// which this thread was not preempted (no involuntary context switch): the
// second is the cost of the code; the first adds the other tenants' time.
struct Row {
  const Variant* v;
  tb::Summary batch_all;    // ns per call
  tb::Summary batch_clean;  // ns per call, batches not preempted
  size_t batches_preempted = 0;
  tb::Summary call_all;     // ns per call, baseline subtracted
  tb::Summary call_clean;   // same, bracketed batches not preempted
};

// `v`'s per-call samples as (ticks - baseline) * k; with `clean_only`, only
// those of the bracketed batches during which this thread was not preempted.
std::vector<double> CallNs(const Variant& v, bool clean_only, double baseline, double k) {
  std::vector<double> c;
  c.reserve(v.call_ticks.size());
  for (size_t b = 0; b < v.call_batch_preempted.size(); ++b) {
    if (clean_only && v.call_batch_preempted[b]) continue;
    for (size_t i = b * kBatch; i < (b + 1) * kBatch; ++i) {
      c.push_back((v.call_ticks[i] - baseline) * k);
    }
  }
  return c;
}

// The empty bracket in ticks, over its quiet batches: its median is what
// every per-call sample has subtracted.
struct EmptyBracket {
  double median_ticks = 0, min_ticks = 0, mean_ticks = 0;
};

EmptyBracket EmptyBracketOf(const std::vector<Variant>& variants) {
  EmptyBracket empty;
  for (const Variant& v : variants) {
    if (v.name != "empty") continue;
    std::vector<double> e = CallNs(v, true, 0, 1);
    const tb::Summary s = tb::Summarize(e);
    empty.median_ticks = s.p50;
    empty.min_ticks = s.min;
    empty.mean_ticks = s.mean;
  }
  return empty;
}

// One row per variant but the empty bracket, per-call figures in ns.
std::vector<Row> MakeRows(const std::vector<Variant>& variants, double empty_median_ticks,
                          double ns_per_tick) {
  std::vector<Row> rows;
  for (const Variant& v : variants) {
    if (v.name == "empty") continue;
    Row row{&v, {}, {}, 0, {}, {}};
    std::vector<double> all = v.batch_ns_per_call, clean;
    for (size_t b = 0; b < v.batch_ns_per_call.size(); ++b) {
      if (v.batch_preempted[b]) {
        ++row.batches_preempted;
      } else {
        clean.push_back(v.batch_ns_per_call[b]);
      }
    }
    row.batch_all = tb::Summarize(all);
    row.batch_clean = tb::Summarize(clean);
    std::vector<double> ca = CallNs(v, false, empty_median_ticks, ns_per_tick);
    std::vector<double> cc = CallNs(v, true, empty_median_ticks, ns_per_tick);
    row.call_all = tb::Summarize(ca);
    row.call_clean = tb::Summarize(cc);
    rows.push_back(row);
  }
  return rows;
}

// The row of the variant called `name`, or nullptr when it did not run.
const Row* RowOf(const std::vector<Row>& rows, const std::string& name) {
  for (const Row& r : rows) {
    if (r.v->name == name) return &r;
  }
  return nullptr;
}

// The lines above the tables: the TSC, the run, the empty bracket, and what
// "quiet" and "all" mean.
void PrintHeader(const ticktrace::Calibration& cal, int rounds, const RunTimes& times,
                 const EmptyBracket& empty) {
  std::printf("TSC %.0f Hz (%s, spread %.1f ppm); %d rounds x %d calls per variant and "
              "measurement, %.1f s, load %.2f at start\n\n",
              cal.tsc_hz, cal.source.c_str(), cal.spread_ppm, rounds, kBatch, times.run_s,
              times.load_start);
  std::printf("Empty bracket (`lfence;rdtsc;lfence` twice): median %.0f ticks (%.1f ns), "
              "min %.0f, mean %.1f — the median is subtracted from every per-call sample.\n\n",
              empty.median_ticks, empty.median_ticks * cal.ns_per_tick, empty.min_ticks,
              empty.mean_ticks);
  std::printf("\"quiet\" = the batches during which the measuring thread was not preempted "
              "(its involuntary context switch count did not change); \"all\" = every batch. "
              "Per-call columns are over the quiet bracketed batches unless marked all.\n\n");
}

// Every variant's figures, then a line for each peer that was not measured.
void PrintVariantTable(const std::vector<Row>& rows, const Row* floor_row, const Peers& peers) {
  std::printf("| variant | one call | batch mean ns, all | batch mean ns, quiet | batch median ns "
              "| preempted batches | quiet mean / floor | per-call mean ns | p50 ns | p99 ns "
              "| p99.9 ns | p99.9 ns, all |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %.2f | %.2f | %.2f | %zu of %zu | %.2f | %.1f | %.1f | %.1f | %.1f "
                "| %.1f |\n",
                r.v->name.c_str(), r.v->what.c_str(), r.batch_all.mean, r.batch_clean.mean,
                r.batch_all.p50, r.batches_preempted, r.batch_all.n,
                floor_row && floor_row->batch_clean.mean > 0
                    ? r.batch_clean.mean / floor_row->batch_clean.mean
                    : 0,
                r.call_clean.mean, r.call_clean.p50, r.call_clean.p99, r.call_clean.p999,
                r.call_all.p999);
  }
  if (!peers.spdlog_note.empty()) {
    std::printf("| spdlog_async | %s | | | | | | | | | | |\n", peers.spdlog_note.c_str());
  }
  if (!peers.lttng_note.empty()) {
    std::printf("| lttng | %s | | | | | | | | | | |\n", peers.lttng_note.c_str());
  }
  std::printf("\n");
}

// Every variant against stamp (rows only when stamp ran).
void PrintRatiosToStamp(const std::vector<Row>& rows, const Row* stamp_row) {
  std::printf("| variant | / stamp: batch means, quiet | batch means, all | batch medians "
              "| per-call means | per-call p50 | per-call p99 |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    if (r.v->name == "stamp" || stamp_row == nullptr) continue;
    const auto ratio = [](double a, double b) { return b > 0 ? Fmt("%.2f", a / b) : "n/a"; };
    std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", r.v->name.c_str(),
                ratio(r.batch_clean.mean, stamp_row->batch_clean.mean).c_str(),
                ratio(r.batch_all.mean, stamp_row->batch_all.mean).c_str(),
                ratio(r.batch_all.p50, stamp_row->batch_all.p50).c_str(),
                ratio(r.call_clean.mean, stamp_row->call_clean.mean).c_str(),
                ratio(r.call_clean.p50, stamp_row->call_clean.p50).c_str(),
                ratio(r.call_clean.p99, stamp_row->call_clean.p99).c_str());
  }
  std::printf("\n");
}

// Checks that no variant took its full-buffer path: prints what the ticktrace
// ring (`slot`) dropped and what spdlog's queue overran, and returns the
// latter (0 without spdlog).
size_t PrintDropChecks(const tb::OwnRingDrainer& drainer, const ticktrace::SlotView& slot,
                       [[maybe_unused]] const Peers& peers) {
  std::printf("- ticktrace ring: %llu records drained, %llu dropped (must be 0).\n",
              static_cast<unsigned long long>(drainer.drained()),
              static_cast<unsigned long long>(slot.dropped));
#ifdef TICKTRACE_BENCH_HAVE_SPDLOG
  peers.wait_spdlog();
  peers.logger->flush();
  struct stat st {};
  const bool have_file = stat(peers.spdlog_path.c_str(), &st) == 0;
  std::printf("- spdlog: queue %zu slots, 1 worker thread, basic_file_sink_mt writing "
              "`spdlog_async.log` in the temporary directory (%.1f MiB written), "
              "%zu messages overrun (must be 0).\n",
              kSpdlogQueue,
              have_file ? static_cast<double>(st.st_size) / (1 << 20) : 0.0,
              peers.pool->overrun_counter());
  const size_t spdlog_overruns = peers.pool->overrun_counter();
#else
  const size_t spdlog_overruns = 0;
#endif
  std::printf("\n");
  return spdlog_overruns;
}

// TARGET lines for the hot path, each over the quiet batches and over all:
// stamp's batch mean against the floor's, and stamp's per-call p99.9 against
// its p50.
void PrintHotPathTargets(const Row& floor_row, const Row& stamp_row) {
  for (const bool quiet : {true, false}) {
    const tb::Summary& f = quiet ? floor_row.batch_clean : floor_row.batch_all;
    const tb::Summary& sm = quiet ? stamp_row.batch_clean : stamp_row.batch_all;
    const double ratio = sm.mean / f.mean;
    tb::PrintTarget("hot path",
                    std::string("stamp mean / floor mean (peers_bench, interleaved batches, ") +
                        (quiet ? "quiet)" : "all)"),
                    Fmt("%.3f", ratio), "<= 1.2", ratio <= 1.2,
                    Fmt("floor %.2f ns", f.mean) + Fmt(", stamp %.2f ns", sm.mean));
  }
  for (const bool quiet : {true, false}) {
    const tb::Summary& c = quiet ? stamp_row.call_clean : stamp_row.call_all;
    const std::string fig = std::string("stamp per-call p99.9 / p50 (brackets - empty, ") +
                            (quiet ? "quiet)" : "all)");
    if (c.p50 > 0) {
      tb::PrintTarget("hot path", fig, Fmt("%.2f", c.p999 / c.p50), "<= 3",
                      c.p999 <= 3 * c.p50,
                      Fmt("p50 %.1f ns", c.p50) + Fmt(", p99 %.1f ns", c.p99) +
                          Fmt(", p99.9 %.1f ns", c.p999));
    } else {
      tb::PrintTarget("hot path", fig, "n/a", "<= 3", false,
                      Fmt("p50 %.1f ns: below one TSC step after the baseline", c.p50) +
                          Fmt(", p99.9 %.1f ns", c.p999));
    }
  }
}

// TARGET lines for LTTng's tracepoint against stamp (quiet and all), or one
// "not measured" line with the reason.
void PrintLttngTargets(const Row* lt, const Row* stamp_row, const std::string& lttng_note) {
  if (lt == nullptr || stamp_row == nullptr) {
    tb::PrintTarget("peers", "LTTng-UST tracepoint / stamp", "not measured", ">= 8x", false,
                    lttng_note);
    return;
  }
  for (const bool quiet : {true, false}) {
    const tb::Summary& l = quiet ? lt->batch_clean : lt->batch_all;
    const tb::Summary& sm = quiet ? stamp_row->batch_clean : stamp_row->batch_all;
    const double ratio = l.mean / sm.mean;
    tb::PrintTarget("peers",
                    std::string("LTTng-UST tracepoint / stamp (batch means, ") +
                        (quiet ? "quiet)" : "all)"),
                    Fmt("%.1fx", ratio), ">= 8x", ratio >= 8,
                    Fmt("lttng %.1f ns", l.mean) + Fmt(", stamp %.2f ns", sm.mean) +
                        Fmt("; batch medians %.1fx", lt->batch_all.p50 / stamp_row->batch_all.p50));
  }
}

// Removes what the run made: spdlog's file, the temporary directory when this
// run made it, and the ticktrace segment.
void CleanUp([[maybe_unused]] Peers* peers, const Options& o, bool own_tmpdir,
             tb::OwnRingDrainer* drainer) {
#ifdef TICKTRACE_BENCH_HAVE_SPDLOG
  peers->logger.reset();
  peers->pool.reset();
  unlink(peers->spdlog_path.c_str());
#endif
  if (own_tmpdir) rmdir(o.tmpdir.c_str());
  drainer->Close();
  (void)ticktrace::RemoveSegment(ticktrace::CurrentSegmentName());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  bool own_tmpdir = false;
  if (!tb::MakeTmpdirUnlessGiven("/tmp/ticktrace-peers-XXXXXX", &o.tmpdir, &own_tmpdir)) return 1;

  const std::optional<ticktrace::Calibration> cal = tb::CalibrateOrSay();
  if (!cal) return 1;
  if (!tb::InitTracing("ticktrace::Init", "peers" + std::to_string(getpid()), kRingRecords, 2)) {
    return 1;
  }
  Rings rings;
  std::vector<Variant> variants;
  const std::optional<uint16_t> tag_id = AddTicktraceVariants(&rings, &variants);
  if (!tag_id) return 1;
  Peers peers;
#ifdef TICKTRACE_BENCH_HAVE_SPDLOG
  AddSpdlogVariant(o.tmpdir, &peers, &variants);
#endif
#ifdef TICKTRACE_BENCH_HAVE_LTTNG
  AddLttngVariants(*tag_id, &peers, &variants);
#endif

  const RunTimes times = MeasureRounds(o.rounds, &variants);

  const EmptyBracket empty = EmptyBracketOf(variants);
  const std::vector<Row> rows = MakeRows(variants, empty.median_ticks, cal->ns_per_tick);
  const Row* floor_row = RowOf(rows, "floor");
  const Row* stamp_row = RowOf(rows, "stamp");
  PrintHeader(*cal, o.rounds, times, empty);
  PrintVariantTable(rows, floor_row, peers);
  PrintRatiosToStamp(rows, stamp_row);
  const ticktrace::SlotView slot = rings.drainer.Slot();
  const size_t spdlog_overruns = PrintDropChecks(rings.drainer, slot, peers);

  // Targets: each figure over the quiet batches and over all batches.
  if (floor_row && stamp_row) PrintHotPathTargets(*floor_row, *stamp_row);
  PrintLttngTargets(RowOf(rows, "lttng"), stamp_row, peers.lttng_note);

  CleanUp(&peers, o, own_tmpdir, &rings.drainer);
  return slot.dropped == 0 && spdlog_overruns == 0 ? 0 : 3;
}
