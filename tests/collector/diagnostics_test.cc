// A run that is empty or mis-declared says so (collector/analysis/run_diagnostics.h):
// one line on the collector's stderr, kept in the store and repeated by
// `ticktrace-view summary`. Real collector, real producers, real segments.

#include <regex>

#include "absl/strings/str_split.h"
#include "tests/collector/live_fixture.h"

namespace ticktrace::collect::testing {
namespace {

using namespace std::chrono_literals;

const std::string kView = TICKTRACE_VIEW_BIN;
constexpr char kPrefix[] = "ticktrace-collector: ";

class DiagnosticsTest : public LiveTest {
 protected:
  // The collector's log line that begins with kPrefix + `start`, without
  // the prefix, once it is there; "" after the timeout.
  std::string WaitLine(const std::string& start, std::chrono::seconds timeout = 30s) {
    std::string found;
    WaitFor(
        [&] {
          for (absl::string_view line : absl::StrSplit(ReadFile(log()), '\n')) {
            if (absl::StartsWith(line, absl::StrCat(kPrefix, start))) {
              found = std::string(line.substr(sizeof(kPrefix) - 1));
              return true;
            }
          }
          return false;
        },
        timeout);
    return found;
  }

  // `ticktrace-view summary` of the store: its "note: " lines, without the prefix.
  std::vector<std::string> SummaryNotes() {
    const std::string out = dir_.File("summary.txt");
    const pid_t v = Spawn({kView, "summary", "--store", db()}, out);
    EXPECT_EQ(WaitExit(v, 60s), 0) << ReadFile(out);
    std::vector<std::string> notes;
    for (absl::string_view line : absl::StrSplit(ReadFile(out), '\n')) {
      if (absl::ConsumePrefix(&line, "note: ")) notes.emplace_back(line);
    }
    return notes;
  }
};

TEST_F(DiagnosticsTest, ASessionWithoutSegmentsNamesTheSessionsThatHaveThem) {
  // The producer uses session S + "x", the collector S: nothing to drain.
  const std::string other = session_ + "x";
  struct Cleanup {
    std::string session;
    ~Cleanup() { RemoveSessionSegments(session); }
  } cleanup{other};
  const pid_t producer = Spawn({kProducer, "--session", other, "--ring", "1024", "--mode", "spin",
                                "--orders", "10", "--pace-ns", "0"},
                               dir_.File("producer.log"));
  pids_.push_back(producer);
  ASSERT_EQ(WaitExit(producer, 30s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(producer);
  ASSERT_EQ(SegmentCount(other), 1u);  // left behind: no collector of its session

  const pid_t c = StartCollector({});
  const std::string line = WaitLine("no segment of session ");
  // The other sessions present depend on what else runs on the machine:
  // the list must hold S + "x" with its one segment.
  const std::string head = absl::StrCat("no segment of session ", session_,
                                        " after 3 s; sessions with segments in /dev/shm: ");
  const std::string tail = " (a producer's session is its TICKTRACE_SESSION)";
  ASSERT_TRUE(absl::StartsWith(line, head)) << line << "\n" << ReadFile(log());
  ASSERT_TRUE(absl::EndsWith(line, tail)) << line;
  const std::string list = line.substr(head.size(), line.size() - head.size() - tail.size());
  const std::vector<std::string> sessions = absl::StrSplit(list, ", ");
  EXPECT_NE(std::find(sessions.begin(), sessions.end(), other + " (1 segment)"), sessions.end())
      << line;
  // Said once, not every second.
  std::this_thread::sleep_for(2500ms);
  StopCollector(c);
  const std::string text = ReadFile(log());
  size_t said = 0;
  for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) ++said;
  EXPECT_EQ(said, 1u) << text;
  EXPECT_EQ(SummaryNotes(), std::vector<std::string>{line});
}

TEST_F(DiagnosticsTest, AMisspelledPipelineTagIsNamedWithItsClosestMatch) {
  // The producer stamps fill_rx then fill_tx; --pipeline says fil_tx.
  const pid_t c = StartCollector({"--pipeline", "fill_rx,fil_tx", "--order-timeout-ms", "200"});
  const pid_t producer = StartProducer({"--mode", "spin", "--tag-a", "fill_rx", "--tag-b",
                                        "fill_tx", "--orders", "1000", "--pace-ns", "0"});
  ASSERT_EQ(WaitExit(producer, 30s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(producer);
  // Each of the 1000 orders stamped fill_tx once: 1000 records outside the
  // pipeline, all drained long before the 2 s the check waits.
  const std::string expected =
      "--pipeline tag fil_tx never seen while undeclared tags arrive (fill_tx; "
      "outside_pipeline 1000); closest match: fil_tx -> fill_tx";
  EXPECT_EQ(WaitLine("--pipeline tag "), expected) << ReadFile(log());
  FinishRun(c);
  EXPECT_EQ(SummaryNotes(), std::vector<std::string>{expected});
}

TEST_F(DiagnosticsTest, AReversedPipelineSaysWhichOrderTheDataShows) {
  // The producer stamps a then b; --pipeline says b,a.
  const pid_t c = StartCollector({"--pipeline", "b,a", "--order-timeout-ms", "200"});
  const pid_t producer = StartProducer({"--mode", "spin", "--orders", "1000", "--pace-ns", "0"});
  ASSERT_EQ(WaitExit(producer, 30s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(producer);
  const std::string line = WaitLine("--pipeline b,a ");
  // How many samples the check had seen depends on when it ran (at least
  // 100, at most the 1000 orders' one b->a hop each); every one of them
  // runs backwards: b is stamped after a on the same thread.
  const std::regex form(
      "--pipeline b,a looks reversed or wrong: ([0-9]+) of ([0-9]+) hop samples run backwards "
      "\\(out_of_order, negative or skew\\); the data shows a,b");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, form)) << line << "\n" << ReadFile(log());
  EXPECT_EQ(m[1].str(), m[2].str());
  EXPECT_GE(std::stoll(m[2].str()), 100);
  EXPECT_LE(std::stoll(m[2].str()), 1000);
  FinishRun(c);
  EXPECT_EQ(SummaryNotes(), std::vector<std::string>{line});
}

}  // namespace
}  // namespace ticktrace::collect::testing
