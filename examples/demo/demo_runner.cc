#include "demo_runner.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "child_process.h"
#include "demo_report.h"
#include "demo_store.h"
#include "messages.h"
#include "shared_queue.h"
#include "ticktrace/environment.h"
#include "ticktrace/segment_reader.h"

namespace ticktrace::examples {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The feed's pause between attaching and its first tick: the collector scans
// for new segments every 100 ms, and an order that reaches its last stage
// before the collector has seen the other processes' segments is stitched
// without their stamps.
constexpr uint64_t kFeedStartDelayMs = 300;

// After the pipeline ends, the collector gets this long to pick up the last
// records at its own pace before SIGINT (which drains everything anyway and
// finishes every open order).
constexpr int64_t kCollectorGraceMs = 300;

std::atomic<int> g_stop_signals{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

void OnStopSignal(int /*signo*/) {
  // Relaxed: a counter polled by the main loop; nothing is published with it.
  g_stop_signals.fetch_add(1, std::memory_order_relaxed);
}

int StopSignals() { return g_stop_signals.load(std::memory_order_relaxed); }

void Say(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

void Complain(const std::string& text) {
  std::fprintf(stderr, "ticktrace-demo: %s\n", text.c_str());
  std::fflush(stderr);
}

std::string ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

std::string ResolveBinDir(const DemoOptions& options) {
  if (!options.bin_dir.empty()) return options.bin_dir;
  if (const char* env = std::getenv("TICKTRACE_BIN_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return ExecutableDir();
}

// A path as short as it can be said from the current directory.
std::string Shorten(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path rel = std::filesystem::relative(path, ec);
  if (ec || rel.empty() || absl::StartsWith(rel.string(), "..")) return path;
  return (std::filesystem::path(".") / rel).string();
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The lines a pipeline program printed on exit (its one-line result).
std::string LastLine(const std::string& log) { return TailLines(log, 1, ""); }

class DemoRun {
 public:
  DemoRun(const DemoOptions& options, store::StoreUri store, std::string bin_dir,
          std::string session, std::string log_dir)
      : options_(options),
        store_(std::move(store)),
        bin_dir_(std::move(bin_dir)),
        session_(std::move(session)),
        log_dir_(std::move(log_dir)) {}

  ~DemoRun() {
    StopPipeline();
    StopCollector(/*grace=*/milliseconds(0));
    RemoveLeftovers(/*report=*/true);
    std::error_code ec;
    std::filesystem::remove_all(log_dir_, ec);
  }

  int Run();

 private:
  enum class Outcome { kDone, kFailed, kInterrupted };

  std::string Bin(const char* name) const { return (std::filesystem::path(bin_dir_) / name).string(); }
  std::string LogPath(const std::string& name) const {
    return (std::filesystem::path(log_dir_) / (name + ".log")).string();
  }
  absl::Status StartCollector();
  Outcome WaitForCollectorRun(std::optional<store::RunRow>* run, std::string* report);
  absl::Status StartStage(StageIndex stage, double tsc_hz);
  Outcome StartPipeline(double tsc_hz);
  Outcome WaitForPipeline();
  void StopPipeline();
  bool StopCollector(milliseconds grace);
  void RemoveLeftovers(bool report);
  void ReportChildFailure(const Child& child);

  const DemoOptions& options_;
  const store::StoreUri store_;  // options_.db_path, parsed
  const std::string bin_dir_;
  const std::string session_;
  const std::string log_dir_;
  std::optional<Child> collector_;
  std::vector<Child> pipeline_;  // gateway, strategy, feed: start order
  std::array<int, 3> cpus_ = {-1, -1, -1};
};

absl::Status DemoRun::StartCollector() {
  ChildSpec spec;
  spec.name = "collector";
  spec.path = Bin("ticktrace-collector");
  const std::array<std::string, 2> store_args = StoreArgs(store_);
  spec.args = {"--session", session_, store_args[0], store_args[1],
               "--pipeline", kPipeline,
               "--order-timeout-ms", absl::StrCat(options_.order_timeout_ms)};
  if (options_.include_flagged) spec.args.push_back("--include-flagged");
  if (options_.tsc_hz > 0) {
    spec.args.push_back("--tsc-hz");
    spec.args.push_back(absl::StrCat(options_.tsc_hz));
  }
  spec.log_path = LogPath("collector");
  spec.env = {{"TICKTRACE_SESSION", session_}};
  absl::StatusOr<Child> child = Child::Spawn(spec);
  if (!child.ok()) return child.status();
  collector_.emplace(std::move(*child));
  return absl::OkStatus();
}

// Waits until the collector has calibrated and started its run. Its signal is
// the calibration report on its output, printed (and flushed) after the run
// row is in the store; only then does the demo read the store, so that it
// never holds a lock while the collector sets the store up. The pipeline uses
// the run's TSC frequency for its busy-waits.
DemoRun::Outcome DemoRun::WaitForCollectorRun(std::optional<store::RunRow>* run,
                                              std::string* report) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  std::optional<Clock::time_point> output_seen;
  while (true) {
    if (StopSignals() > 0) return Outcome::kInterrupted;
    if (collector_->Poll()) {
      Complain(absl::StrCat("ticktrace-collector ", collector_->ExitDescription(),
                            " before it started a run; its output:"));
      ReportChildFailure(*collector_);
      return Outcome::kFailed;
    }
    if (!output_seen && !ReadFileOrEmpty(collector_->log_path()).empty()) {
      output_seen = Clock::now();
    }
    // The report is written in one piece; give a split write a moment.
    if (output_seen && Clock::now() - *output_seen > milliseconds(100)) {
      absl::StatusOr<std::optional<store::RunRow>> found = FindRun(store_, session_);
      if (!found.ok()) {
        Complain(std::string(found.status().message()));
        return Outcome::kFailed;
      }
      if (found->has_value()) {
        *run = std::move(*found);
        *report = ReadFileOrEmpty(collector_->log_path());
        return Outcome::kDone;
      }
    }
    if (Clock::now() > deadline) {
      Complain(absl::StrCat("ticktrace-collector started no run for session ", session_, " in ",
                            StoreArgs(store_)[1], " within 60 s; its output so far:"));
      ReportChildFailure(*collector_);
      return Outcome::kFailed;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
}

absl::Status DemoRun::StartStage(StageIndex stage, double tsc_hz) {
  ChildSpec spec;
  spec.name = kStageNames[stage];
  spec.path = Bin(absl::StrCat("ticktrace-example-", kStageNames[stage]).c_str());
  spec.args = {"--session", session_,
               "--work-ns", absl::StrCat(options_.work_ns[stage]),
               "--pin", absl::StrCat(cpus_[stage]),
               "--tsc-hz", absl::StrFormat("%.3f", tsc_hz)};
  if (stage == kFeed) {
    spec.args.insert(spec.args.end(),
                     {"--ticks", absl::StrCat(options_.ticks), "--rate",
                      absl::StrCat(options_.rate_per_s), "--start-delay-ms",
                      absl::StrCat(kFeedStartDelayMs)});
  }
  spec.log_path = LogPath(spec.name);
  spec.process_group = pipeline_.empty() ? 0 : pipeline_.front().pid();  // one group
  spec.env = {{"TICKTRACE_SESSION", session_}};
  absl::StatusOr<Child> child = Child::Spawn(spec);
  if (!child.ok()) return child.status();
  pipeline_.push_back(std::move(*child));
  return absl::OkStatus();
}

DemoRun::Outcome DemoRun::StartPipeline(double tsc_hz) {
  // Consumers first: each creates its input queue (after its trace segment),
  // and the feed starts once both queues exist, so that the collector has
  // seen every segment before the first order can finish (see kFeedStartDelayMs).
  for (StageIndex stage : {kGateway, kStrategy}) {
    if (absl::Status s = StartStage(stage, tsc_hz); !s.ok()) {
      Complain(std::string(s.message()));
      return Outcome::kFailed;
    }
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  const std::vector<std::string> queues = AllQueueSegmentNames(session_);
  while (true) {
    const std::vector<std::string> entries = SessionShmEntries(session_);
    size_t ready = 0;
    for (const std::string& q : queues) {
      ready += std::find(entries.begin(), entries.end(), q) != entries.end() ? 1 : 0;
    }
    if (ready == queues.size()) break;
    if (StopSignals() > 0) return Outcome::kInterrupted;
    for (Child& child : pipeline_) {
      if (child.Poll()) {
        Complain(absl::StrCat("ticktrace-example-", child.name(), " ", child.ExitDescription(),
                              " while starting; its output:"));
        ReportChildFailure(child);
        return Outcome::kFailed;
      }
    }
    if (Clock::now() > deadline) {
      Complain("the strategy and the gateway did not create their queues within 30 s");
      return Outcome::kFailed;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (absl::Status s = StartStage(kFeed, tsc_hz); !s.ok()) {
    Complain(std::string(s.message()));
    return Outcome::kFailed;
  }
  return Outcome::kDone;
}

DemoRun::Outcome DemoRun::WaitForPipeline() {
  double expected_s = options_.rate_per_s > 0 ? options_.ticks / options_.rate_per_s : 1.0;
  const auto limit = options_.timeout_s > 0
                         ? std::chrono::seconds(options_.timeout_s)
                         : std::chrono::seconds(static_cast<int64_t>(2 * expected_s) + 60);
  const auto deadline = Clock::now() + limit;
  while (true) {
    if (StopSignals() > 0) return Outcome::kInterrupted;
    bool all_done = true;
    for (Child& child : pipeline_) {
      if (!child.Poll()) {
        all_done = false;
      } else if (child.exit_code() != 0) {
        Complain(absl::StrCat("ticktrace-example-", child.name(), " ", child.ExitDescription(),
                              "; stopping the others. Its output:"));
        ReportChildFailure(child);
        return Outcome::kFailed;
      }
    }
    if (all_done) return Outcome::kDone;
    if (collector_->Poll()) {
      Complain(absl::StrCat("ticktrace-collector ", collector_->ExitDescription(),
                            " while the pipeline ran; its output:"));
      ReportChildFailure(*collector_);
      return Outcome::kFailed;
    }
    if (Clock::now() > deadline) {
      Complain(absl::StrCat("the pipeline did not finish within ",
                            std::chrono::duration_cast<std::chrono::seconds>(limit).count(),
                            " s (--timeout-s); stopping it"));
      return Outcome::kFailed;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

void DemoRun::StopPipeline() {
  bool any_running = false;
  for (Child& child : pipeline_) any_running |= !child.Poll();
  if (!any_running) return;
  if (!pipeline_.empty()) kill(-pipeline_.front().pid(), SIGTERM);  // the whole group
  for (Child& child : pipeline_) child.Signal(SIGTERM);  // and any that is not in it
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  for (Child& child : pipeline_) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (!child.WaitFor(std::max(left, milliseconds(0)))) {
      Complain(absl::StrCat(child.name(), " (pid ", child.pid(),
                            ") ignored SIGTERM for 3 s; killing it"));
      child.Signal(SIGKILL);
      child.WaitFor(std::chrono::seconds(5));
    }
  }
}

bool DemoRun::StopCollector(milliseconds grace) {
  if (!collector_ || collector_->Poll()) return collector_ && collector_->exit_code() == 0;
  // Let open orders reach their last stage or time out before the final drain.
  const int signals_before = StopSignals();
  const auto grace_end = Clock::now() + grace;
  while (Clock::now() < grace_end && StopSignals() == signals_before && !collector_->Poll()) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  collector_->Signal(SIGINT);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  const int signals_at_stop = StopSignals();
  while (!collector_->Poll()) {
    if (StopSignals() > signals_at_stop) {
      Complain("second interrupt: killing the collector without waiting for its flush");
      collector_->Signal(SIGKILL);
      collector_->WaitFor(std::chrono::seconds(5));
      break;
    }
    if (Clock::now() > deadline) {
      Complain("the collector did not stop within 60 s of SIGINT; killing it");
      collector_->Signal(SIGKILL);
      collector_->WaitFor(std::chrono::seconds(5));
      break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return collector_->exit_code() == 0;
}

void DemoRun::RemoveLeftovers(bool report) {
  for (const std::string& name : SessionShmEntries(session_)) {
    if (!ShmEntryIsOurs(name)) continue;  // another user's: not ours to remove
    // Records no collector drained (it failed, e.g. on a full disk) stay for
    // one that resumes the run from its journal: never unlinked.
    if (const uint64_t undrained = UndrainedRecords(name); undrained > 0) {
      Complain(absl::StrCat("kept /dev/shm/", name, ": it holds ", undrained,
                            " undrained records; ticktrace-collector --session ", session_,
                            " ", StoreArgsText(store_), " drains them"));
      continue;
    }
    if (shm_unlink(name.c_str()) == 0 && report) {
      Complain(absl::StrCat("removed leftover /dev/shm/", name));
    }
  }
}

void DemoRun::ReportChildFailure(const Child& child) {
  std::string log = ReadFileOrEmpty(child.log_path());
  if (log.empty()) log = "(no output)\n";
  std::fputs(TailLines(log, options_.verbose ? 1000 : 20, "  | ").c_str(), stderr);
}

int DemoRun::Run() {
  const ExpectedCounts expected = CountsForTicks(options_.ticks);
  if (options_.pin) {
    cpus_ = options_.cpus[0] >= 0 ? options_.cpus : PinLayout(AllowedCpus());
  }
  Say(absl::StrCat("ticktrace-demo: session ", session_, ", store ", options_.db_path, "\n"));
  Say("starting ticktrace-collector (it calibrates the TSC first, about a second)...\n");
  if (absl::Status s = StartCollector(); !s.ok()) {
    Complain(std::string(s.message()));
    return kDemoFailed;
  }
  std::optional<store::RunRow> run;
  std::string calibration_report;
  switch (WaitForCollectorRun(&run, &calibration_report)) {
    case Outcome::kDone:
      break;
    case Outcome::kInterrupted:
      Complain("interrupted before the pipeline started");
      return kDemoInterrupted;
    case Outcome::kFailed:
      return kDemoFailed;
  }
  Say(absl::StrCat("\n== calibration (ticktrace-collector, run ", run->run_id, ") ==\n",
                   calibration_report.empty() ? FormatCalibration(*run)
                                              : TailLines(calibration_report, 1000, "  ")));

  const double expected_s = options_.rate_per_s > 0 ? options_.ticks / options_.rate_per_s : 0;
  std::string pin_text = "not pinned (add --pin)";
  if (options_.pin) {
    pin_text = absl::StrFormat("pinned: feed cpu%d, strategy cpu%d, gateway cpu%d", cpus_[kFeed],
                               cpus_[kStrategy], cpus_[kGateway]);
  }
  Say(absl::StrFormat(
      "\n== running the pipeline: %d ticks at %s ticks/s%s ==\n"
      "  work per message: feed %s, strategy %s, gateway %s; %s\n",
      options_.ticks, options_.rate_per_s > 0 ? absl::StrCat(options_.rate_per_s) : "max",
      expected_s > 0 ? absl::StrFormat(" (~%.1f s)", expected_s) : "",
      FormatDuration(static_cast<double>(options_.work_ns[kFeed])),
      FormatDuration(static_cast<double>(options_.work_ns[kStrategy])),
      FormatDuration(static_cast<double>(options_.work_ns[kGateway])), pin_text));
  Outcome outcome = StartPipeline(run->tsc_hz);
  if (outcome == Outcome::kDone) outcome = WaitForPipeline();
  StopPipeline();
  if (outcome == Outcome::kDone) {
    for (const Child& child : pipeline_) Say(absl::StrCat("  ", LastLine(ReadFileOrEmpty(child.log_path()))));
  }
  Say("stopping the collector (it drains every ring and flushes the store)...\n");
  const bool collector_ok = StopCollector(
      outcome == Outcome::kDone ? milliseconds(kCollectorGraceMs) : milliseconds(0));
  if (options_.verbose) {
    Say(absl::StrCat("\n== ticktrace-collector output ==\n",
                     TailLines(ReadFileOrEmpty(collector_->log_path()), 1000, "  | ")));
  }
  if (!collector_ok) {
    Complain(absl::StrCat("ticktrace-collector ", collector_->ExitDescription(), "; its output:"));
    ReportChildFailure(*collector_);
  }
  RemoveLeftovers(/*report=*/true);
  if (outcome == Outcome::kInterrupted) {
    Complain(absl::StrCat("interrupted; the store holds a partial run ", run->run_id, ": ",
                          Shorten(Bin("ticktrace-view")), " summary ",
                          StoreArgsText(store_), " --run ", run->run_id));
    return kDemoInterrupted;
  }
  if (outcome == Outcome::kFailed || !collector_ok) return kDemoFailed;

  absl::StatusOr<DemoRunFigures> summary = ReadRunSummary(store_, run->run_id);
  if (!summary.ok()) {
    Complain(std::string(summary.status().message()));
    return kDemoFailed;
  }
  Say(absl::StrCat("\n== where the time went (run ", run->run_id, ", p50 against the work each stage was given) ==\n",
                   FormatStageTable(*summary, options_.work_ns), "\n",
                   FormatCounts(*summary, expected)));
  const std::string view = Bin("ticktrace-view");
  Say(absl::StrCat("\n== try next ==\n",
                   FormatNextSteps(Shorten(view), store_, run->run_id,
                                   options_.include_flagged,
                                   SlowestOrder(store_, run->run_id).value_or(0))));
  if (!Executable(view)) {
    Say(absl::StrCat("  (", view, " is not built yet: cmake --build <build> --target ticktrace-view)\n"));
  }
  return kDemoOk;
}

}  // namespace

void InstallDemoSignalHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &sa, nullptr);
}

uint64_t UndrainedRecords(const std::string& name) {
  if (!absl::StartsWith(name, "ticktrace.")) return 0;  // a queue of the example pipeline
  absl::StatusOr<std::unique_ptr<ticktrace::SegmentReader>> seg =
      ticktrace::SegmentReader::Open(name);
  if (!seg.ok()) return 0;  // not a segment a collector could drain either
  std::vector<uint64_t> pending;
  if (!(*seg)->PendingRecords(&pending)) return 0;
  uint64_t n = 0;
  for (uint64_t p : pending) n += std::min<uint64_t>(p, (*seg)->info().ring_capacity);
  return n;
}

bool ShmEntryIsOurs(const std::string& name) {
  struct stat st;
  return lstat(absl::StrCat("/dev/shm/", name).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         st.st_uid == geteuid();
}

std::vector<std::string> SessionShmEntries(const std::string& session) {
  std::vector<std::string> found;
  const std::string trace_prefix = absl::StrCat("ticktrace.", session, ".");
  const std::string queue_prefix = absl::StrCat("ticktrace-example.", session, ".");
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (absl::StartsWith(name, trace_prefix) || absl::StartsWith(name, queue_prefix)) {
      found.push_back(name);
    }
  }
  closedir(dir);
  return found;
}

namespace {

// The pid in a demo session name "demo-<time>-<pid>", or 0 when `session` is
// not such a name.
pid_t DemoPidOfSession(absl::string_view session) {
  std::vector<absl::string_view> parts = absl::StrSplit(session, '-');
  int64_t time_s = 0, pid = 0;
  if (parts.size() != 3 || parts[0] != "demo" || !absl::SimpleAtoi(parts[1], &time_s) ||
      !absl::SimpleAtoi(parts[2], &pid) || pid <= 0) {
    return 0;
  }
  return static_cast<pid_t>(pid);
}

// True when `pid` is a running ticktrace-demo.
bool IsRunningDemo(pid_t pid) {
  if (!ProcessAlive(pid)) return false;
  std::string comm = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/comm"));
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm.empty() || comm == "ticktrace-demo";  // unreadable: assume it is one
}

}  // namespace

std::vector<std::string> SweepStaleDemoSessions() {
  std::vector<std::string> removed;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return removed;
  std::vector<std::string> names;
  while (const dirent* e = readdir(dir)) names.emplace_back(e->d_name);
  closedir(dir);
  for (const std::string& name : names) {
    // "ticktrace.<session>.<pid>", "ticktrace.<session>.<pid>.<n>" (the plain
    // name was taken: docs/abi.md) or "ticktrace-example.<session>.<channel>";
    // only files of our uid (another user's are not ours to remove).
    std::vector<absl::string_view> parts = absl::StrSplit(name, '.');
    const bool trace = parts.size() >= 3 && parts.size() <= 4 && parts[0] == "ticktrace";
    const bool queue = parts.size() == 3 && parts[0] == "ticktrace-example";
    if ((!trace && !queue) || !ShmEntryIsOurs(name)) continue;
    const pid_t demo_pid = DemoPidOfSession(parts[1]);
    if (demo_pid == 0 || IsRunningDemo(demo_pid)) continue;
    if (parts[0] == "ticktrace") {
      int64_t owner = 0;
      if (!absl::SimpleAtoi(parts[2], &owner) || ProcessAlive(static_cast<int32_t>(owner))) continue;
      if (UndrainedRecords(name) > 0) continue;  // a resumed collector drains them
    }
    if (shm_unlink(name.c_str()) == 0) removed.push_back(name);
  }
  return removed;
}

int RunDemo(const DemoOptions& options) {
  // --db PATH and --store URI both land in db_path (demo_options.cc).
  absl::StatusOr<store::StoreUri> store = store::ParseStoreUri(options.db_path);
  if (!store.ok()) {
    Complain(std::string(store.status().message()));
    return kDemoBadInput;
  }
  std::string why;
  // A store on a server is a database there, not a file here.
  const std::optional<std::string> store_file = store->local_file();
  const StoreFileKind store_kind =
      store_file.has_value() ? ClassifyStoreFile(*store_file, &why) : StoreFileKind::kAbsent;
  switch (store_kind) {
    case StoreFileKind::kAbsent:
    case StoreFileKind::kTicktraceStore:
      break;
    case StoreFileKind::kOther:
      Complain(absl::StrCat("--db ", options.db_path, ": refusing to use an existing file (", why,
                            "); it is left untouched. Pass another --db path."));
      return kDemoBadInput;
  }
  const std::string bin_dir = ResolveBinDir(options);
  for (const char* program : {"ticktrace-collector", "ticktrace-example-feed",
                              "ticktrace-example-strategy", "ticktrace-example-gateway"}) {
    const std::string path = (std::filesystem::path(bin_dir) / program).string();
    if (!Executable(path)) {
      Complain(absl::StrCat(path, " not found or not executable; build it (cmake --build <build> "
                            "--target ", program, ") or point --bin-dir / $TICKTRACE_BIN_DIR at it"));
      return kDemoFailed;
    }
  }
  if (store_kind == StoreFileKind::kTicktraceStore) {
    Say(absl::StrCat("ticktrace-demo: ", options.db_path,
                     " is a ticktrace store: this run is appended to it\n"));
  }
  for (const std::string& name : SweepStaleDemoSessions()) {
    Complain(absl::StrCat("removed /dev/shm/", name, ", left by an earlier demo that was killed"));
  }
  const std::string session =
      options.session.empty()
          ? absl::StrFormat("demo-%d-%d", static_cast<int64_t>(std::time(nullptr)), getpid())
          : options.session;
  for (const std::string& name : SessionShmEntries(session)) {
    // Another user's file cannot make the session ours in use: the programs
    // pick another segment name and the collector does not drain it.
    if (!ShmEntryIsOurs(name)) continue;
    Complain(absl::StrCat("session ", session, " is in use (/dev/shm/", name,
                          " exists); choose another --session"));
    return kDemoBadInput;
  }
  char log_dir_template[] = "/tmp/ticktrace-demo.XXXXXX";
  if (mkdtemp(log_dir_template) == nullptr) {
    Complain(absl::StrCat("cannot create a directory for the programs' logs in /tmp"));
    return kDemoFailed;
  }
  DemoRun run(options, *std::move(store), bin_dir, session, log_dir_template);
  return run.Run();
}

}  // namespace ticktrace::examples
