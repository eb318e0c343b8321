// daemon_bench: the all-day collector against its targets (the TARGET lines), with the real
// ticktrace-collector binary, its default SQLite store and its journal.
//
//   daemon_bench --collector PATH [--seconds 60] [--rate 1000000]
//                [--restart-rate 500000] [--restart-minutes 1,2,4|none] [--tmpdir DIR]
//                [--detail all|tail|none] [--ring-records N] [--skip-sustained]
//                [--collector-arg ARG]... [--otlp-sink]
//
// --detail is handed to the collector (left out: its default, all), and so
// is each --collector-arg, after the bench's own flags (--budget ..., to
// measure what a feature costs against a run without it); --otlp-sink
// starts a loopback OTLP/HTTP receiver on a thread of this program (its CPU
// is not the collector's) and hands the collector --otlp-endpoint to it;
// --ring-records sizes every producer ring (a power of two, default 1 Mi);
// --restart-minutes none skips phase 2 and --skip-sustained phase 1, so that
// bench/run_all.sh runs each phase with the settings its target names.
//
// Producers: 2 processes this program forks (no exec), 2 threads each, every
// thread with its own ring of --ring-records records. A thread stamps whole orders of 4
// stages (md_rx, decide, order_sent, ack; ids distinct per thread), paced to
// its share of the rate: every 1 ms it stamps the orders that are due since
// its start (a thread woken late catches up in one burst, so the average rate
// is exact and the rings absorb the burst). Each producer publishes what it
// has written, and (a monitor thread, every 10 ms, reading its own segment)
// its rings' read indices and drop counts, in a shared anonymous mapping the
// driver reads; the driver itself is single-threaded.
//
// 1. Sustained live: --rate records/s for --seconds. Every 200 ms the driver
//    reads the store (read-only SQLite; WAL) for the counters drained,
//    dropped and journal_syncs, stats <db>.ttjournal (st_blocks x 512) and
//    reads the collector's VmRSS. Lag of the store = poll time minus the time
//    the producers had written what the store's `drained` says (linear
//    between the driver's 200 ms samples of the producers' counts). CPU =
//    utime + stime of the collector over the producing phase. After the
//    producers stop: wait until the rings are empty and the store's
//    `drained` reaches what was written, 3 s more (order timeout 1 s), then
//    SIGINT, and read the final counters and COUNT(*) of the run's orders.
// 2. Restart: --restart-rate records/s for L minutes (each of
//    --restart-minutes), SIGKILL, restart with the same arguments, then 10 s
//    more. Measured from the restarted process's fork: the line "recovered in
//    S s" it prints, the first move of the rings' read indices (it drains
//    again), and the first poll (every 20 ms) whose store `drained` is past the
//    last value polled before the kill. Drops: the store's `dropped` and the
//    rings' own drop counters at the end (must be 0).
// 3. The machine, once.
//
// Output: markdown + TARGET lines (bench_util.h), like the other benches.
// Cleans up its children, segments and files on every path it returns by.
//
// --store clickhouse: phase 1 only, into ClickHouse instead of
// SQLite: a clickhouse-server of its own (tests/support/clickhouse_server.h,
// as store_write_bench starts it), the collector given --store
// clickhouse://127.0.0.1:PORT/daemon and run in the temporary directory (its
// journal is a local file there), the store's counters read over HTTP
// (each counter's newest committed version). Prints the same
// figures and TARGET lines marked "ClickHouse"; "skipped: <reason>" when the
// server is not installed. The server shares the machine's cores.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench_process.h"
#include "otlp_sink.h"
#include "bench_setup.h"
#include "bench_util.h"
#include "store_poll.h"
#include "store/clickhouse/http_client.h"
#include "ticktrace/store/open.h"
#include "tests/support/clickhouse_server.h"
#include "ticktrace/calibration.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace {

namespace tb = ticktrace::bench;

// One number printed with a printf format whose text may be long (bench_util's
// Fmt has 64 bytes).
std::string Fmt(const char* format, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
using tb::MonotonicNs;
using tb::SleepUntil;
using tb::CpuTicks;
using tb::DieWithParent;
using tb::SpawnLogged;
using tb::StatusKb;
using tb::StopCollector;
using tb::WaitFor;

constexpr int kProcesses = 2;
constexpr int kThreadsPerProcess = 2;
constexpr int kThreads = kProcesses * kThreadsPerProcess;
// --ring-records; set before the producers fork.
uint32_t g_ring_records = 1u << 20;
// --detail: the collector's order detail policy; empty: its default.
std::string g_detail;
std::vector<std::string> g_collector_args;  // --collector-arg, each
constexpr const char* kPipeline = "md_rx,decide,order_sent,ack";

// ---------------------------------------------------------------------------
// Shared between the driver and the producer processes (MAP_SHARED anonymous,
// mapped before the fork). Producers write their own entries; the driver
// reads. Release stores pair with the acquire loads of the other side.
// ---------------------------------------------------------------------------
struct alignas(64) ThreadCounters {
  std::atomic<uint64_t> written{0};  // records stamped (release: after the stamps)
};
struct alignas(64) ProcessCounters {
  std::atomic<uint64_t> read_total{0};  // sum of the rings' read indices (monitor)
  std::atomic<uint64_t> write_total{0};  // sum of the rings' write indices (monitor)
  std::atomic<uint64_t> dropped{0};      // sum of the rings' drop counters (monitor)
  std::atomic<int> failed{0};            // Init or the segment reader failed
};
struct Shared {
  std::atomic<int64_t> go_ns{0};   // CLOCK_MONOTONIC start of stamping; 0: not yet
  std::atomic<int> stop{0};        // 1: stop stamping; 2: exit
  std::atomic<int> ready{0};       // producers with their segment made
  double records_per_thread_s = 0; // set before the fork
  ThreadCounters thread[kThreads];
  ProcessCounters process[kProcesses];
};

// One producer process (a fork child): kThreadsPerProcess paced threads and a
// monitor. Never returns.
[[noreturn]] void ProducerMain(Shared* sh, int index, const std::string& session) {
  ticktrace::Options options;
  options.session = session;
  options.ring_records = g_ring_records;
  options.rings = kThreadsPerProcess;
  ProcessCounters& pc = sh->process[index];
  if (ticktrace::Status st = ticktrace::Init(options); !st.ok()) {
    std::fprintf(stderr, "producer %d: Init: %s\n", index, std::string(st.message()).c_str());
    pc.failed.store(1, std::memory_order_release);
    sh->ready.fetch_add(1, std::memory_order_acq_rel);
    _exit(1);
  }
  sh->ready.fetch_add(1, std::memory_order_acq_rel);
  while (sh->go_ns.load(std::memory_order_acquire) == 0) {
    if (sh->stop.load(std::memory_order_acquire) != 0) _exit(0);
    usleep(1000);
  }
  const int64_t go = sh->go_ns.load(std::memory_order_acquire);
  const double orders_per_ns = sh->records_per_thread_s / 4.0 * 1e-9;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreadsPerProcess; ++t) {
    threads.emplace_back([sh, index, t, go, orders_per_ns] {
      static const ticktrace::Tag tags[4] = {ticktrace::Tag{"md_rx"}, ticktrace::Tag{"decide"},
                                             ticktrace::Tag{"order_sent"}, ticktrace::Tag{"ack"}};
      const int slot = index * kThreadsPerProcess + t;
      const uint64_t id_base = static_cast<uint64_t>(slot + 1) << 40;
      ThreadCounters& tc = sh->thread[slot];
      uint64_t orders = 0;
      SleepUntil(go);
      int64_t next = go;
      while (sh->stop.load(std::memory_order_acquire) == 0) {
        const int64_t now = MonotonicNs();
        const auto due = static_cast<uint64_t>(static_cast<double>(now - go) * orders_per_ns);
        for (; orders < due; ++orders) {
          for (const ticktrace::Tag& tag : tags) ticktrace::stamp(tag, id_base + orders + 1);
        }
        tc.written.store(orders * 4, std::memory_order_release);  // pairs with the driver's load
        next += 1'000'000;
        if (next < now) next = now + 1'000'000;
        SleepUntil(next);
      }
    });
  }
  // Monitor: this process's rings as the collector leaves them.
  std::unique_ptr<ticktrace::SegmentReader> reader;
  for (int i = 0; i < 200 && reader == nullptr; ++i) {
    const std::string name = ticktrace::CurrentSegmentName();
    if (!name.empty()) {
      absl::StatusOr<std::unique_ptr<ticktrace::SegmentReader>> r =
          ticktrace::SegmentReader::Open(name);
      if (r.ok()) reader = *std::move(r);
    }
    if (reader == nullptr) usleep(10'000);
  }
  if (reader == nullptr) pc.failed.store(1, std::memory_order_release);
  while (sh->stop.load(std::memory_order_acquire) < 2) {
    if (reader != nullptr) {
      uint64_t rd = 0, wr = 0, dr = 0;
      for (uint32_t i = 0; i < reader->info().slot_count; ++i) {
        // Every slot: a thread that stopped stamping releases its slot, and
        // its indices still say what the collector has taken.
        const ticktrace::SlotView v = reader->Slot(i);
        rd += v.read_index;
        wr += v.write_index;
        dr += v.dropped;
      }
      pc.write_total.store(wr, std::memory_order_relaxed);
      pc.dropped.store(dr, std::memory_order_relaxed);
      pc.read_total.store(rd, std::memory_order_release);  // pairs with the driver's load
    }
    usleep(10'000);
  }
  for (std::thread& th : threads) th.join();
  reader.reset();
  // The segment stays for the collector (it drains an exited process to the
  // end and removes the segment); the driver removes what is left.
  _exit(0);
}

// ---------------------------------------------------------------------------
// Driver helpers
// ---------------------------------------------------------------------------

// What a signal that stops the bench (run_all.sh's timeout sends SIGTERM)
// must not leave behind: the producers' segments. Children need no list:
// each is made with PR_SET_PDEATHSIG, so it is killed when the bench dies.
// Written by the driver's only thread; read by the handler.
char g_segments[kProcesses][128];

void OnStopSignal(int sig) {
  for (const char* name : g_segments) {
    if (name[0] != '\0') shm_unlink(name);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// Progress on stderr (run_all.sh keeps it in daemon_bench.err), with the
// seconds since the bench started.
void Progress(const std::string& what) {
  static const int64_t t0 = MonotonicNs();
  std::fprintf(stderr, "[%7.1f s] %s\n", static_cast<double>(MonotonicNs() - t0) * 1e-9,
               what.c_str());
}

uint64_t Written(const Shared* sh) {
  uint64_t w = 0;
  for (const ThreadCounters& t : sh->thread) w += t.written.load(std::memory_order_acquire);
  return w;
}
uint64_t ReadTotal(const Shared* sh) {
  uint64_t r = 0;
  for (const ProcessCounters& p : sh->process) r += p.read_total.load(std::memory_order_acquire);
  return r;
}
uint64_t Undrained(const Shared* sh) {
  uint64_t u = 0;
  for (const ProcessCounters& p : sh->process) {
    const uint64_t rd = p.read_total.load(std::memory_order_acquire);
    const uint64_t wr = p.write_total.load(std::memory_order_relaxed);
    u += wr > rd ? wr - rd : 0;
  }
  return u;
}
uint64_t RingDropped(const Shared* sh) {
  uint64_t d = 0;
  for (const ProcessCounters& p : sh->process) d += p.dropped.load(std::memory_order_relaxed);
  return d;
}

// The collector's working directory (--store clickhouse: where its journal
// goes); empty: this program's.
std::string g_collector_cwd;

pid_t SpawnCollector(const std::vector<std::string>& argv, const std::string& log) {
  return SpawnLogged(argv, log, g_collector_cwd);
}

int64_t DiskBytes(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_blocks) * 512;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `db` as the collector is given it: a path (SQLite) or a URI. The bench's
// own stores are well-formed; a bad one is a bug here, so it aborts.
ticktrace::store::StoreUri UriOf(const std::string& db) {
  absl::StatusOr<ticktrace::store::StoreUri> uri = ticktrace::store::ParseStoreUri(db);
  if (!uri.ok()) {
    std::fprintf(stderr, "daemon_bench: %s\n", uri.status().ToString().c_str());
    std::abort();
  }
  return *uri;
}
bool IsLocalFile(const std::string& db) { return UriOf(db).local_file().has_value(); }

// The store's counters of its newest run, read-only (the collector writes in
// WAL mode, so a reader never blocks it).
// A clickhouse:// store (--store clickhouse) is read over HTTP: the newest
// run's committed counters (FINAL), and its orders' count.
class CounterReader {
 public:
  explicit CounterReader(std::string path)
      : path_(std::move(path)),
        sqlite_(path_,
                "SELECT name, value FROM counters WHERE run_id = (SELECT max(run_id) FROM runs)") {
    const ticktrace::store::StoreUri uri = UriOf(path_);
    if (!uri.local_file().has_value()) {
      ch_database_ = uri.database;
      ch_ = std::make_unique<ticktrace::store::HttpClient>(
          ticktrace::store::HttpClientOptions::FromEnvironment(uri.host, uri.port));
    }
  }
  ~CounterReader() { Close(); }
  void Close() { sqlite_.Close(); }
  // False while the store or its schema does not exist yet.
  bool Read(std::map<std::string, int64_t>* out) {
    out->clear();
    if (ch_ != nullptr) return ReadClickHouse(out);
    return sqlite_.Poll([&](const ticktrace::store::internal::Statement& s) {
      if (!s.IsNull(0)) (*out)[s.Text(0)] = s.Int(1);
    });
  }
  // COUNT(*) of the newest run's orders, or -1.
  int64_t Orders() {
    if (ch_ != nullptr) {
      absl::StatusOr<std::string> n = ch_->Query(
          "SELECT count() FROM orders WHERE run_id = (SELECT max(run_id) FROM runs)",
          ch_database_);
      int64_t v = -1;
      if (!n.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*n), &v)) return -1;
      return v;
    }
    return sqlite_
        .QueryInt("SELECT COUNT(*) FROM orders WHERE run_id = (SELECT max(run_id) FROM runs)")
        .value_or(-1);
  }

 private:
  bool ReadClickHouse(std::map<std::string, int64_t>* out) {
    absl::StatusOr<std::string> rows = ch_->Query(
        "SELECT name, argMax(value, version) FROM counters WHERE run_id = (SELECT max(run_id) "
        "FROM runs) AND version IN (SELECT batch FROM batches) GROUP BY name FORMAT TabSeparated",
        ch_database_);
    if (!rows.ok()) return false;
    for (absl::string_view line : absl::StrSplit(*rows, '\n', absl::SkipEmpty())) {
      std::vector<std::string> f = absl::StrSplit(line, '\t');
      int64_t v = 0;
      if (f.size() == 2 && absl::SimpleAtoi(f[1], &v)) (*out)[f[0]] = v;
    }
    return !out->empty();
  }
  std::string path_;
  ticktrace::bench::StorePoll sqlite_;
  std::unique_ptr<ticktrace::store::HttpClient> ch_;
  std::string ch_database_;
};

int64_t Get(const std::map<std::string, int64_t>& m, const char* name) {
  const auto it = m.find(name);
  return it == m.end() ? -1 : it->second;
}

void RemoveSessionSegments(const std::string& session) {
  absl::StatusOr<std::vector<ticktrace::SegmentId>> segs = ticktrace::ListSegments(session);
  if (!segs.ok()) return;
  for (const ticktrace::SegmentId& s : *segs) (void)ticktrace::RemoveSegment(s.name);
}

// The journal of the collector's store `db` in session `session` (a
// clickhouse:// store's is a local file in the collector's directory).
std::string JournalOf(const std::string& db, const std::string& session) {
  const ticktrace::store::StoreUri uri = UriOf(db);
  if (uri.local_file().has_value()) return *uri.local_file() + ".ttjournal";
  return g_collector_cwd + "/" + ticktrace::store::LocalStatePath(uri, session) + ".ttjournal";
}

void RemoveStoreFiles(const std::string& db) {
  if (!IsLocalFile(db)) return;  // JournalOf's files: RemoveLocalState
  for (const char* suffix : {"", "-wal", "-shm", ".ttjournal", ".ttcheckpoint"}) {
    unlink((db + suffix).c_str());
  }
}

void RemoveLocalState(const std::string& db, const std::string& session) {
  if (IsLocalFile(db)) return;
  std::string journal = JournalOf(db, session);
  unlink(journal.c_str());
  journal.resize(journal.size() - std::strlen(".ttjournal"));
  unlink((journal + ".ttcheckpoint").c_str());
}

// Producers of one phase: the shared mapping and the two forked processes.
class Producers {
 public:
  Producers(std::string session, double records_per_s) : session_(std::move(session)) {
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) return;
    sh_ = new (p) Shared();
    sh_->records_per_thread_s = records_per_s / kThreads;
    const pid_t parent = getpid();
    for (int i = 0; i < kProcesses; ++i) {
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid == 0) {
        DieWithParent(parent);
        ProducerMain(sh_, i, session_);
      }
      if (pid > 0) {
        pids_.push_back(pid);
        std::snprintf(g_segments[i], sizeof g_segments[i], "/%s",
                      ticktrace::SegmentName(session_, static_cast<uint32_t>(pid)).c_str());
      }
    }
  }
  ~Producers() { Finish(); }
  Producers(const Producers&) = delete;
  Producers& operator=(const Producers&) = delete;

  // True once both processes made their segments.
  bool WaitReady() {
    if (sh_ == nullptr || pids_.size() != kProcesses) return false;
    for (int i = 0; i < 500 && sh_->ready.load(std::memory_order_acquire) < kProcesses; ++i) {
      usleep(10'000);
    }
    for (const ProcessCounters& p : sh_->process) {
      if (p.failed.load(std::memory_order_acquire) != 0) return false;
    }
    return sh_->ready.load(std::memory_order_acquire) == kProcesses;
  }
  int64_t Go() {
    const int64_t go = MonotonicNs() + 20'000'000;
    sh_->go_ns.store(go, std::memory_order_release);  // pairs with the producers' acquire
    return go;
  }
  void StopStamping() {
    if (sh_ != nullptr && sh_->stop.load() == 0) sh_->stop.store(1, std::memory_order_release);
  }
  // Waits until the rings are empty (the monitors' view), up to `timeout_ms`.
  bool WaitRingsEmpty(int timeout_ms) {
    const int64_t deadline = MonotonicNs() + int64_t{timeout_ms} * 1'000'000;
    while (MonotonicNs() < deadline) {
      usleep(30'000);  // at least one monitor period past the last stamp
      // A dropped record never took a ring index.
      if (Undrained(sh_) == 0 && ReadTotal(sh_) + RingDropped(sh_) >= Written(sh_)) return true;
    }
    return false;
  }
  void Finish() {
    if (sh_ == nullptr) return;
    sh_->stop.store(2, std::memory_order_release);
    for (const pid_t pid : pids_) {
      if (WaitFor(pid, 5000) == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
    pids_.clear();
    for (char* name : g_segments) name[0] = '\0';  // the phase removes them itself
    munmap(sh_, sizeof(Shared));
    sh_ = nullptr;
  }
  const Shared* shared() const { return sh_; }

 private:
  std::string session_;
  Shared* sh_ = nullptr;
  std::vector<pid_t> pids_;
};

// (time since go in s, records written by then), increasing: the store's lag.
struct WrittenHistory {
  std::vector<std::pair<double, uint64_t>> points;
  // When the producers had written `n` records (linear between samples); a
  // value not written yet gives `now_s`.
  double TimeOf(uint64_t n, double now_s) const {
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].second < n) continue;
      if (i == 0) return points[0].first;
      const auto [t0, w0] = points[i - 1];
      const auto [t1, w1] = points[i];
      return t0 + (t1 - t0) * static_cast<double>(n - w0) / static_cast<double>(w1 - w0);
    }
    return now_s;
  }
};

std::vector<std::string> CollectorArgs(const std::string& collector, const std::string& session,
                                       const std::string& db, double tsc_hz) {
  std::vector<std::string> args = {collector,
                                   "--session",
                                   session,
                                   IsLocalFile(db) ? "--db" : "--store",
                                   db,
                                   "--tsc-hz",
                                   Fmt("%.0f", tsc_hz),
                                   "--pipeline",
                                   kPipeline};
  if (!g_detail.empty()) {
    args.push_back("--detail");
    args.push_back(g_detail);
  }
  args.insert(args.end(), g_collector_args.begin(), g_collector_args.end());
  return args;
}

// ", collector flags: --budget ..." when --collector-arg was given, else "".
std::string CollectorArgsShown() {
  std::string out;
  for (const std::string& a : g_collector_args) out += (out.empty() ? ", collector flags: " : " ") + a;
  return out;
}

// Waits (up to 10 s) for the store's counters to be readable: the collector is up.
bool WaitStore(CounterReader* reader) {
  std::map<std::string, int64_t> c;
  for (int i = 0; i < 1000; ++i) {
    if (reader->Read(&c)) return true;
    usleep(10'000);
  }
  return false;
}

// Once the collector stopped: its final counters handed to `fill` (with the
// reader, for more queries), or a note when the store cannot be read; and a
// note when the collector had to be killed. True when `fill` ran.
template <typename Fill>
bool ReadFinalCounters(const std::string& db, int exit_status, std::string* note, Fill fill) {
  CounterReader final_reader(db);
  std::map<std::string, int64_t> c;
  const bool read = final_reader.Read(&c);
  if (read) {
    fill(c, final_reader);
  } else {
    *note += "final counters unreadable; ";
  }
  final_reader.Close();
  if (exit_status == -1) *note += "collector did not exit within 180 s of SIGINT (killed); ";
  return read;
}

// After the producers stopped: rings empty, the store's `drained` at
// `written`, then 3 s for the order timeout. Returns a note when not reached.
std::string SettleAndStop(Producers* producers, CounterReader* reader, pid_t coll,
                          uint64_t written, int* exit_status) {
  std::string note;
  Progress("producers stopped; waiting for the rings to empty");
  if (!producers->WaitRingsEmpty(60'000)) note = "rings not empty 60 s after the end; ";
  // Every record written is in the store as drained or as dropped.
  std::map<std::string, int64_t> c;
  auto accounted = [&c] { return Get(c, "drained") + std::max<int64_t>(0, Get(c, "dropped")); };
  const int64_t t0 = MonotonicNs();
  while (MonotonicNs() - t0 < 60'000'000'000) {
    if (reader->Read(&c) && accounted() >= static_cast<int64_t>(written)) break;
    usleep(100'000);
  }
  if (accounted() < static_cast<int64_t>(written)) {
    note += "store drained + dropped " + std::to_string(accounted()) + " < written " +
            std::to_string(written) + " 60 s after the end; ";
  }
  Progress("store drained " + std::to_string(Get(c, "drained")) + ", dropped " +
           std::to_string(Get(c, "dropped")) + " of " + std::to_string(written) +
           "; order timeout, then SIGINT");
  usleep(3'000'000);
  reader->Close();  // no reader while it closes the run
  *exit_status = StopCollector(coll, 180'000);
  Progress("collector exited");
  return note;
}

// ---------------------------------------------------------------------------
// 1. Sustained live
// ---------------------------------------------------------------------------

struct SustainedResult {
  bool ok = false;
  std::string note;
  double seconds = 0, rate = 0, achieved_rate = 0;
  uint64_t written = 0, ring_dropped = 0;
  int64_t dropped = -1, drained = -1, orders_complete = -1, orders_stored = -1,
          orders_not_stored = -1, journal_syncs = -1, orders_incomplete = -1;
  double max_lag_s = 0, lag_at_end_s = 0, max_accounted_lag_s = 0;
  double cpu_cores = 0;
  long rss_early_kb = -1, rss_end_kb = -1;
  double rss_early_s = 0;
  int64_t journal_max_bytes = 0;
  double syncs_per_s = 0, syncs_max_window = 0;
  double collector_exit_s = 0, run_s = 0;
  int64_t drained_at_end = -1;  // the store's `drained` at the last poll of the run
  int exit_status = 0;
};

// (seconds since go, journal_syncs) at each change of the store's counter.
using SyncPoints = std::vector<std::pair<double, int64_t>>;

// The producing phase of Sustained(): every 200 ms until `seconds` after
// `go`, notes what the producers have written, the journal's size on disk,
// the collector's RSS once a third of the run has passed, how far the store's
// counters are behind the producers, and each change of journal_syncs.
// Returns the store's `drained` as the last poll read it (-1: unreadable).
int64_t PollWhileProducing(const Shared* sh, pid_t coll, CounterReader* reader,
                           const std::string& journal, int64_t go, double seconds,
                           SustainedResult* r, SyncPoints* syncs) {
  WrittenHistory hist;
  const double early_s = seconds / 3;
  std::map<std::string, int64_t> c;
  int64_t next = go;
  const int64_t end = go + static_cast<int64_t>(seconds * 1e9);
  while (next < end) {
    next += 200'000'000;
    SleepUntil(std::min(next, end));
    const double t = static_cast<double>(MonotonicNs() - go) * 1e-9;
    hist.points.emplace_back(t, Written(sh));
    r->journal_max_bytes = std::max(r->journal_max_bytes, DiskBytes(journal));
    if (r->rss_early_kb < 0 && t >= early_s) {
      r->rss_early_kb = StatusKb(coll, "VmRSS");
      r->rss_early_s = t;
    }
    if (reader->Read(&c)) {
      const double tq = static_cast<double>(MonotonicNs() - go) * 1e-9;
      const int64_t drained = Get(c, "drained");
      const double lag = drained < 0 ? tq : tq - hist.TimeOf(static_cast<uint64_t>(drained), tq);
      r->max_lag_s = std::max(r->max_lag_s, lag);
      r->lag_at_end_s = lag;
      // The same with what the store counts as dropped: how far its
      // accounting is behind, apart from records lost.
      const int64_t accounted = drained + std::max<int64_t>(0, Get(c, "dropped"));
      r->max_accounted_lag_s = std::max(
          r->max_accounted_lag_s,
          drained < 0 ? tq : tq - hist.TimeOf(static_cast<uint64_t>(accounted), tq));
      const int64_t js = Get(c, "journal_syncs");
      if (js >= 0 && (syncs->empty() || syncs->back().second != js)) syncs->emplace_back(tq, js);
    }
  }
  return Get(c, "drained");
}

// journal_syncs per second from `syncs`: over the whole run, and the most
// over any window of at least 1 s. Left at 0 with fewer than two points.
void JournalSyncRates(const SyncPoints& syncs, SustainedResult* r) {
  if (syncs.size() < 2) return;
  r->syncs_per_s = static_cast<double>(syncs.back().second - syncs.front().second) /
                   (syncs.back().first - syncs.front().first);
  // Over windows of at least 1 s between the points where the counter moved
  // (the store's snapshot is about 1 s old, so windows are poll-aligned).
  for (size_t k = 1; k < syncs.size(); ++k) {
    size_t j = k;
    while (j > 0 && syncs[k].first - syncs[j].first < 1.0) --j;
    if (syncs[k].first - syncs[j].first < 1.0) continue;
    r->syncs_max_window = std::max(
        r->syncs_max_window, static_cast<double>(syncs[k].second - syncs[j].second) /
                                 (syncs[k].first - syncs[j].first));
  }
}

// `store`: a clickhouse:// URI (--store clickhouse); empty: SQLite in tmpdir.
SustainedResult Sustained(const std::string& collector, const std::string& tmpdir, double tsc_hz,
                          double seconds, double rate, const std::string& store = "") {
  SustainedResult r;
  r.seconds = seconds;
  r.rate = rate;
  const std::string session = "dmn" + std::to_string(getpid()) + "s";
  const std::string db = store.empty() ? tmpdir + "/daemon-sustained.db" : store;
  RemoveStoreFiles(db);
  Producers producers(session, rate);
  if (!producers.WaitReady()) {
    r.note = "producers did not start";
    RemoveSessionSegments(session);
    return r;
  }
  const pid_t coll = SpawnCollector(CollectorArgs(collector, session, db, tsc_hz),
                                    tmpdir + "/daemon-sustained.log");
  CounterReader reader(db);
  if (!WaitStore(&reader)) {
    r.note = "the collector's store did not appear within 10 s: " +
             ReadFile(tmpdir + "/daemon-sustained.log").substr(0, 300);
    StopCollector(coll, 5000);
    producers.Finish();
    RemoveSessionSegments(session);
    RemoveStoreFiles(db);
    return r;
  }
  const Shared* sh = producers.shared();
  const int64_t go = producers.Go();
  Progress("sustained: producing");
  SleepUntil(go);
  const long long cpu0 = CpuTicks(coll);
  SyncPoints syncs;
  r.drained_at_end =
      PollWhileProducing(sh, coll, &reader, JournalOf(db, session), go, seconds, &r, &syncs);
  const double run_s = static_cast<double>(MonotonicNs() - go) * 1e-9;
  r.run_s = run_s;
  const long long cpu1 = CpuTicks(coll);
  r.rss_end_kb = StatusKb(coll, "VmRSS");
  producers.StopStamping();
  usleep(20'000);
  r.written = Written(sh);
  r.achieved_rate = static_cast<double>(r.written) / run_s;
  r.cpu_cores = static_cast<double>(cpu1 - cpu0) / static_cast<double>(sysconf(_SC_CLK_TCK)) /
                run_s;
  JournalSyncRates(syncs, &r);
  const int64_t t_stop = MonotonicNs();
  r.note += SettleAndStop(&producers, &reader, coll, r.written, &r.exit_status);
  r.collector_exit_s = static_cast<double>(MonotonicNs() - t_stop) * 1e-9;
  r.ring_dropped = RingDropped(sh);
  producers.Finish();
  r.ok = ReadFinalCounters(db, r.exit_status, &r.note,
                           [&r](const auto& c, CounterReader& final_reader) {
                             r.dropped = Get(c, "dropped");
                             r.drained = Get(c, "drained");
                             r.orders_complete = Get(c, "orders_complete");
                             r.orders_incomplete = Get(c, "orders_incomplete");
                             r.orders_not_stored = Get(c, "orders_not_stored");
                             r.journal_syncs = Get(c, "journal_syncs");
                             r.orders_stored = final_reader.Orders();
                           });
  RemoveSessionSegments(session);
  RemoveStoreFiles(db);
  RemoveLocalState(db, session);
  unlink((tmpdir + "/daemon-sustained.log").c_str());
  return r;
}

// ---------------------------------------------------------------------------
// 2. Restart
// ---------------------------------------------------------------------------

struct RestartResult {
  bool ok = false;
  std::string note;
  double minutes = 0, rate = 0;
  double recovered_line_s = -1;   // "recovered in S s" as printed
  double first_line_s = -1;       // fork until that line appeared in the log
  double rings_move_s = -1;       // fork until the rings' read indices moved
  double store_past_s = -1;       // fork until the store's drained passed the pre-kill value
  std::string recovered_text;
  int64_t prekill_drained = -1;
  uint64_t written = 0, ring_dropped = 0;
  uint64_t ring_dropped_at_kill = 0;  // the rings' drop counters just before the SIGKILL
  int64_t dropped = -1, orders_complete = -1, restarts = -1, duplicates = -1;
  int64_t journal_at_kill = 0;
  int exit_status = 0;
};

// After the restarted collector's fork at `t_fork`: every 20 ms, for up to
// 60 s, looks for the three signs that it is back (its "recovered in" line in
// `log`, the rings' read indices past `read_at_kill`, the store's `drained`
// past the value polled before the kill) and notes in `r` when each appeared.
// False when the restarted collector exited meanwhile.
bool WatchRecovery(const Shared* sh, pid_t coll, const std::string& log, uint64_t read_at_kill,
                   int64_t t_fork, CounterReader* reader, RestartResult* r) {
  std::map<std::string, int64_t> c;
  const int64_t give_up = t_fork + 60'000'000'000;
  while (MonotonicNs() < give_up &&
         (r->first_line_s < 0 || r->rings_move_s < 0 || r->store_past_s < 0)) {
    const double t = static_cast<double>(MonotonicNs() - t_fork) * 1e-9;
    if (r->rings_move_s < 0 && ReadTotal(sh) > read_at_kill) r->rings_move_s = t;
    if (r->first_line_s < 0) {
      const std::string text = ReadFile(log);
      const size_t p = text.find("recovered in ");
      if (p != std::string::npos && text.find('\n', p) != std::string::npos) {
        r->first_line_s = t;
        r->recovered_text = text.substr(p, text.find('\n', p) - p);
        r->recovered_line_s = std::atof(text.c_str() + p + std::strlen("recovered in "));
      }
    }
    if (r->store_past_s < 0 && reader->Read(&c) && Get(c, "drained") > r->prekill_drained) {
      r->store_past_s = t;
    }
    if (WaitFor(coll, 0) != -1) return false;
    usleep(20'000);
  }
  return true;
}

// Until `kill_at`: the store's `drained` every 200 ms, the last value read
// kept in r->prekill_drained (what the restarted collector must get past).
void PollUntilKill(CounterReader* reader, int64_t kill_at, RestartResult* r) {
  std::map<std::string, int64_t> c;
  while (MonotonicNs() < kill_at) {
    SleepUntil(std::min(MonotonicNs() + 200'000'000, kill_at));
    if (reader->Read(&c)) r->prekill_drained = Get(c, "drained");
  }
}

RestartResult Restart(const std::string& collector, const std::string& tmpdir, double tsc_hz,
                      double minutes, double rate, int index) {
  RestartResult r;
  r.minutes = minutes;
  r.rate = rate;
  const std::string session = "dmn" + std::to_string(getpid()) + "r" + std::to_string(index);
  const std::string db = tmpdir + "/daemon-restart-" + std::to_string(index) + ".db";
  const std::string log = tmpdir + "/daemon-restart-" + std::to_string(index) + ".log";
  RemoveStoreFiles(db);
  unlink(log.c_str());
  Producers producers(session, rate);
  auto fail = [&](const std::string& why, pid_t coll) {
    r.note = why;
    if (coll > 0) StopCollector(coll, 5000);
    producers.Finish();
    RemoveSessionSegments(session);
    RemoveStoreFiles(db);
    unlink(log.c_str());
    return r;
  };
  if (!producers.WaitReady()) return fail("producers did not start", -1);
  const std::vector<std::string> args = CollectorArgs(collector, session, db, tsc_hz);
  pid_t coll = SpawnCollector(args, log);
  CounterReader reader(db);
  if (!WaitStore(&reader)) return fail("the collector's store did not appear within 10 s", coll);
  const Shared* sh = producers.shared();
  const int64_t go = producers.Go();
  Progress(Fmt("restart: producing for %.1f min", minutes));
  const int64_t kill_at = go + static_cast<int64_t>(minutes * 60e9);
  PollUntilKill(&reader, kill_at, &r);
  r.journal_at_kill = DiskBytes(db + ".ttjournal");
  r.ring_dropped_at_kill = RingDropped(sh);  // the monitors' view, at most 10 ms old
  Progress("SIGKILL and restart");
  kill(coll, SIGKILL);
  waitpid(coll, nullptr, 0);
  reader.Close();
  const uint64_t read_at_kill = ReadTotal(sh);
  const int64_t t_fork = MonotonicNs();
  coll = SpawnCollector(args, log);
  if (!WatchRecovery(sh, coll, log, read_at_kill, t_fork, &reader, &r)) {
    return fail("the restarted collector exited: " + ReadFile(log).substr(0, 400), -1);
  }
  // 10 s more at the rate, then the end of the run.
  Progress(Fmt("restarted: drains again after %.2f s; 10 s more", r.rings_move_s));
  usleep(10'000'000);
  producers.StopStamping();
  usleep(20'000);
  r.written = Written(sh);
  r.note += SettleAndStop(&producers, &reader, coll, r.written, &r.exit_status);
  r.ring_dropped = RingDropped(sh);
  producers.Finish();
  r.ok = ReadFinalCounters(db, r.exit_status, &r.note, [&r](const auto& c, CounterReader&) {
    r.dropped = Get(c, "dropped");
    r.orders_complete = Get(c, "orders_complete");
    r.restarts = Get(c, "restarts");
    r.duplicates = Get(c, "duplicates_skipped");
  });
  RemoveSessionSegments(session);
  RemoveStoreFiles(db);
  unlink(log.c_str());
  return r;
}

// ---------------------------------------------------------------------------
// Machine
// ---------------------------------------------------------------------------

std::string FirstMatch(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t b = colon + 1;
        while (b < line.size() && line[b] == ' ') ++b;
        return line.substr(b);
      }
    }
  }
  return "?";
}

void PrintMachine(const ticktrace::Calibration& cal) {
  std::string clocksource =
      ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  while (!clocksource.empty() && clocksource.back() == '\n') clocksource.pop_back();
  utsname u{};
  uname(&u);
  std::printf("Machine: %s, %ld vCPUs, kernel %s; clocksource %s; TSC %.0f Hz (%s); "
              "load average at start %s\n\n",
              FirstMatch("/proc/cpuinfo", "model name").c_str(), sysconf(_SC_NPROCESSORS_ONLN),
              u.release, clocksource.empty() ? "?" : clocksource.c_str(), cal.tsc_hz,
              cal.source.c_str(), ReadFile("/proc/loadavg").substr(0, 14).c_str());
}

std::string Count(int64_t v) { return v < 0 ? "?" : std::to_string(v); }

// The sustained phase's table, up to the collector's CPU (both stores' sections).
void PrintSustainedRows(const SustainedResult& s, uint64_t orders_written,
                        const char* stored_query) {
  std::printf("| measurement | result |\n|---|---|\n");
  std::printf("| records written (achieved rate) | %llu (%.0f records/s) |\n",
              static_cast<unsigned long long>(s.written), s.achieved_rate);
  std::printf("| records dropped: store `dropped` / rings' own counters | %s / %llu |\n",
              Count(s.dropped).c_str(), static_cast<unsigned long long>(s.ring_dropped));
  std::printf("| store `drained` at the end | %s |\n", Count(s.drained).c_str());
  std::printf("| orders written / `orders_complete` / `orders_incomplete` | %llu / %s / %s |\n",
              static_cast<unsigned long long>(orders_written), Count(s.orders_complete).c_str(),
              Count(s.orders_incomplete).c_str());
  std::printf("| orders stored (%s) / `orders_not_stored` | %s / %s |\n",
              stored_query, Count(s.orders_stored).c_str(), Count(s.orders_not_stored).c_str());
  std::printf("| store `drained` behind the producers (polled every 200 ms) | max %.2f s, at the "
              "end of the run %.2f s (`drained` + `dropped` behind: max %.2f s) |\n", s.max_lag_s,
              s.lag_at_end_s, s.max_accounted_lag_s);
  std::printf("| collector CPU (utime + stime over the run) | %.2f cores |\n", s.cpu_cores);
}

// The sustained phase's TARGET lines on counts (dropped, stitched, stored),
// their labels prefixed by `store` ("" for the default store).
void PrintSustainedCountTargets(const char* area, const std::string& store,
                                const std::string& rate_s, const SustainedResult& s,
                                uint64_t orders_written) {
  tb::PrintTarget(area, store + "sustained " + rate_s + ": records dropped (daemon_bench)",
                  Count(s.dropped) + " (rings: " + std::to_string(s.ring_dropped) + ")", "0",
                  s.dropped == 0 && s.ring_dropped == 0,
                  Fmt("achieved %.0f records/s", s.achieved_rate));
  tb::PrintTarget(area, store + "sustained: every order stitched (daemon_bench)",
                  Count(s.orders_complete) + " of " + std::to_string(orders_written), "all",
                  s.orders_complete == static_cast<int64_t>(orders_written),
                  "orders_incomplete " + Count(s.orders_incomplete));
  tb::PrintTarget(area, store + "sustained: detail stored for every order (daemon_bench)",
                  Count(s.orders_stored) + " stored, " + Count(s.orders_not_stored) +
                      " not stored",
                  "all, 0 not stored",
                  s.orders_stored == static_cast<int64_t>(orders_written) &&
                      s.orders_not_stored == 0,
                  "--detail all (the default)");
}

// VmRSS growth from the early sample to the end, in percent (huge when unmeasured).
double GrowthPct(const SustainedResult& s) {
  return s.rss_early_kb > 0 && s.rss_end_kb > 0
             ? 100.0 * static_cast<double>(s.rss_end_kb - s.rss_early_kb) /
                   static_cast<double>(s.rss_early_kb)
             : 1e9;
}

// --store clickhouse: phase 1 into a ClickHouse server of its own; prints
// its section and TARGET lines. Returns the exit code.
int SustainedClickHouse(const std::string& collector, const std::string& tmpdir, double tsc_hz,
                        double seconds, double rate) {
  using ticktrace::testing::ClickHouseServer;
  std::printf("### Sustained live into ClickHouse: %.0f records/s, %d producer threads in %d "
              "processes, %.0f s\n\n", rate, kThreads, kProcesses, seconds);
  const char* area = "daemon";
  const std::string rate_s = Fmt("%.0f k records/s", rate / 1000);
  if (std::optional<std::string> why = ClickHouseServer::SkipReason()) {
    std::printf("skipped: %s\n\n", why->c_str());
    tb::PrintTarget(area, "ClickHouse, sustained " + rate_s + " (daemon_bench)",
                    "not measured", "", false, "skipped: " + *why);
    return 0;
  }
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> server = ClickHouseServer::Start();
  if (!server.ok()) {
    std::printf("Failed: %s\n\n", std::string(server.status().message()).c_str());
    tb::PrintTarget(area, "ClickHouse, sustained " + rate_s + " (daemon_bench)",
                    "not measured", "", false, std::string(server.status().message()));
    return 0;
  }
  g_collector_cwd = tmpdir;  // the collector's journal: a local file there
  const SustainedResult s =
      Sustained(collector, tmpdir, tsc_hz, seconds, rate, (*server)->Uri("daemon"));
  g_collector_cwd.clear();
  const uint64_t orders_written = s.written / 4;
  if (!s.ok) std::printf("Failed: %s\n\n", s.note.c_str());
  std::printf("Store `clickhouse://127.0.0.1:PORT/daemon` (a clickhouse-server of its own on this "
              "machine, sharing its cores); everything else as the SQLite section above.\n\n");
  PrintSustainedRows(s, orders_written, "count()");
  std::printf("| journal on disk (st_blocks x 512, every 200 ms), max | %.1f MiB |\n",
              static_cast<double>(s.journal_max_bytes) / (1 << 20));
  std::printf("| end of run until the collector exited | %.1f s (wait status %d) |\n",
              s.collector_exit_s, s.exit_status);
  if (!s.note.empty()) std::printf("| notes | %s |\n", s.note.c_str());
  std::printf("\n");
  if (s.ok) {
    PrintSustainedCountTargets(area, "ClickHouse, ", rate_s, s, orders_written);
  } else {
    tb::PrintTarget(area, "ClickHouse, sustained " + rate_s + " (daemon_bench)", "not measured",
                    "", false, s.note);
  }
  tb::PrintTarget(area, "ClickHouse, sustained: store counters behind the producers, max "
                        "(daemon_bench)",
                  Fmt("%.2f s", s.max_lag_s), "<= 2 s", s.ok && s.max_lag_s <= 2.0,
                  Fmt("the store's `drained` moved at %.0f records/s over the run",
                      s.run_s > 0 && s.drained_at_end > 0
                          ? static_cast<double>(s.drained_at_end) / s.run_s
                          : 0.0));
  std::fflush(stdout);  // before the server's data directory is removed (slow)
  return 0;
}

// The command line.
struct BenchOptions {
  std::string collector, tmpdir, minutes_list = "1,2,4", store_kind = "sqlite";
  bool skip_sustained = false;
  double seconds = 60, rate = 1'000'000, restart_rate = 500'000;
  std::vector<double> minutes;  // --restart-minutes, parsed
  bool otlp_sink = false;        // --otlp-sink
};

// Reads the flags into `o`. False, after printing the usage or what is
// wrong, when the program must exit with status 2.
bool ParseFlags(int argc, char** argv, BenchOptions* o) {
  std::string ring_text;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--collector" && has) o->collector = argv[++i];
    else if (a == "--seconds" && has) o->seconds = std::atof(argv[++i]);
    else if (a == "--rate" && has) o->rate = std::atof(argv[++i]);
    else if (a == "--restart-rate" && has) o->restart_rate = std::atof(argv[++i]);
    else if (a == "--restart-minutes" && has) o->minutes_list = argv[++i];
    else if (a == "--tmpdir" && has) o->tmpdir = argv[++i];
    else if (a == "--store" && has) o->store_kind = argv[++i];
    else if (a == "--detail" && has) g_detail = argv[++i];
    else if (a == "--ring-records" && has) ring_text = argv[++i];
    else if (a == "--skip-sustained") o->skip_sustained = true;
    else if (a == "--collector-arg" && has) g_collector_args.push_back(argv[++i]);
    else if (a == "--otlp-sink") o->otlp_sink = true;
    else {
      std::fprintf(stderr,
                   "usage: daemon_bench --collector PATH [--seconds 60] [--rate 1000000] "
                   "[--restart-rate 500000] [--restart-minutes 1,2,4|none] [--tmpdir DIR] "
                   "[--store sqlite|clickhouse] [--detail all|tail|none] [--ring-records N] "
                   "[--skip-sustained] [--collector-arg ARG]... [--otlp-sink]\n");
      return false;
    }
  }
  if (!g_detail.empty() && g_detail != "all" && g_detail != "tail" && g_detail != "none") {
    std::fprintf(stderr, "daemon_bench: --detail '%s': all, tail or none\n", g_detail.c_str());
    return false;
  }
  if (!ring_text.empty()) {
    const unsigned long long n = std::strtoull(ring_text.c_str(), nullptr, 10);
    if (n < 4096 || n > (1ull << 30) || (n & (n - 1)) != 0) {
      std::fprintf(stderr, "daemon_bench: --ring-records '%s': a power of two from 4096 to 2^30\n",
                   ring_text.c_str());
      return false;
    }
    g_ring_records = static_cast<uint32_t>(n);
  }
  if (o->minutes_list == "none") o->minutes_list.clear();
  if (o->store_kind != "sqlite" && o->store_kind != "clickhouse") {
    std::fprintf(stderr, "daemon_bench: --store '%s': sqlite or clickhouse\n",
                 o->store_kind.c_str());
    return false;
  }
  std::istringstream in(o->minutes_list);
  std::string tok;
  while (std::getline(in, tok, ',')) {
    if (tok.empty()) continue;
    char* endp = nullptr;
    const double m = std::strtod(tok.c_str(), &endp);
    if (endp == tok.c_str() || *endp != '\0' || !(m > 0)) {
      std::fprintf(stderr, "daemon_bench: --restart-minutes '%s': not a list of positive "
                   "numbers\n", o->minutes_list.c_str());
      return false;
    }
    o->minutes.push_back(m);
  }
  if (!(o->seconds >= 3) || !(o->rate >= 4000) || !(o->restart_rate >= 4000)) {
    std::fprintf(stderr, "daemon_bench: --seconds must be >= 3 and the rates >= 4000\n");
    return false;
  }
  return true;
}

// A stop signal removes the producers' segments before the bench dies
// (OnStopSignal); a write to a closed socket or pipe fails with EPIPE
// instead of killing the bench.
void InstallSignalHandlers() {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  signal(SIGHUP, OnStopSignal);
}

// The bench's own temporary directory goes with everything in it; the
// "daemon" subdirectory of a given --tmpdir goes only when empty.
void RemoveTmpdir(const std::string& tmpdir, bool own_tmpdir) {
  if (own_tmpdir) std::system(("rm -rf '" + tmpdir + "'").c_str());
  else rmdir(tmpdir.c_str());
}

// The report's section on the sustained phase (SQLite store).
void PrintSustainedSection(const BenchOptions& o, const SustainedResult& s) {
  std::printf(
      "### Sustained live: %.0f records/s, %d producer threads in %d processes, %.0f s, "
      "rings of %u records, --detail %s%s\n\n",
      o.rate, kThreads, kProcesses, o.seconds, g_ring_records,
      g_detail.empty() ? "all (the default)" : g_detail.c_str(), CollectorArgsShown().c_str());
  const uint64_t orders_written = s.written / 4;
  if (!s.ok) std::printf("Failed: %s\n\n", s.note.c_str());
  PrintSustainedRows(s, orders_written, "COUNT(*)");
  std::printf("| collector VmRSS at %.0f s / at %.0f s | %.1f MiB / %.1f MiB (%+.1f%%) |\n",
              s.rss_early_s, o.seconds, s.rss_early_kb / 1024.0, s.rss_end_kb / 1024.0,
              s.rss_early_kb > 0 ? 100.0 * (s.rss_end_kb - s.rss_early_kb) / s.rss_early_kb : 0);
  std::printf("| journal on disk (st_blocks x 512, every 200 ms), max | %.1f MiB |\n",
              static_cast<double>(s.journal_max_bytes) / (1 << 20));
  std::printf("| `journal_syncs` per s: run mean / max over >= 1 s windows | %.1f / %.1f (%s in "
              "all) |\n", s.syncs_per_s, s.syncs_max_window, Count(s.journal_syncs).c_str());
  std::printf("| end of run until the collector exited (rings empty, store caught up, 3 s for the "
              "order timeout, SIGINT, close) | %.1f s (wait status %d) |\n", s.collector_exit_s,
              s.exit_status);
  if (!s.note.empty()) std::printf("| notes | %s |\n", s.note.c_str());
  std::printf("\n");
}

// The report's section on the restarts: one row per run length, then the
// notes of the runs that have any.
void PrintRestartSection(const BenchOptions& o, const std::vector<RestartResult>& restarts) {
  std::printf("### Restart after SIGKILL: %.0f records/s (%d threads, rings of %u records)\n\n",
              o.restart_rate, kThreads, g_ring_records);
  std::printf("Run lengths %s min. Times from the restarted collector's fork.\n\n",
              o.minutes_list.c_str());
  std::printf("| run length | journal on disk at the kill | \"recovered in\" (printed) | line seen "
              "after | rings drained again after | store `drained` past pre-kill after | dropped: "
              "store / rings (rings before the kill + after) | orders written / complete | "
              "restarts | duplicates skipped |\n"
              "|---:|---:|---|---:|---:|---:|---|---|---:|---:|\n");
  for (const RestartResult& r : restarts) {
    if (!r.ok && r.recovered_line_s < 0) {
      std::printf("| %.1f min | failed: %s |||||||||\n", r.minutes, r.note.c_str());
      continue;
    }
    std::printf("| %.1f min | %.1f MiB | %s | %.2f s | %.2f s | %.2f s | %s / %llu (%llu + %llu) "
                "| %llu / %s | %s | %s |\n",
                r.minutes, static_cast<double>(r.journal_at_kill) / (1 << 20),
                r.recovered_text.empty() ? "not printed" : r.recovered_text.c_str(),
                r.first_line_s, r.rings_move_s, r.store_past_s, Count(r.dropped).c_str(),
                static_cast<unsigned long long>(r.ring_dropped),
                static_cast<unsigned long long>(r.ring_dropped_at_kill),
                static_cast<unsigned long long>(r.ring_dropped - r.ring_dropped_at_kill),
                static_cast<unsigned long long>(r.written / 4), Count(r.orders_complete).c_str(),
                Count(r.restarts).c_str(), Count(r.duplicates).c_str());
  }
  for (const RestartResult& r : restarts) {
    if (!r.note.empty()) std::printf("\n%.1f min: %s", r.minutes, r.note.c_str());
  }
  std::printf("\n\n");
}

// What the sustained phase observed behind each figure that misses its
// target, one sentence each; none when the phase failed.
std::vector<std::string> WhySustainedMissed(const BenchOptions& o, const SustainedResult& s) {
  std::vector<std::string> why;
  if (!s.ok) return why;
  const uint64_t orders_written = s.written / 4;
  const double orders_rate = o.rate / 4;
  const double drain_rate = s.drained_at_end > 0 && s.run_s > 0
                                ? static_cast<double>(s.drained_at_end) / s.run_s
                                : 0;
  if (s.dropped != 0 || s.ring_dropped != 0) {
    why.push_back(Fmt("records dropped: the store's `drained` moved at %.0f records/s over the "
                      "run against ",
                      drain_rate) +
                  Fmt("%.0f produced; rings of ", s.achieved_rate) +
                  std::to_string(g_ring_records) + " records hold " +
                  Fmt("%.1f s at each thread's share", g_ring_records / (o.rate / kThreads)));
  }
  if (s.orders_complete != static_cast<int64_t>(orders_written)) {
    why.push_back("orders not all stitched: orders_complete " + Count(s.orders_complete) +
                  ", orders_incomplete " + Count(s.orders_incomplete) + " of " +
                  std::to_string(orders_written) + " orders written; their records were among "
                  "the " + Count(s.dropped) + " dropped");
  }
  if (s.orders_not_stored != 0 || s.orders_stored != static_cast<int64_t>(orders_written)) {
    const double stored_rate =
        s.orders_stored > 0 ? static_cast<double>(s.orders_stored) / (s.run_s + s.collector_exit_s)
                            : 0;
    why.push_back(Fmt("detail not stored for every order: the store writer kept %.0f orders/s ",
                      stored_rate) +
                  Fmt("(rows stored / (run + settle time)) against %.0f orders/s produced; ",
                      orders_rate) +
                  "the live sink counts what its queue cannot take in orders_not_stored (" +
                  Count(s.orders_not_stored) + ")");
  }
  if (s.max_lag_s > 2.0) {
    why.push_back(Fmt("store counters up to %.2f s behind: ", s.max_lag_s) +
                  Fmt("the store's `drained` moved at %.0f records/s on average; ", drain_rate) +
                  "the counters are a snapshot the analysis thread takes every 1 s and the "
                  "store writer commits behind its queue of orders");
  }
  if (s.cpu_cores > 1.0) {
    why.push_back(Fmt("collector CPU %.2f cores: its drain, analysis and SQLite writer threads ",
                      s.cpu_cores) +
                  Fmt("at %.0f records/s", s.achieved_rate));
  }
  if (!(GrowthPct(s) <= 5.0)) {
    why.push_back(Fmt("RSS grew %.1f%%", GrowthPct(s)) +
                  Fmt(" (%.1f MiB", s.rss_early_kb / 1024.0) +
                  Fmt(" -> %.1f MiB) while the store's `drained` ", s.rss_end_kb / 1024.0) +
                  Fmt("ended %.2f s behind: what is queued for the store grows with the lag",
                      s.lag_at_end_s));
  }
  if (s.journal_max_bytes > 128'000'000) {
    why.push_back(Fmt("journal reached %.1f MiB: a checkpoint frees the journal only once the ",
                      static_cast<double>(s.journal_max_bytes) / (1 << 20)) +
                  Fmt("store holds everything before it, and the store ended %.2f s behind",
                      s.lag_at_end_s));
  }
  return why;
}

// The same for the restarts: a slow recovery, and records dropped.
std::vector<std::string> WhyRestartsMissed(const std::vector<RestartResult>& restarts) {
  std::vector<std::string> why;
  for (const RestartResult& r : restarts) {
    const double t = std::max(r.rings_move_s, r.recovered_line_s);
    if (r.ok && t > 1.0) {
      why.push_back(Fmt("restart after %.1f min took ", r.minutes) + Fmt("%.2f s: ", t) +
                    (r.recovered_text.empty() ? "no recovery line" : r.recovered_text) +
                    Fmt("; %.1f MiB of journal on disk at the kill",
                        static_cast<double>(r.journal_at_kill) / (1 << 20)));
    }
    if (r.ok && (r.dropped != 0 || r.ring_dropped != 0)) {
      why.push_back(Fmt("restart after %.1f min: ", r.minutes) + Count(r.dropped) +
                    " records dropped (store), " + std::to_string(r.ring_dropped) +
                    " (rings): " + std::to_string(r.ring_dropped_at_kill) +
                    " before the kill (the collector was already behind at this rate), " +
                    std::to_string(r.ring_dropped - r.ring_dropped_at_kill) +
                    " after it (rings full while it was down, recovering and catching up)");
    }
  }
  return why;
}

// "Why missed": the sentences above, when there are any.
void PrintWhyMissed(const BenchOptions& o, const SustainedResult& s,
                    const std::vector<RestartResult>& restarts) {
  std::vector<std::string> why = WhySustainedMissed(o, s);
  for (std::string& w : WhyRestartsMissed(restarts)) why.push_back(std::move(w));
  if (!why.empty()) {
    std::printf("Why missed (observed in this run):\n\n");
    for (const std::string& w : why) std::printf("- %s\n", w.c_str());
    std::printf("\n");
  }
}

// The sustained phase's TARGET lines (SQLite store).
void PrintSustainedTargets(const BenchOptions& o, const SustainedResult& s) {
  const char* area = "daemon";
  const std::string rate_s = Fmt("%.0f k records/s", o.rate / 1000);
  if (s.ok) {
    PrintSustainedCountTargets(area, "", rate_s, s, s.written / 4);
  } else {
    tb::PrintTarget(area, "sustained " + rate_s + " (daemon_bench)", "not measured", "",
                    false, s.note);
  }
  tb::PrintTarget(area, "sustained: store counters behind the producers, max (daemon_bench)",
                  Fmt("%.2f s", s.max_lag_s), "<= 2 s", s.ok && s.max_lag_s <= 2.0,
                  "store snapshot every 1 s; polled every 200 ms");
  tb::PrintTarget(area, "sustained: collector CPU (daemon_bench)", Fmt("%.2f cores", s.cpu_cores),
                  "<= 1 core", s.ok && s.cpu_cores <= 1.0);
  const double growth = GrowthPct(s);
  tb::PrintTarget(area, Fmt("sustained: RSS growth from %.0f s", s.rss_early_s) +
                            Fmt(" to %.0f s (daemon_bench)", o.seconds),
                  Fmt("%+.1f%%", growth), "<= 5%", s.ok && growth <= 5.0,
                  Fmt("%.1f MiB", s.rss_early_kb / 1024.0) +
                      Fmt(" -> %.1f MiB", s.rss_end_kb / 1024.0));
  tb::PrintTarget(area, "sustained: journal on disk, max (daemon_bench)",
                  Fmt("%.1f MiB", static_cast<double>(s.journal_max_bytes) / (1 << 20)),
                  "<= 128 MB", s.ok && s.journal_max_bytes <= 128'000'000);
  const double syncs_worst = std::max(s.syncs_per_s, s.syncs_max_window);
  tb::PrintTarget(area, "fdatasync calls per s, max over >= 1 s windows (daemon_bench)",
                  Fmt("%.1f", syncs_worst), "<= 200", s.ok && syncs_worst <= 200,
                  Fmt("run mean %.1f/s", s.syncs_per_s));
}

// The restarts' TARGET lines: how soon it drains again, drops across the
// restart, and (with two run lengths or more) whether the time grows with
// the run length.
void PrintRestartTargets(const BenchOptions& o, const std::vector<RestartResult>& restarts) {
  const char* area = "daemon";
  double first_time = -1, worst_time = 0;
  bool all_ok = !restarts.empty(), no_drops = !restarts.empty();
  std::string by_length;
  for (const RestartResult& r : restarts) {
    const double t = std::max(r.rings_move_s, r.recovered_line_s);
    if (first_time < 0) first_time = t;
    worst_time = std::max(worst_time, t);
    all_ok = all_ok && r.ok && r.rings_move_s >= 0 && t <= 1.0;
    no_drops = no_drops && r.ok && r.ring_dropped == r.ring_dropped_at_kill;
    by_length += Fmt("%.1f min: ", r.minutes) + Fmt("%.2f s", t) +
                 Fmt(" (store past pre-kill %.2f s); ", r.store_past_s);
  }
  tb::PrintTarget(area, "restart: drains again after its start, worst of the run lengths "
                        "(daemon_bench)",
                  Fmt("%.2f s", worst_time), "<= 1 s", all_ok, by_length);
  std::string drops;
  for (const RestartResult& r : restarts) {
    drops += Fmt("%.1f min: ", r.minutes) +
             std::to_string(r.ring_dropped - r.ring_dropped_at_kill) + " after the kill (" +
             std::to_string(r.ring_dropped_at_kill) + " before; store " + Count(r.dropped) +
             " in all); ";
  }
  tb::PrintTarget(area,
                  "restart: records dropped across the restart, rings of " +
                      std::to_string(g_ring_records) + " (daemon_bench)",
                  no_drops ? "0" : "not 0", "0", no_drops,
                  "rings' drop counters per run length: " + drops);
  if (restarts.size() >= 2) {
    const double last = std::max(restarts.back().rings_move_s, restarts.back().recovered_line_s);
    const bool flat = first_time >= 0 && last <= std::max(2 * first_time, first_time + 0.5);
    tb::PrintTarget(area, "restart time does not grow with the run length (daemon_bench)",
                    Fmt("%.2f s", first_time) + Fmt(" -> %.2f s", last),
                    "not growing (<= 2x or +0.5 s)", flat, o.minutes_list + " min");
  }
}

// The sustained phase's raw figures (METRIC lines) for run_all.sh, which
// sets them beside another build's and judges them; none when it failed.
void PrintSustainedMetrics(const SustainedResult& s) {
  if (!s.ok) {
    std::printf("NOTE|sustained phase failed: %s\n", s.note.c_str());
    return;
  }
  tb::PrintMetric("written", static_cast<double>(s.written));
  tb::PrintMetric("achieved_rate", s.achieved_rate);
  tb::PrintMetric("orders_written", static_cast<double>(s.written / 4));
  tb::PrintMetric("dropped_store", static_cast<double>(s.dropped));
  tb::PrintMetric("dropped_rings", static_cast<double>(s.ring_dropped));
  tb::PrintMetric("orders_complete", static_cast<double>(s.orders_complete));
  tb::PrintMetric("orders_stored", static_cast<double>(s.orders_stored));
  tb::PrintMetric("orders_not_stored", static_cast<double>(s.orders_not_stored));
  tb::PrintMetric("max_lag_s", s.max_lag_s);
  tb::PrintMetric("cpu_cores", s.cpu_cores);
  tb::PrintMetric("rss_early_s", s.rss_early_s);
  tb::PrintMetric("rss_early_mib", s.rss_early_kb / 1024.0);
  tb::PrintMetric("rss_end_mib", s.rss_end_kb / 1024.0);
  tb::PrintMetric("rss_growth_pct", GrowthPct(s));
  tb::PrintMetric("journal_max_mb", static_cast<double>(s.journal_max_bytes) / 1e6);
}

// The restart's raw figures (the last run length's): how soon the restarted
// collector drained again, from its fork, and the rings' drops.
void PrintRestartMetrics(const RestartResult& r) {
  if (!r.ok || r.rings_move_s < 0) {
    std::printf("NOTE|restart failed: %s\n", r.note.c_str());
    return;
  }
  tb::PrintMetric("restart_minutes", r.minutes);
  tb::PrintMetric("restart_drains_s", r.rings_move_s);
  tb::PrintMetric("restart_recovered_line_s", r.recovered_line_s);
  tb::PrintMetric("restart_store_past_s", r.store_past_s);
  tb::PrintMetric("restart_journal_at_kill_mb", static_cast<double>(r.journal_at_kill) / 1e6);
  tb::PrintMetric("restart_dropped_rings", static_cast<double>(r.ring_dropped));
  tb::PrintMetric("restart_dropped_before_kill", static_cast<double>(r.ring_dropped_at_kill));
  tb::PrintMetric("restart_dropped_after_kill",
                  static_cast<double>(r.ring_dropped - r.ring_dropped_at_kill));
  tb::PrintMetric("restart_dropped_store", static_cast<double>(r.dropped));
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  if (!ticktrace::bench::CollectorFound(o.collector)) return 0;
  bool own_tmpdir = false;
  if (!ticktrace::bench::MakeTmpdirOrSubdir("/tmp/ticktrace-daemon-XXXXXX", "daemon", &o.tmpdir,
                                            &own_tmpdir)) {
    return 1;
  }
  InstallSignalHandlers();
  const std::optional<ticktrace::Calibration> cal = ticktrace::bench::CalibrateOrSay();
  if (!cal) return 1;
  PrintMachine(*cal);
  if (o.store_kind == "clickhouse") {
    const int rc = SustainedClickHouse(tb::AbsolutePath(o.collector), o.tmpdir, cal->tsc_hz,
                                       o.seconds, o.rate);
    RemoveTmpdir(o.tmpdir, own_tmpdir);
    return rc;
  }

  std::unique_ptr<ticktrace::bench::OtlpSink> otlp;
  if (o.otlp_sink) {
    otlp = std::make_unique<ticktrace::bench::OtlpSink>();
    if (otlp->port() == 0) {
      std::fprintf(stderr, "daemon_bench: --otlp-sink: cannot listen on 127.0.0.1\n");
      RemoveTmpdir(o.tmpdir, own_tmpdir);
      return 1;
    }
    g_collector_args.push_back("--otlp-endpoint");
    g_collector_args.push_back(otlp->url());
  }
  SustainedResult s;
  if (!o.skip_sustained) {
    s = Sustained(o.collector, o.tmpdir, cal->tsc_hz, o.seconds, o.rate);
  }
  if (otlp != nullptr) {
    std::printf("OTLP receiver: %llu requests, %llu body bytes\n\n",
                static_cast<unsigned long long>(otlp->requests()),
                static_cast<unsigned long long>(otlp->body_bytes()));
    tb::PrintMetric("otlp_requests", static_cast<double>(otlp->requests()));
  }
  std::vector<RestartResult> restarts;
  for (size_t i = 0; i < o.minutes.size(); ++i) {
    restarts.push_back(Restart(o.collector, o.tmpdir, cal->tsc_hz, o.minutes[i], o.restart_rate,
                               static_cast<int>(i)));
  }
  if (!o.skip_sustained) PrintSustainedSection(o, s);
  if (!restarts.empty()) PrintRestartSection(o, restarts);
  PrintWhyMissed(o, s, restarts);
  if (!o.skip_sustained) {
    PrintSustainedTargets(o, s);
    PrintSustainedMetrics(s);
  }
  if (!restarts.empty()) {
    PrintRestartTargets(o, restarts);
    PrintRestartMetrics(restarts.back());
  }
  RemoveTmpdir(o.tmpdir, own_tmpdir);
  return 0;
}
