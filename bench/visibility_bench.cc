// visibility_bench: the live collector seen from outside, with the real
// ticktrace-collector binary and its SQLite store.
//
//   visibility_bench --collector PATH [--seconds 5] [--orders-per-ms 16]
//                    [--inflight 1000000] [--tmpdir DIR]
//
// 1. Visibility: a producer thread in this process runs a 4-stage pipeline
//    (md_rx, decide, order_sent, ack) at --orders-per-ms orders every 1 ms and
//    notes CLOCK_REALTIME right after each order's last stamp. Meanwhile the
//    main thread polls the store (a read-only SQLite connection; the store is
//    in WAL mode) every 2 ms for the highest order id stored. An order is
//    visible at the end of the first poll that returns an id at or above it
//    (ids grow with time; the poll's end is an upper bound, so the figure
//    includes up to one poll interval plus the query). Reported: p50, p99, max
//    of (visible - last stamp), and orders never visible within 10 s.
// 2. Memory: a producer stamps only the first stage of --inflight distinct
//    orders (the collector's order timeout set to 10 minutes, so every one of
//    them stays in flight), waits until the collector has drained them all
//    plus 2 s, and reads the collector's peak RSS (VmHWM in /proc/PID/status).
//    Target: 64 MiB + 200 bytes x orders in flight.
//
// Output: markdown + TARGET and METRIC lines (bench_util.h).

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_process.h"
#include "bench_setup.h"
#include "bench_util.h"
#include "store_poll.h"
#include "ticktrace/calibration.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace {

namespace tb = ticktrace::bench;
using tb::Fmt;
using tb::SleepUntil;
using tb::SpawnLogged;
using tb::StatusKb;
using tb::StopCollector;

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The highest order id stored in the newest run, or -1 (store not ready).
class StorePoller {
 public:
  explicit StorePoller(std::string path)
      : poll_(std::move(path),
              "SELECT max(order_id) FROM orders WHERE run_id = (SELECT max(run_id) FROM runs)") {}
  bool Ready() { return poll_.Ready(); }
  int64_t MaxOrderId() {
    int64_t v = -1;
    poll_.Poll([&](const ticktrace::store::internal::Statement& s) {
      if (!s.IsNull(0)) v = s.Int(0);
    });
    return v;
  }

 private:
  ticktrace::bench::StorePoll poll_;
};

struct VisibilityResult {
  size_t orders = 0, never_visible = 0;
  tb::Summary latency_ms;
  bool ok = false;
  std::string note;
};

VisibilityResult Visibility(const std::string& collector, const std::string& tmpdir,
                            double tsc_hz, double seconds, int orders_per_ms) {
  VisibilityResult vr;
  const std::string session = "vis" + std::to_string(getpid());
  const std::string db = tmpdir + "/visibility.db";
  ticktrace::Options options;
  options.session = session;
  options.ring_records = 1u << 20;
  options.rings = 4;
  if (ticktrace::Status st = ticktrace::Init(options); !st.ok()) {
    vr.note = std::string(st.message());
    return vr;
  }
  const pid_t coll = SpawnLogged({collector, "--session", session, "--db", db, "--tsc-hz",
                                  Fmt("%.0f", tsc_hz), "--pipeline", "md_rx,decide,order_sent,ack"},
                                 tmpdir + "/visibility-collector.log");
  StorePoller poller(db);
  // Wait for the store's schema (the collector is up).
  for (int i = 0; i < 1000 && !poller.Ready(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  const size_t total = static_cast<size_t>(seconds * 1000) * static_cast<size_t>(orders_per_ms);
  std::vector<int64_t> last_stamp_ns(total, 0);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    static const ticktrace::Tag tags[4] = {ticktrace::Tag{"md_rx"}, ticktrace::Tag{"decide"},
                                           ticktrace::Tag{"order_sent"}, ticktrace::Tag{"ack"}};
    int64_t next = tb::MonotonicNs();
    size_t i = 0;
    while (i < total) {
      for (int k = 0; k < orders_per_ms && i < total; ++k, ++i) {
        const uint64_t id = i + 1;
        for (const ticktrace::Tag& t : tags) ticktrace::stamp(t, id);
        last_stamp_ns[i] = RealtimeNs();
      }
      next += 1'000'000;
      SleepUntil(next);
    }
    done.store(true, std::memory_order_release);
  });
  // Polls: (end of poll, max id).
  std::vector<std::pair<int64_t, int64_t>> polls;
  polls.reserve(20000);
  int64_t deadline = 0;
  for (;;) {
    const int64_t id = poller.MaxOrderId();
    polls.emplace_back(RealtimeNs(), id);
    if (done.load(std::memory_order_acquire)) {
      if (deadline == 0) deadline = tb::MonotonicNs() + 10'000'000'000;
      if (id >= static_cast<int64_t>(total) || tb::MonotonicNs() > deadline) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  producer.join();
  StopCollector(coll, 20000);
  (void)ticktrace::RemoveSegment(ticktrace::CurrentSegmentName());

  std::vector<double> lat;
  lat.reserve(total);
  size_t p = 0;
  for (size_t i = 0; i < total; ++i) {
    const int64_t id = static_cast<int64_t>(i + 1);
    while (p < polls.size() && polls[p].second < id) ++p;
    if (p == polls.size()) {
      ++vr.never_visible;
      continue;
    }
    lat.push_back(static_cast<double>(polls[p].first - last_stamp_ns[i]) * 1e-6);
  }
  vr.orders = total;
  vr.latency_ms = tb::Summarize(lat);
  vr.ok = true;
  return vr;
}

struct RssResult {
  bool ok = false;
  long hwm_kb = -1, rss_kb = -1, idle_hwm_kb = -1;
  uint64_t orders = 0;
  double drain_s = 0;
  std::string note;
};

// Runs in a child process (a process has one segment, and Visibility() used
// this one's).
RssResult Memory(const std::string& collector, const std::string& tmpdir, double tsc_hz,
                 uint64_t orders) {
  RssResult rr;
  rr.orders = orders;
  const std::string session = "rss" + std::to_string(getpid());
  uint32_t ring = 1024;
  while (ring < orders + 1 && ring < ticktrace::abi::kMaxRingCapacity) ring <<= 1;
  ticktrace::Options options;
  options.session = session;
  options.ring_records = ring;
  options.rings = 2;
  if (ticktrace::Status st = ticktrace::Init(options); !st.ok()) {
    rr.note = std::string(st.message());
    return rr;
  }
  static const ticktrace::Tag first{"md_rx"};
  static const ticktrace::Tag last{"ack"};
  ticktrace::stamp(first, 0);
  tb::OwnRingDrainer view;  // only to read the slot's indices; never drains
  if (!view.Attach()) return rr;
  const pid_t coll = SpawnLogged({collector, "--session", session, "--db", tmpdir + "/memory.db",
                                  "--tsc-hz", Fmt("%.0f", tsc_hz), "--pipeline",
                                  "md_rx,decide,order_sent,ack", "--order-timeout-ms", "600000"},
                                 tmpdir + "/memory-collector.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  rr.idle_hwm_kb = StatusKb(coll, "VmHWM");
  const int64_t t0 = tb::MonotonicNs();
  for (uint64_t i = 1; i <= orders; ++i) ticktrace::stamp(first, i);
  ticktrace::SlotView v = view.Slot();
  while (v.read_index < v.write_index && tb::MonotonicNs() - t0 < 120'000'000'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    v = view.Slot();
  }
  rr.drain_s = static_cast<double>(tb::MonotonicNs() - t0) * 1e-9;
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  rr.hwm_kb = StatusKb(coll, "VmHWM");
  rr.rss_kb = StatusKb(coll, "VmRSS");
  rr.ok = v.read_index == v.write_index && rr.hwm_kb > 0;
  if (v.read_index != v.write_index) rr.note = "the collector had not drained within 120 s";
  // Not waiting for the 1 M open orders to be written out: not measured here.
  kill(coll, SIGKILL);
  waitpid(coll, nullptr, 0);
  // The killed run's store and journal go too: a collector started later on
  // the same --tmpdir would refuse the unfinished journal.
  for (const char* suffix : {"", "-wal", "-shm", ".ttjournal", ".ttcheckpoint"}) {
    unlink((tmpdir + "/memory.db" + suffix).c_str());
  }
  view.Close();
  (void)ticktrace::RemoveSegment(ticktrace::CurrentSegmentName());
  return rr;
}

// Memory()'s result as the one line the child sends to the parent:
// "ok hwm_kb rss_kb idle_hwm_kb drain_s note".
std::string RssLine(const RssResult& r) {
  return std::to_string(r.ok) + " " + std::to_string(r.hwm_kb) + " " + std::to_string(r.rss_kb) +
         " " + std::to_string(r.idle_hwm_kb) + " " + Fmt("%.3f", r.drain_s) + " " + r.note + "\n";
}

// RssLine() read back; a line that does not parse (the child failed) gives a
// result with the note "the memory run failed".
RssResult ParseRssLine(const std::string& line, uint64_t orders) {
  RssResult mem;
  mem.orders = orders;
  int ok = 0;
  char note[256] = "";
  if (std::sscanf(line.c_str(), "%d %ld %ld %ld %lf %255[^\n]", &ok, &mem.hwm_kb, &mem.rss_kb,
                  &mem.idle_hwm_kb, &mem.drain_s, note) >= 5) {
    mem.ok = ok != 0;
    mem.note = note;
  } else {
    mem.note = "the memory run failed";
  }
  return mem;
}

// Memory() in a child process (it needs a segment of its own), its result
// reported through a pipe. nullopt when the pipe cannot be made.
std::optional<RssResult> MemoryInChild(const std::string& collector, const std::string& tmpdir,
                                       double tsc_hz, uint64_t inflight) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const std::string line = RssLine(Memory(collector, tmpdir, tsc_hz, inflight));
    (void)!write(fds[1], line.data(), line.size());
    _exit(0);
  }
  close(fds[1]);
  std::string line;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) {
    line.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  waitpid(child, nullptr, 0);
  return ParseRssLine(line, inflight);
}

// The command line.
struct BenchOptions {
  std::string collector, tmpdir;
  double seconds = 5;
  int orders_per_ms = 16;
  uint64_t inflight = 1'000'000;
};

// Reads the flags into `o`. False, after printing the usage, when the
// program must exit with status 2.
bool ParseFlags(int argc, char** argv, BenchOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--collector" && has) o->collector = argv[++i];
    else if (a == "--seconds" && has) o->seconds = std::atof(argv[++i]);
    else if (a == "--orders-per-ms" && has) o->orders_per_ms = std::max(1, std::atoi(argv[++i]));
    else if (a == "--inflight" && has) o->inflight = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--tmpdir" && has) o->tmpdir = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: visibility_bench --collector PATH [--seconds S] [--orders-per-ms N] "
                   "[--inflight N] [--tmpdir DIR]\n");
      return false;
    }
  }
  return true;
}

// The markdown table: one row per measurement, or what made it fail.
void PrintTable(const BenchOptions& o, const VisibilityResult& vis, const RssResult& mem) {
  std::printf("| measurement | setting | result |\n|---|---|---|\n");
  if (vis.ok) {
    std::printf("| order visible in the store after its last stamp | %d orders/ms (%d stamps/s), "
                "%.0f s, store polled every 2 ms | p50 %.1f ms, p99 %.1f ms, max %.1f ms; "
                "%zu of %zu orders never visible within 10 s of the end |\n",
                o.orders_per_ms, o.orders_per_ms * 4000, o.seconds, vis.latency_ms.p50,
                vis.latency_ms.p99, vis.latency_ms.max, vis.never_visible, vis.orders);
  } else {
    std::printf("| order visibility | | failed: %s |\n", vis.note.c_str());
  }
  if (mem.hwm_kb > 0) {
    std::printf("| collector peak RSS (VmHWM) | %llu orders in flight (first stage only, "
                "order timeout 10 min) | %.1f MiB peak (%.1f MiB idle before; %.1f MiB now); "
                "drained in %.2f s%s%s |\n",
                static_cast<unsigned long long>(o.inflight), mem.hwm_kb / 1024.0,
                mem.idle_hwm_kb / 1024.0, mem.rss_kb / 1024.0, mem.drain_s,
                mem.note.empty() ? "" : "; ", mem.note.c_str());
  } else {
    std::printf("| collector peak RSS | | failed: %s |\n", mem.note.c_str());
  }
  std::printf("\n");
}

// The TARGET lines of the measurements that ran.
void PrintTargets(const BenchOptions& o, const VisibilityResult& vis, const RssResult& mem) {
  if (vis.ok) {
    const bool met = vis.latency_ms.p99 <= 1000 && vis.never_visible * 100 <= vis.orders;
    tb::PrintTarget("collector",
                    "order visible in the store after its last stamp, p99 (visibility_bench)",
                    Fmt("%.1f ms", vis.latency_ms.p99), "<= 1 s", met,
                    std::to_string(o.orders_per_ms) + " orders/ms; " +
                        std::to_string(vis.never_visible) + " never visible");
    tb::PrintMetric("visible_p99_ms", vis.latency_ms.p99);
    tb::PrintMetric("never_visible", static_cast<double>(vis.never_visible));
    tb::PrintMetric("visible_orders", static_cast<double>(vis.orders));
  }
  if (mem.hwm_kb > 0) {
    const double limit_kb = 64.0 * 1024 + 200.0 * static_cast<double>(o.inflight) / 1024;
    tb::PrintTarget("collector",
                    "peak RSS, " + std::to_string(o.inflight) +
                        " orders in flight (visibility_bench)",
                    Fmt("%.1f MiB", mem.hwm_kb / 1024.0),
                    Fmt("<= %.1f MiB (64 MiB + 200 B x orders)", limit_kb / 1024),
                    mem.ok && mem.hwm_kb <= limit_kb,
                    Fmt("%.0f B per order above idle",
                        (static_cast<double>(mem.hwm_kb - mem.idle_hwm_kb) * 1024) /
                            static_cast<double>(o.inflight)));
    tb::PrintMetric("bytes_per_order_in_flight", static_cast<double>(mem.hwm_kb - mem.idle_hwm_kb) *
                                                     1024 / static_cast<double>(o.inflight));
    tb::PrintMetric("rss_ok", mem.ok ? 1 : 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  if (!ticktrace::bench::CollectorFound(o.collector)) return 0;
  bool own_tmpdir = false;
  if (!ticktrace::bench::MakeTmpdirOrSubdir("/tmp/ticktrace-visibility-XXXXXX", "visibility",
                                            &o.tmpdir, &own_tmpdir)) {
    return 1;
  }
  const std::optional<ticktrace::Calibration> cal = ticktrace::bench::CalibrateOrSay();
  if (!cal) return 1;

  // Memory first, in a child (its own segment), reported through a pipe.
  const std::optional<RssResult> mem =
      MemoryInChild(o.collector, o.tmpdir, cal->tsc_hz, o.inflight);
  if (!mem) return 1;
  const VisibilityResult vis =
      Visibility(o.collector, o.tmpdir, cal->tsc_hz, o.seconds, o.orders_per_ms);
  PrintTable(o, vis, *mem);
  PrintTargets(o, vis, *mem);
  if (own_tmpdir) std::system(("rm -rf '" + o.tmpdir + "'").c_str());
  return 0;
}
