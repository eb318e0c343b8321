// interference_bench: what a running collector costs the traced processes.
// The stamp cost of 1 and 2 producer processes with the real
// ticktrace-collector draining their rings, against the same producers with
// no collector, in alternating rounds of one run.
//
//   interference_bench --collector PATH [--producers 1,2] [--rounds 3]
//                      [--seconds 3] [--burst 512] [--tmpdir DIR]
//
// The producer (this program, re-executed with --producer) is a paced
// pipeline stage: every 1 ms it stamps a burst of --burst records (4 stages
// per order: md_rx, decide, order_sent, ack; distinct order ids per
// producer), then sleeps until the next millisecond. A burst is bracketed by
// `lfence; rdtsc; lfence`; its ticks / burst is one sample of the stamp cost.
// Default rate: 512 stamps/ms = 0.5 M stamps/s per producer.
//
// Both modes write the same memory in the same order: each producer's ring
// holds the whole measured phase (no wrap, so without a collector nothing is
// dropped either), and every cell is written once and drained by the producer
// itself before the phase (no page fault in a burst). Then:
//   base  no collector; the ring just fills up.
//   coll  ticktrace-collector (its own session and a temporary SQLite store,
//         --tsc-hz given so it skips calibration) is started after the
//         prefault and drains the ring while the producer stamps.
// The phase starts at the same delay after the producers are ready in both
// modes. A burst during which the producer was preempted (its involuntary
// context switch count changed) counts in "all" but not in "quiet": on these
// shared cores, preemption by other tenants' work would otherwise dominate
// the means; preemption by the collector itself shows as more preempted
// bursts in the "draining" rows. Reported per mode: per-burst ns/stamp (median, mean, p99), drops,
// whether the collector had drained everything within 5 s of the end, and the
// collector's CPU use over the phase.
//
// Output: markdown + TARGET lines (bench_util.h), like the other benches.

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_process.h"
#include "bench_setup.h"
#include "bench_util.h"
#include "ticktrace/calibration.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"
#include "ticktrace/tsc.h"

namespace {

namespace tb = ticktrace::bench;
using tb::CpuTicks;
using tb::Fmt;
using tb::InvoluntarySwitches;
using tb::SleepUntil;
using tb::WaitFor;

// ---------------------------------------------------------------------------
// Producer
// ---------------------------------------------------------------------------

struct ProducerArgs {
  std::string session;
  std::string mode;  // base | coll
  double seconds = 3;
  int burst = 512;
  int index = 0;
  double tsc_hz = 0;
};

// What the producer measured: one entry per burst, and counts.
struct BurstLog {
  std::vector<double> per_stamp_ticks;  // the burst's ticks / stamps in it
  std::vector<bool> preempted;          // an involuntary context switch during the burst
  uint64_t stamps = 0;
  uint64_t late = 0;  // periods skipped because the producer woke past them
};

// The measured phase: every 1 ms a burst of a.burst stamps cycling through
// `tags` (4 stages per order, ids distinct per producer), for a.seconds.
BurstLog StampBursts(const ProducerArgs& a, const ticktrace::Tag* tags) {
  BurstLog bursts;
  const uint64_t id_base = (static_cast<uint64_t>(a.index) + 1) << 40;
  uint64_t seq = 0;
  bursts.per_stamp_ticks.reserve(static_cast<size_t>(a.seconds * 1000) + 16);
  bursts.preempted.reserve(bursts.per_stamp_ticks.capacity());
  const int64_t period_ns = 1'000'000;
  const int64_t start = tb::MonotonicNs();
  const int64_t end = start + static_cast<int64_t>(a.seconds * 1e9);
  int64_t next = start;
  while (next < end) {
    const long sw0 = InvoluntarySwitches();
    const uint64_t t0 = tb::BracketBegin();
    for (int i = 0; i < a.burst; ++i, ++seq) {
      ticktrace::stamp(tags[seq & 3], id_base + (seq >> 2));
    }
    const uint64_t t1 = tb::BracketEnd();
    bursts.per_stamp_ticks.push_back(static_cast<double>(t1 - t0) / a.burst);
    bursts.preempted.push_back(InvoluntarySwitches() != sw0);
    next += period_ns;
    const int64_t now = tb::MonotonicNs();
    if (next < now) {  // preempted past a whole period: skip, do not catch up in a rush
      ++bursts.late;
      next = now + period_ns;
    }
    SleepUntil(next);
  }
  bursts.stamps = seq;
  return bursts;
}

// With a collector: gives it up to 5 s to drain everything; the ring as it
// was left, and in `drain_ms` how long that took.
ticktrace::SlotView WaitDrained(const tb::OwnRingDrainer& drainer, double* drain_ms) {
  ticktrace::SlotView v = drainer.Slot();
  const int64_t t = tb::MonotonicNs();
  while (v.read_index < v.write_index && tb::MonotonicNs() - t < 5'000'000'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    v = drainer.Slot();
  }
  *drain_ms = static_cast<double>(tb::MonotonicNs() - t) * 1e-6;
  return v;
}

// The two lines the driver reads: "result key=value..." and "samples ...".
void PrintProducerResult(const ProducerArgs& a, const BurstLog& bursts,
                         const ticktrace::SlotView& v, double drain_ms) {
  const uint64_t undrained = v.write_index - v.read_index;
  std::vector<double> all = bursts.per_stamp_ticks;
  tb::Summary s = tb::Summarize(all);
  const double k = 1e9 / a.tsc_hz;
  std::printf("result bursts=%zu stamps=%llu median_ns=%.3f mean_ns=%.3f p99_ns=%.3f "
              "dropped=%llu undrained=%llu drain_ms=%.1f late=%llu\n",
              s.n, static_cast<unsigned long long>(bursts.stamps), s.p50 * k, s.mean * k,
              s.p99 * k, static_cast<unsigned long long>(v.dropped),
              static_cast<unsigned long long>(a.mode == "coll" ? undrained : 0), drain_ms,
              static_cast<unsigned long long>(bursts.late));
  // Raw per-burst samples for the driver's pooled percentiles (ns/stamp); a
  // preempted burst is written negated.
  std::printf("samples");
  for (size_t i = 0; i < bursts.per_stamp_ticks.size(); ++i) {
    std::printf(" %.3f", bursts.preempted[i] ? -bursts.per_stamp_ticks[i] * k
                                             : bursts.per_stamp_ticks[i] * k);
  }
  std::printf("\n");
  std::fflush(stdout);
}

int RunProducer(const ProducerArgs& a) {
  const uint64_t total = static_cast<uint64_t>(std::ceil(a.seconds * 1000.0 * 1.05)) *
                         static_cast<uint64_t>(a.burst);
  uint32_t ring = 1024;
  while (ring < total && ring < ticktrace::abi::kMaxRingCapacity) ring <<= 1;

  if (!ticktrace::bench::InitTracing("producer: Init", a.session, ring, 2)) return 1;
  static const ticktrace::Tag tags[4] = {ticktrace::Tag{"md_rx"}, ticktrace::Tag{"decide"},
                                         ticktrace::Tag{"order_sent"}, ticktrace::Tag{"ack"}};
  ticktrace::stamp(tags[0], 0);
  tb::OwnRingDrainer drainer;
  if (!drainer.Attach()) return 1;
  // Prefault: write every cell of the ring once, then drain it ourselves (no
  // collector runs yet). Order id 0: never reaches a collector.
  for (uint32_t i = 1; i < ring; ++i) ticktrace::stamp(tags[0], 0);
  drainer.Drain();

  std::printf("ready\n");
  std::fflush(stdout);
  char line[64];
  if (std::fgets(line, sizeof line, stdin) == nullptr) return 1;  // "go"

  const BurstLog bursts = StampBursts(a, tags);
  double drain_ms = 0;
  const ticktrace::SlotView v =
      a.mode == "coll" ? WaitDrained(drainer, &drain_ms) : drainer.Slot();
  PrintProducerResult(a, bursts, v, drain_ms);
  drainer.Close();
  if (a.mode == "base") (void)ticktrace::RemoveSegment(ticktrace::CurrentSegmentName());
  return 0;
}

// ---------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  FILE* to = nullptr;    // its stdin
  FILE* from = nullptr;  // its stdout
};

// Starts `argv` with pipes on its stdin and stdout (stderr inherited, or
// `stderr_path` when given).
Child Spawn(const std::vector<std::string>& argv, const std::string& stderr_path = "",
            bool pipes = true) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipes && (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)) {
    std::perror("pipe");
    std::exit(1);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) {
    if (pipes) {
      dup2(in[0], STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      close(in[0]);
      close(in[1]);
      close(out[0]);
      close(out[1]);
    } else {
      const int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    }
    if (!stderr_path.empty()) {
      const int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        if (!pipes) dup2(fd, STDOUT_FILENO);
      }
    }
    std::vector<char*> args;
    for (const std::string& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::perror("execv");
    _exit(127);
  }
  Child c;
  c.pid = pid;
  if (pipes) {
    close(in[0]);
    close(out[1]);
    c.to = fdopen(in[1], "w");
    c.from = fdopen(out[0], "r");
  }
  return c;
}

std::string ReadLine(FILE* f) {
  std::string s;
  int ch;
  while ((ch = std::fgetc(f)) != EOF && ch != '\n') s.push_back(static_cast<char>(ch));
  return s;
}

void RemoveSessionSegments(const std::string& session) {
  absl::StatusOr<std::vector<ticktrace::SegmentId>> segs = ticktrace::ListSegments(session);
  if (!segs.ok()) return;
  for (const ticktrace::SegmentId& s : *segs) (void)ticktrace::RemoveSegment(s.name);
}

// Removes the files of `dir` whose names start with `prefix`.
void RemoveWithPrefix(const std::string& dir, const std::string& prefix) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) {
      unlink((dir + "/" + e->d_name).c_str());
    }
  }
  closedir(d);
}

struct RunResult {
  bool ok = false;
  std::vector<double> samples;  // per-burst ns/stamp, all producers
  std::vector<double> quiet;    // the bursts during which the producer was not preempted
  uint64_t stamps = 0, dropped = 0, undrained = 0, late = 0;
  double drain_ms = 0;
  double collector_cpu = -1;  // fraction of one core over the phase
  std::string collector_note;
};

// Starts `producers` copies of this program (`self`) in producer mode, each
// with pipes to the driver.
std::vector<Child> StartProducers(const std::string& self, const std::string& session,
                                  const std::string& mode, int producers, double seconds,
                                  int burst, double tsc_hz) {
  std::vector<Child> kids;
  for (int i = 0; i < producers; ++i) {
    kids.push_back(Spawn({self, "--producer", "--session", session, "--mode", mode, "--seconds",
                          Fmt("%.3f", seconds), "--burst", std::to_string(burst), "--index",
                          std::to_string(i), "--tsc-hz", Fmt("%.0f", tsc_hz)}));
  }
  return kids;
}

// Adds one producer's "result" line (the counts) and "samples" line (every
// burst in `samples`; those not preempted in `quiet` too) to `rr`.
void AddProducerResult(const std::string& res, const std::string& samples, RunResult* rr) {
  std::map<std::string, double> kv;
  std::istringstream in(res.substr(7));
  std::string tok;
  while (in >> tok) {
    const size_t eq = tok.find('=');
    if (eq != std::string::npos) kv[tok.substr(0, eq)] = std::atof(tok.c_str() + eq + 1);
  }
  rr->stamps += static_cast<uint64_t>(kv["stamps"]);
  rr->dropped += static_cast<uint64_t>(kv["dropped"]);
  rr->undrained += static_cast<uint64_t>(kv["undrained"]);
  rr->late += static_cast<uint64_t>(kv["late"]);
  rr->drain_ms = std::max(rr->drain_ms, kv["drain_ms"]);
  std::istringstream sin(samples.substr(7));
  double x;
  while (sin >> x) {
    rr->samples.push_back(std::fabs(x));
    if (x >= 0) rr->quiet.push_back(x);
  }
}

// Reads every producer's two lines into `rr`. False when one did not send
// them.
bool ReadProducerResults(const std::vector<Child>& kids, RunResult* rr) {
  bool all = true;
  for (const Child& c : kids) {
    const std::string res = ReadLine(c.from);
    const std::string samples = ReadLine(c.from);
    if (res.rfind("result ", 0) != 0 || samples.rfind("samples", 0) != 0) {
      all = false;
      continue;
    }
    AddProducerResult(res, samples, rr);
  }
  return all;
}

// Closes the producers' pipes and waits for them, killing one that has not
// exited within 10 s. False when one had to be killed.
bool ReapProducers(const std::vector<Child>& kids) {
  bool all = true;
  for (const Child& c : kids) {
    std::fclose(c.to);
    std::fclose(c.from);
    if (WaitFor(c.pid, 10000) < 0) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, nullptr, 0);
      all = false;
    }
  }
  return all;
}

// The collector's CPU over the phase (from `cpu0` ticks, `phase_s` long),
// then SIGINT; a note in `rr` when it had to be killed or exited with a
// failure (its log is `log`).
void StopCollectorAndNote(pid_t coll, long long cpu0, double phase_s, const std::string& log,
                          RunResult* rr) {
  const long long cpu1 = CpuTicks(coll);
  if (cpu0 >= 0 && cpu1 >= 0) {
    rr->collector_cpu = static_cast<double>(cpu1 - cpu0) /
                        static_cast<double>(sysconf(_SC_CLK_TCK)) / phase_s;
  }
  kill(coll, SIGINT);
  int status = WaitFor(coll, 20000);
  if (status < 0) {
    kill(coll, SIGKILL);
    waitpid(coll, nullptr, 0);
    rr->collector_note = "collector did not stop within 20 s of SIGINT (killed)";
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    rr->collector_note = "collector exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                         " (log: " + log + ")";
  }
}

// One run: `producers` producers in `mode` ("base": no collector; "coll":
// the collector drains them), their samples and counts pooled.
RunResult RunOnce(const std::string& self, const std::string& collector, const std::string& mode,
                  int producers, double seconds, int burst, double tsc_hz,
                  const std::string& tmpdir, int run_id) {
  RunResult rr;
  const std::string session = "interf" + std::to_string(getpid()) + "x" + std::to_string(run_id);
  std::vector<Child> kids =
      StartProducers(self, session, mode, producers, seconds, burst, tsc_hz);
  bool ready = true;
  for (Child& c : kids) ready = ReadLine(c.from) == "ready" && ready;
  Child coll;
  const std::string db = tmpdir + "/interference-" + std::to_string(run_id) + ".db";
  const std::string log = tmpdir + "/collector-" + std::to_string(run_id) + ".log";
  if (ready && mode == "coll") {
    coll = Spawn({collector, "--session", session, "--db", db, "--tsc-hz", Fmt("%.0f", tsc_hz),
                  "--pipeline", "md_rx,decide,order_sent,ack"},
                 log, /*pipes=*/false);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const long long cpu0 = coll.pid > 0 ? CpuTicks(coll.pid) : -1;
  const int64_t t0 = tb::MonotonicNs();
  for (Child& c : kids) {
    std::fputs("go\n", c.to);
    std::fflush(c.to);
  }
  bool all = ReadProducerResults(kids, &rr) && ready;
  const double phase_s = static_cast<double>(tb::MonotonicNs() - t0) * 1e-9;
  all = ReapProducers(kids) && all;
  if (coll.pid > 0) {
    StopCollectorAndNote(coll.pid, cpu0, phase_s, log, &rr);
  } else if (mode == "coll") {
    all = false;
  }
  RemoveSessionSegments(session);
  RemoveWithPrefix(tmpdir, "interference-" + std::to_string(run_id) + ".db");  // store, journal
  rr.ok = all;
  return rr;
}

// The command line: the driver's flags, and the producer's (a producer is
// this program run with --producer; --seconds and --burst serve both).
struct BenchOptions {
  bool producer = false;
  ProducerArgs producer_args;
  std::string collector, tmpdir, producers_list = "1,2";
  int rounds = 3;
};

// Reads the flags into `o`. False, after printing the usage, when the
// program must exit with status 2.
bool ParseFlags(int argc, char** argv, BenchOptions* o) {
  ProducerArgs& pa = o->producer_args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--producer") o->producer = true;
    else if (a == "--session" && has) pa.session = argv[++i];
    else if (a == "--mode" && has) pa.mode = argv[++i];
    else if (a == "--seconds" && has) pa.seconds = std::atof(argv[++i]);
    else if (a == "--burst" && has) pa.burst = std::atoi(argv[++i]);
    else if (a == "--index" && has) pa.index = std::atoi(argv[++i]);
    else if (a == "--tsc-hz" && has) pa.tsc_hz = std::atof(argv[++i]);
    else if (a == "--collector" && has) o->collector = argv[++i];
    else if (a == "--producers" && has) o->producers_list = argv[++i];
    else if (a == "--rounds" && has) o->rounds = std::atoi(argv[++i]);
    else if (a == "--tmpdir" && has) o->tmpdir = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: interference_bench --collector PATH [--producers 1,2] [--rounds N] "
                   "[--seconds S] [--burst N] [--tmpdir DIR]\n");
      return false;
    }
  }
  if (pa.burst < 1) pa.burst = 1;
  return true;
}

// The producer counts of --producers ("1,2"), each at least 1.
std::vector<int> ProducerCounts(const std::string& list) {
  std::vector<int> counts;
  std::istringstream in(list);
  std::string tok;
  while (std::getline(in, tok, ',')) counts.push_back(std::max(1, std::atoi(tok.c_str())));
  return counts;
}

// This program's own path, for starting the producers; nullopt after
// printing why when it cannot be read.
std::optional<std::string> SelfPath() {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    std::perror("readlink /proc/self/exe");
    return std::nullopt;
  }
  self[len] = '\0';
  return std::string(self);
}

// Every run's results, pooled per producer count and mode over the rounds.
struct PooledRuns {
  std::map<int, std::map<std::string, RunResult>> pooled;  // [producers][mode]
  std::map<int, std::vector<double>> round_ratios;  // per round: coll median / base median
  std::vector<std::string> problems;
};

// Adds one run to the pool `acc`; the collector's CPU is averaged over
// `rounds`.
void Pool(const RunResult& rr, int rounds, RunResult* acc) {
  acc->samples.insert(acc->samples.end(), rr.samples.begin(), rr.samples.end());
  acc->quiet.insert(acc->quiet.end(), rr.quiet.begin(), rr.quiet.end());
  acc->stamps += rr.stamps;
  acc->dropped += rr.dropped;
  acc->undrained += rr.undrained;
  acc->late += rr.late;
  acc->drain_ms = std::max(acc->drain_ms, rr.drain_ms);
  if (rr.collector_cpu >= 0) {
    acc->collector_cpu = std::max(0.0, acc->collector_cpu) + rr.collector_cpu / rounds;
  }
}

// The measured part: o.rounds rounds, each running every producer count
// without and with the collector, the order of the two alternating from
// round to round.
PooledRuns RunRounds(const BenchOptions& o, const std::string& self,
                     const std::vector<int>& counts, double tsc_hz) {
  const ProducerArgs& pa = o.producer_args;
  PooledRuns out;
  int run_id = 0;
  for (int r = 0; r < o.rounds; ++r) {
    for (int n : counts) {
      const std::vector<std::string> order =
          r % 2 == 0 ? std::vector<std::string>{"base", "coll"}
                     : std::vector<std::string>{"coll", "base"};
      std::map<std::string, double> medians;
      for (const std::string& mode : order) {
        RunResult rr = RunOnce(self, o.collector, mode, n, pa.seconds, pa.burst, tsc_hz,
                               o.tmpdir, run_id++);
        if (!rr.ok) {
          out.problems.push_back("round " + std::to_string(r) + ", " + std::to_string(n) +
                                 " producer(s), " + mode + ": a process failed");
        }
        if (!rr.collector_note.empty()) out.problems.push_back(rr.collector_note);
        std::vector<double> s = rr.samples;
        medians[mode] = tb::Summarize(s).p50;
        Pool(rr, o.rounds, &out.pooled[n][mode]);
      }
      if (medians["base"] > 0) out.round_ratios[n].push_back(medians["coll"] / medians["base"]);
    }
  }
  return out;
}

// The table's two rows for `n` producers (without and with the collector)
// and their three TARGET lines.
void PrintRowsAndTargets(int n, const RunResult& rb, const RunResult& rc,
                         const std::vector<double>& round_ratios) {
  std::vector<double> b = rb.samples, c = rc.samples, bq = rb.quiet, cq = rc.quiet;
  const tb::Summary sb = tb::Summarize(b), sc = tb::Summarize(c);
  const tb::Summary sbq = tb::Summarize(bq), scq = tb::Summarize(cq);
  std::string ratios;
  for (double x : round_ratios) ratios += (ratios.empty() ? "" : ", ") + Fmt("%.3f", x);
  std::printf("| %d | no | %zu | %zu | %.2f | %.2f | %.2f | %.2f | | | | | %llu | | |\n", n,
              sb.n, sb.n - sbq.n, sb.p50, sb.mean, sbq.mean, sb.p99,
              static_cast<unsigned long long>(rb.dropped));
  const double slow_med = sb.p50 > 0 ? sc.p50 / sb.p50 - 1 : 0;
  const double slow_mean = sb.mean > 0 ? sc.mean / sb.mean - 1 : 0;
  const double slow_quiet = sbq.mean > 0 ? scq.mean / sbq.mean - 1 : 0;
  std::printf("| %d | draining | %zu | %zu | %.2f | %.2f | %.2f | %.2f | %+.1f%% | %+.1f%% | "
              "%+.1f%% | %s | %llu | %llu | %s |\n",
              n, sc.n, sc.n - scq.n, sc.p50, sc.mean, scq.mean, sc.p99, slow_med * 100,
              slow_mean * 100, slow_quiet * 100, ratios.c_str(),
              static_cast<unsigned long long>(rc.dropped),
              static_cast<unsigned long long>(rc.undrained),
              rc.collector_cpu >= 0 ? Fmt("%.0f%% of a core", rc.collector_cpu * 100).c_str()
                                    : "n/a");
  const std::string fig = "producer slowdown, collector draining, " + std::to_string(n) +
                          " producer" + (n > 1 ? "s" : "");
  const std::string behind = rc.undrained > 0 ? "; the collector fell behind" : "";
  tb::PrintTarget("interference", fig + " (median burst)", Fmt("%+.1f%%", slow_med * 100),
                  "<= 20%", slow_med <= 0.20,
                  Fmt("%.2f", sb.p50) + Fmt(" -> %.2f ns/stamp", sc.p50) + behind);
  tb::PrintTarget("interference", fig + " (mean, quiet bursts)",
                  Fmt("%+.1f%%", slow_quiet * 100), "<= 20%", slow_quiet <= 0.20,
                  Fmt("%.2f", sbq.mean) + Fmt(" -> %.2f ns/stamp", scq.mean) + behind);
  tb::PrintTarget("interference", fig + " (mean, all bursts)", Fmt("%+.1f%%", slow_mean * 100),
                  "<= 20%", slow_mean <= 0.20,
                  Fmt("%.2f", sb.mean) + Fmt(" -> %.2f ns/stamp", sc.mean) + behind);
}

// The report: what was run, the table with its TARGET lines, the problems.
void PrintReport(const BenchOptions& o, const std::vector<int>& counts, double tsc_hz,
                 PooledRuns& runs) {
  const ProducerArgs& pa = o.producer_args;
  std::printf("%d rounds; each round runs every producer count without and with the collector "
              "(order alternating), %.1f s per run, bursts of %d stamps every 1 ms per producer "
              "(%.2f M stamps/s each). Per-burst cost = burst ticks / %d, TSC %.0f Hz.\n\n",
              o.rounds, pa.seconds, pa.burst, pa.burst / 1000.0, pa.burst, tsc_hz);
  std::printf("| producers | collector | bursts | preempted | ns/stamp median | mean, all | "
              "mean, quiet | p99, all | slowdown: median | mean, all | mean, quiet | "
              "per-round median ratios | dropped | undrained after 5 s | collector CPU |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n");
  for (int n : counts) {
    PrintRowsAndTargets(n, runs.pooled[n]["base"], runs.pooled[n]["coll"], runs.round_ratios[n]);
  }
  std::printf("\n");
  for (const std::string& p : runs.problems) std::printf("- problem: %s\n", p.c_str());
  if (!runs.problems.empty()) std::printf("\n");
}

// The runs' collector logs, journals and stores go with the directory the
// bench made, unless something went wrong: then they stay for a look.
void CleanUp(const std::string& tmpdir, bool own_tmpdir, bool problems) {
  if (own_tmpdir && !problems) {
    const std::string cmd = "rm -rf '" + tmpdir + "'";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "could not remove %s\n", tmpdir.c_str());
    }
  } else if (problems) {
    std::printf("- logs kept in %s\n\n", tmpdir.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  if (o.producer) return RunProducer(o.producer_args);

  if (o.collector.empty() || access(o.collector.c_str(), X_OK) != 0) {
    std::printf("skipped: the ticktrace-collector binary was not found (--collector %s)\n\n",
                o.collector.c_str());
    tb::PrintTarget("interference", "producer slowdown with the collector draining",
                    "not measured", "<= 20%", false, "no collector binary");
    return 0;
  }
  const std::optional<std::string> self = SelfPath();
  if (!self) return 1;
  bool own_tmpdir = false;
  if (!ticktrace::bench::MakeTmpdirUnlessGiven("/tmp/ticktrace-interference-XXXXXX", &o.tmpdir,
                                               &own_tmpdir)) {
    return 1;
  }
  const std::optional<ticktrace::Calibration> cal = ticktrace::bench::CalibrateOrSay();
  if (!cal) return 1;

  const std::vector<int> counts = ProducerCounts(o.producers_list);
  PooledRuns runs = RunRounds(o, *self, counts, cal->tsc_hz);
  PrintReport(o, counts, cal->tsc_hz, runs);
  CleanUp(o.tmpdir, own_tmpdir, !runs.problems.empty());
  return 0;
}
