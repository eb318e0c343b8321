// collector_bench: what the collector costs, measured in one run.
//
//   1. replay of a generated raw archive (>= 10M records) with the store off:
//      records/s through decoding, validation, stitching and aggregation;
//   2. the same archive with the SQLite store on (every order, sample and
//      stamp written): records/s until the last row is committed;
//   3. a producer's mean stamp() cost without a collector and with the
//      collector binary draining it (ratio; target <= 1.2).
//
// A plain program, not a test: it measures and prints; nothing passes or fails.
//   collector_bench [--records N] [--store-records N] [--stamps N] [--rounds N]
//                   [--store-db PATH] [--replay-repeat N] [--replay-only]
// --store-db keeps the store of step 2 at PATH (a new file) for querying
// afterwards, e.g. timing ticktrace-view on a large store.

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_archive.h"
#include "collector/app/collector.h"
#include "collector/app/run_info.h"
#include "collector/stream/archive.h"
#include "collector/stream/stream.h"
#include "ticktrace/calibration.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"
#include "ticktrace/tsc.h"

namespace {

using Clock = std::chrono::steady_clock;
using ticktrace::abi::Record;
namespace tc = ticktrace::collect;

uint64_t ArgOr(int argc, char** argv, const char* name, uint64_t def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  }
  return def;
}

using ticktrace::bench::WriteArchive;

double ProcessCpuS() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct ReplayResult {
  uint64_t records = 0;
  double wall_s = 0;
  double read_s = 0;
  double cpu_s = 0;  // the process's CPU time during the replay (robust on a shared VM)
  int64_t complete = 0;
  int64_t samples = 0;
};

ReplayResult Replay(const std::string& archive, const std::string& db) {
  tc::CollectorOptions o;
  o.replay_path = archive;
  if (db.empty()) {
    o.store_uri.reset();  // "": no store
  } else {
    o.store_uri = ticktrace::store::StoreUri::LocalFile(db);
  }
  o.pipeline = {"md_rx", "decide", "order_sent"};
  o.quiet = true;
  o.handle_signals = false;
  tc::RunSummary s;
  const double cpu0 = ProcessCpuS();
  const auto t0 = Clock::now();
  absl::Status st = tc::RunCollector(o, &s);
  const auto t1 = Clock::now();
  const double cpu1 = ProcessCpuS();
  if (!st.ok()) {
    std::fprintf(stderr, "replay failed: %s\n", std::string(st.message()).c_str());
    std::exit(1);
  }
  ReplayResult r;
  r.records = s.records;
  r.wall_s = std::chrono::duration<double>(t1 - t0).count();
  r.read_s = s.elapsed_s;
  r.cpu_s = cpu1 - cpu0;
  r.complete = s.counter("orders_complete");
  r.samples = s.counter("samples");
  return r;
}

// Busy ALU work standing in for a pipeline stage's own work: a dependent
// multiply chain, no memory traffic.
inline uint64_t Work(uint64_t x, int iters) {
  for (int i = 0; i < iters; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

// Mean cost of stamp() in ns, `rounds` rounds of `n` iterations, on one thread
// whose ring is warm: a warm-up fills it once (first-touch page faults are
// paid there), and before each round the ring is emptied, by us
// (`self_consume`: no collector runs; one Commit, no polling during the
// round) or by the collector draining it. Each iteration does `work_iters`
// of Work() and one stamp; the same loop without the stamp, run right before,
// Back to back (work_iters 0): loop time per stamp. Paced: each stamp
// bracketed by TSC reads, minus empty brackets, so the figure is the stamp's
// own cost at that stamp rate. Short rounds and medians: this VM is shared,
// and a round that was preempted says nothing about stamp().
std::vector<double> StampRounds(int rounds, uint64_t n, bool self_consume, double ns_per_tick,
                                int work_iters) {
  std::vector<double> out;
  std::thread t([&] {
    static ticktrace::Tag tag("bench_stamp");
    ticktrace::stamp(tag, 0);  // attach: the slow path
    absl::StatusOr<std::unique_ptr<ticktrace::SegmentReader>> reader =
        ticktrace::SegmentReader::Open(ticktrace::CurrentSegmentName());
    if (!reader.ok()) std::exit(1);
    const uint32_t tid = static_cast<uint32_t>(gettid());
    uint32_t slot = 0;
    for (uint32_t i = 0; i < (*reader)->info().slot_count; ++i) {
      const ticktrace::SlotView v = (*reader)->Slot(i);
      if (v.tid == tid && v.state == ticktrace::abi::kSlotOwned) slot = i;
    }
    const uint64_t capacity = (*reader)->info().ring_capacity;
    for (uint64_t i = 1; i < capacity; ++i) ticktrace::stamp(tag, i);  // warm-up
    uint64_t id = capacity;
    volatile uint64_t sink = 0;
    for (int r = 0; r < rounds; ++r) {
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (true) {
        const ticktrace::SlotView v = (*reader)->Slot(slot);
        if (self_consume) {
          (*reader)->Commit(slot, v.write_index);
          break;
        }
        if (v.read_index == v.write_index || Clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      uint64_t x = static_cast<uint64_t>(r);
      double ticks;
      if (work_iters == 0) {
        // Back to back: the loop's time per stamp.
        const uint64_t t0 = ticktrace::ReadTsc();
        for (uint64_t i = 0; i < n; ++i) ticktrace::stamp(tag, ++id);
        ticks = static_cast<double>(ticktrace::ReadTsc() - t0);
      } else {
        // Paced: each stamp bracketed by two TSC reads, minus the same
        // brackets around nothing (measured in the same round).
        uint64_t empty = 0, full = 0;
        for (uint64_t i = 0; i < n; ++i) {
          x = Work(x, work_iters);
          const uint64_t t0 = ticktrace::ReadTsc();
          const uint64_t t1 = ticktrace::ReadTsc();
          empty += t1 - t0;
        }
        for (uint64_t i = 0; i < n; ++i) {
          x = Work(x, work_iters);
          const uint64_t t0 = ticktrace::ReadTsc();
          ticktrace::stamp(tag, ++id);
          const uint64_t t1 = ticktrace::ReadTsc();
          full += t1 - t0;
        }
        ticks = static_cast<double>(full) - static_cast<double>(empty);
      }
      sink = x;
      out.push_back(ticks * ns_per_tick / static_cast<double>(n));
    }
    (void)sink;
  });
  t.join();
  return out;
}

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  uint64_t records = 0;        // the archive of steps 1 and 2
  uint64_t store_records = 0;  // step 2's archive, when different
  uint64_t stamps = 0;         // per round of step 3 (at most half a ring)
  int rounds = 0;              // of step 3
  int replay_repeat = 1;       // step 1 this many times
  bool replay_only = false;    // step 1 alone
  std::optional<std::string> store_db;  // step 2's store; unset: bench.db in the work directory
  int work_iters = 0;                   // Work() per stamp in step 3's paced rounds
};

// The flags, each with its default; an argument it does not know is ignored.
Options ParseFlags(int argc, char** argv) {
  Options o;
  o.records = ArgOr(argc, argv, "--records", 10'000'000);
  o.store_records = ArgOr(argc, argv, "--store-records", o.records);
  o.stamps = ArgOr(argc, argv, "--stamps", 100000);
  o.rounds = static_cast<int>(ArgOr(argc, argv, "--rounds", 41));
  // --replay-repeat N: step 1 N times (this VM is shared: compare medians).
  o.replay_repeat = std::max<int>(1, static_cast<int>(ArgOr(argc, argv, "--replay-repeat", 1)));
  // --replay-only: step 1 alone (comparing two builds' replay side by side).
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--replay-only") == 0) o.replay_only = true;
  }
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--store-db") == 0) o.store_db = argv[i + 1];
  }
  o.work_iters = static_cast<int>(ArgOr(argc, argv, "--work-iters", 60));
  return o;
}

// Step 1: the archive replayed with the store off, `repeats` times, a line each.
void ReplayStoreOff(const std::string& archive, int repeats) {
  for (int rep = 0; rep < repeats; ++rep) {
    const ReplayResult off = Replay(archive, "");
    std::printf("replay, store off : %llu records in %.3f s wall (%.3f s reading+analysis): "
                "%.2f M records/s (%.2f M/s analysis only; %.2f M per CPU second); "
                "%lld orders complete\n",
                static_cast<unsigned long long>(off.records), off.wall_s, off.read_s,
                off.records / off.wall_s / 1e6, off.records / off.read_s / 1e6,
                off.records / off.cpu_s / 1e6, static_cast<long long>(off.complete));
    std::fflush(stdout);
  }
}

// Step 2: `archive` (or one of --store-records, written into `dir`) replayed
// into the SQLite store, every row written; a line.
void ReplayStoreOn(const Options& o, const std::string& dir, const std::string& archive) {
  std::string store_archive = archive;
  if (o.store_records != o.records) {
    store_archive = dir + "/bench_store.raw";
    WriteArchive(store_archive, o.store_records);
  }
  const std::string store_db = o.store_db.value_or(dir + "/bench.db");
  const ReplayResult on = Replay(store_archive, store_db);
  std::printf("replay, store on  : %llu records in %.3f s wall until the last row is committed: "
              "%.2f M records/s (orders, samples and stamps rows: all of them; %lld samples: "
              "%.3f M samples/s)\n",
              static_cast<unsigned long long>(on.records), on.wall_s,
              on.records / on.wall_s / 1e6, static_cast<long long>(on.samples),
              on.samples / on.wall_s / 1e6);
  std::fflush(stdout);
}

// Starts the ticktrace-collector binary that sits beside this program,
// draining `session` (a session nobody writes when BENCH_IDLE_COLLECTOR is
// set), stdout to /dev/null; given the TSC rate, it skips calibration.
pid_t StartCollector(const std::string& session, double hz) {
  const std::string collector = SelfDir() + "/ticktrace-collector";
  const std::string hz_text = std::to_string(static_cast<long long>(hz));
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    const std::string target = std::getenv("BENCH_IDLE_COLLECTOR") ? session + "_idle" : session;
    execl(collector.c_str(), collector.c_str(), "--session", target.c_str(), "--db", "",
          "--tsc-hz", hz_text.c_str(), "--pipeline", "bench_stamp", nullptr);
    _exit(127);
  }
  return pid;
}

// One of step 3's lines: the medians and their ratio, then every round.
void PrintStampCost(const char* what, const std::vector<double>& without,
                    const std::vector<double>& with, int rounds, uint64_t n) {
  const double a = Median(without), b = Median(with);
  std::printf("stamp() cost, %s: %.2f ns without a collector, %.2f ns with the collector "
              "draining (median of %d rounds of %llu): ratio %.3f\n",
              what, a, b, rounds, static_cast<unsigned long long>(n), b / a);
  std::printf("    rounds without:");
  for (double v : without) std::printf(" %.2f", v);
  std::printf("\n    rounds with:   ");
  for (double v : with) std::printf(" %.2f", v);
  std::printf("\n");
}

// Step 3: stamp()'s cost without a collector and with the collector
// draining, back to back and paced, and the collector's exit status. False
// after saying why tracing did not start.
bool MeasureStampCost(const Options& o) {
  ticktrace::Result<ticktrace::Calibration> cal = ticktrace::Calibrate();
  const double hz = cal.ok() ? cal->tsc_hz : 2e9;
  const std::string session = "bench_" + std::to_string(getpid());
  ticktrace::Options opt;
  opt.session = session;
  opt.ring_records = 1u << 20;  // a round (half a ring) never fills it: no drops
  opt.rings = 4;
  if (ticktrace::Status s = ticktrace::Init(opt); !s.ok()) {
    std::fprintf(stderr, "Init: %s\n", std::string(s.message()).c_str());
    return false;
  }
  const uint64_t n = std::min<uint64_t>(o.stamps, opt.ring_records / 2);
  // Back to back (work 0: ~90M stamps/s, more than any collector analyses),
  // and paced by ~200 ns of work per stamp (~5M stamps/s, a busy pipeline).
  const int paced_work = o.work_iters;
  const double ns_per_tick = 1e9 / hz;
  const std::vector<double> tight_without = StampRounds(o.rounds, n, true, ns_per_tick, 0);
  const std::vector<double> paced_without =
      StampRounds(o.rounds, n, true, ns_per_tick, paced_work);
  uint64_t probe = 1;
  const uint64_t w0 = ticktrace::ReadTsc();
  probe = Work(probe, paced_work * 100000);
  const double work_ns = static_cast<double>(ticktrace::ReadTsc() - w0) * ns_per_tick / 100000;

  const pid_t pid = StartCollector(session, hz);
  // Let it attach (calibration is skipped with --tsc-hz) and drain the warm-ups.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::vector<double> tight_with = StampRounds(o.rounds, n, false, ns_per_tick, 0);
  const std::vector<double> paced_with = StampRounds(o.rounds, n, false, ns_per_tick, paced_work);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  PrintStampCost("back to back", tight_without, tight_with, o.rounds, n);
  const std::string paced = "paced by " + std::to_string(static_cast<int>(work_ns)) +
                            " ns of work per stamp";
  PrintStampCost(paced.c_str(), paced_without, paced_with, o.rounds, n);
  std::printf("collector exit status %d (probe %llu)\n",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1,
              static_cast<unsigned long long>(probe & 1));
  ticktrace::RemoveSegment(ticktrace::CurrentSegmentName()).IgnoreError();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // As ticktrace-collector's main(): keep freed memory (page faults are dear on a VM).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  const Options o = ParseFlags(argc, argv);
  const std::string dir = "/tmp/collector_bench_" + std::to_string(getpid());
  std::system(("mkdir -p " + dir).c_str());

  // 1 and 2: replay.
  const std::string archive = dir + "/bench.raw";
  WriteArchive(archive, o.records);
  ReplayStoreOff(archive, o.replay_repeat);
  if (o.replay_only) {
    std::system(("rm -rf " + dir).c_str());
    return 0;
  }
  ReplayStoreOn(o, dir, archive);

  // 3: stamp cost without and with a collector draining.
  if (!MeasureStampCost(o)) return 1;
  std::system(("rm -rf " + dir).c_str());
  return 0;
}
