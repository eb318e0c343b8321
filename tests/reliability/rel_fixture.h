// Shared fixture of the reliability tests: a session of its own, a temporary
// directory, the collector binary and rel_producer processes, and cleanup of
// every process and segment the test started.
//
// Cleanup is done by members' destructors, so it happens whatever the test
// body did (a failed ASSERT returns early): the children's process groups are
// SIGKILLed and reaped first, then the session's segments and the temporary
// directory go. A test binary that dies without running destructors (an ASan
// abort) still takes its children along: each has SIGKILL as parent-death
// signal (process_util.h, Spawn).

#ifndef TICKTRACE_TESTS_RELIABILITY_REL_FIXTURE_H_
#define TICKTRACE_TESTS_RELIABILITY_REL_FIXTURE_H_

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/collector/store_query.h"
#include "ticktrace/segment_reader.h"

namespace ticktrace::reliability {

using namespace std::chrono_literals;
using collect::testing::KillGroup;
using collect::testing::ReadFile;
using collect::testing::RemoveSessionSegments;
using collect::testing::SegmentCount;
using collect::testing::Spawn;
using collect::testing::StoreQuery;
using collect::testing::TempDir;
using collect::testing::TestTscHz;
using collect::testing::WaitExit;
using collect::testing::WaitFor;

inline const std::string kCollector = TICKTRACE_COLLECTOR_BIN;
inline const std::string kProducer = TICKTRACE_REL_PRODUCER_BIN;

// A scale factor for trial counts and run lengths: TICKTRACE_REL_SCALE=10
// runs ten times as many trials (soak.sh sets it). Default 1.
inline int Scale() {
  const char* s = std::getenv("TICKTRACE_REL_SCALE");
  const int v = s == nullptr ? 1 : std::atoi(s);
  return v < 1 ? 1 : v;
}

// The seed of this test's random choices: TICKTRACE_REL_SEED or the time.
// Printed, so that a failure can be replayed.
inline uint64_t Seed() {
  const char* s = std::getenv("TICKTRACE_REL_SEED");
  const uint64_t seed = s != nullptr ? std::strtoull(s, nullptr, 0)
                                     : static_cast<uint64_t>(std::chrono::steady_clock::now()
                                                                 .time_since_epoch()
                                                                 .count());
  std::printf("seed %llu (TICKTRACE_REL_SEED to replay)\n", static_cast<unsigned long long>(seed));
  return seed;
}

inline std::string SegmentPath(const std::string& session, pid_t pid) {
  return absl::StrCat("/dev/shm/ticktrace.", session, ".", pid);
}

inline bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// How many times `what` occurs in `text` (lines of a log, say).
inline int64_t CountOf(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Removes every segment of a session when it goes out of scope.
class SessionSegments {
 public:
  explicit SessionSegments(std::string session) : session_(std::move(session)) {}
  SessionSegments(const SessionSegments&) = delete;
  SessionSegments& operator=(const SessionSegments&) = delete;
  ~SessionSegments() { RemoveSessionSegments(session_); }

 private:
  std::string session_;
};

// The processes a test started: on destruction each one's process group is
// SIGKILLed and the process reaped.
class Children {
 public:
  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() {
    for (pid_t p : pids_) {
      KillGroup(p);
      WaitExit(p, 10s);
    }
  }
  void Add(pid_t pid) { pids_.push_back(pid); }
  // The process was reaped by the test: do not signal its (reusable) pid.
  void Forget(pid_t pid) { std::erase(pids_, pid); }

 private:
  std::vector<pid_t> pids_;
};

class RelTest : public ::testing::Test {
 protected:
  // `what` names the test in the session: t_rel_<what>_<pid>.
  explicit RelTest(const std::string& what)
      : session_(absl::StrCat("t_rel_", what, "_", getpid())), segments_(session_) {}

  std::string db() const { return dir_.File("store.db"); }
  std::string log() const { return dir_.File("collector.log"); }

  std::vector<std::string> CollectorArgv(const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = {kCollector, "--session", session_, "--db", db(),
                                     "--tsc-hz", absl::StrFormat("%.0f", TestTscHz())};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // Starts the collector (log appended to log()); with `wait_ready`, returns
  // once it printed its settings (the drain loop starts right after).
  pid_t StartCollector(const std::vector<std::string>& extra, bool wait_ready = true) {
    const size_t before = ReadFile(log()).size();
    const pid_t pid = Spawn(CollectorArgv(extra), log());
    children_.Add(pid);
    if (wait_ready) {
      EXPECT_TRUE(WaitFor(
          [&] { return ReadFile(log()).find("order timeout", before) != std::string::npos; },
          60s))
          << ReadFile(log());
    }
    return pid;
  }

  // SIGTERM, then a clean exit is expected.
  void StopCollector(pid_t pid) {
    kill(pid, SIGTERM);
    EXPECT_EQ(WaitExit(pid, 60s), 0) << ReadFile(log());
    Forget(pid);
  }

  // `pid` was reaped by the test (WaitExit): the fixture no longer kills it.
  void Forget(pid_t pid) { children_.Forget(pid); }

  // Starts rel_producer in this session; its output goes to `log_name` in the temp dir.
  pid_t StartProducer(const std::vector<std::string>& args, const std::string& log_name) {
    std::vector<std::string> argv = {kProducer, "--session", session_};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = Spawn(argv, dir_.File(log_name));
    children_.Add(pid);
    return pid;
  }

  // Opens a producer's segment once its creator published it.
  std::unique_ptr<SegmentReader> OpenSegment(pid_t pid, std::chrono::milliseconds timeout = 20s) {
    std::unique_ptr<SegmentReader> reader;
    const std::string name = absl::StrCat("ticktrace.", session_, ".", pid);
    WaitFor(
        [&] {
          absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name);
          if (r.ok()) reader = std::move(*r);
          return reader != nullptr;
        },
        timeout);
    return reader;
  }

  // Waits until the collector has consumed records of `pid`'s segment (a
  // ring's read_index moved): it attached the segment and drains it.
  bool WaitCollectorReads(pid_t pid, std::chrono::milliseconds timeout = 30s) {
    std::unique_ptr<SegmentReader> seg = OpenSegment(pid, timeout);
    if (seg == nullptr) return false;
    return WaitFor(
        [&] {
          for (uint32_t s = 0; s < seg->info().slot_count; ++s) {
            if (seg->Slot(s).read_index > 0) return true;
          }
          return false;
        },
        timeout);
  }

  // Polls the store (read-only, beside the running collector: WAL) until
  // `cond(counter value)` holds for the counter `name`; the store has it only
  // once the collector wrote a snapshot (about once a second while records flow).
  bool WaitStoreCounter(const std::string& name, const std::function<bool(int64_t)>& cond,
                        std::chrono::milliseconds timeout = 30s) {
    return WaitFor(
        [&] {
          if (!FileExists(db())) return false;
          try {
            StoreQuery q(db());
            const auto rows =
                q.Rows(absl::StrCat("SELECT value FROM counters WHERE name='", name, "'"));
            return !rows.empty() && !rows[0].empty() && !rows[0][0].empty() &&
                   cond(std::stoll(rows[0][0]));
          } catch (const std::exception&) {
            return false;  // not created yet, or busy
          }
        },
        timeout);
  }

  // A counter of the (only) run in the store.
  static int64_t Counter(StoreQuery& q, const std::string& name) {
    return q.Int(absl::StrCat("SELECT value FROM counters WHERE name='", name, "'"));
  }

  // The row-level checks (samples, stamps, orders tables) need every row
  // stored. The store writer drops rows, and counts them, only when it falls
  // more than a million samples behind; these tests' loads are far below that,
  // so a non-zero count is a failure, not a reason to skip the checks.
  static void ExpectStoreWriterKeptUp(StoreQuery& q) {
    const int64_t samples = Counter(q, "samples_not_stored");
    const int64_t stamps = Counter(q, "stamps_not_stored");
    const int64_t orders = Counter(q, "orders_not_stored");
    EXPECT_TRUE(samples == 0 && stamps == 0 && orders == 0)
        << "the store writer fell behind: samples_not_stored " << samples
        << ", stamps_not_stored " << stamps << ", orders_not_stored " << orders
        << "; the row-level checks below cannot hold";
  }

  // Waits for every segment of the session to be gone.
  void ExpectSegmentsRemoved(std::chrono::milliseconds timeout = 60s) {
    EXPECT_TRUE(WaitFor([&] { return SegmentCount(session_) == 0; }, timeout))
        << SegmentCount(session_) << " segments left\n"
        << ReadFile(log());
  }

  // Destroyed in reverse order: the children die first, then the segments
  // and the directory go.
  std::string session_;
  SessionSegments segments_;
  TempDir dir_;
  Children children_;
};

// A string literal as a template argument (RelTestOf<"churn">).
template <size_t N>
struct SessionWord {
  constexpr SessionWord(const char (&text)[N]) { std::copy_n(text, N, chars); }  // NOLINT: implicit
  char chars[N];
};

// The fixture of a test that needs nothing beyond RelTest: `using ChurnTest =
// RelTestOf<"churn">;` names its sessions t_rel_churn_<pid>.
template <SessionWord kWhat>
class RelTestOf : public RelTest {
 protected:
  RelTestOf() : RelTest(kWhat.chars) {}
};

// "key value" pairs of a producer's output, the last value of each key
// ("thread <t> tid <tid> attempted <n>" lines: "thread <t>" -> "tid <tid> attempted <n>").
inline std::map<std::string, std::string> ParseProducerLog(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    std::string key = line.substr(0, sp);
    size_t value_at = sp + 1;
    if (key == "thread") {
      const size_t sp2 = line.find(' ', sp + 1);
      if (sp2 == std::string::npos) continue;
      key = line.substr(0, sp2);
      value_at = sp2 + 1;
    }
    out[key] = line.substr(value_at);
  }
  return out;
}

}  // namespace ticktrace::reliability

#endif  // TICKTRACE_TESTS_RELIABILITY_REL_FIXTURE_H_
