// The binary's contract: one clear line on stderr and exit 2 for usage
// errors, exit 1 for runtime errors, and nothing created or overwritten.

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect {
namespace {

using testing::ArchiveBuilder;
using testing::ReadFile;
using testing::Spawn;
using testing::Stamp;
using testing::StoreQuery;
using testing::TempDir;
using testing::WaitExit;

class CliTest : public ::testing::Test {
 protected:
  // Runs the collector with `args`; returns the exit code; output in out_.
  // Unless `args` name a session, the run gets one of its own, so that no
  // test here can drain (or be refused by) another collector's session.
  int Run(std::vector<std::string> args) {
    if (std::none_of(args.begin(), args.end(),
                     [](const std::string& a) { return a.rfind("--session", 0) == 0; })) {
      static int runs = 0;
      args.push_back("--session");
      args.push_back("t_cli_" + std::to_string(getpid()) + "_" + std::to_string(++runs));
    }
    args.insert(args.begin(), TICKTRACE_COLLECTOR_BIN);
    const std::string log = dir_.File("out.log");
    std::remove(log.c_str());
    const int rc = WaitExit(Spawn(args, log), std::chrono::seconds(30));
    out_ = ReadFile(log);
    return rc;
  }
  void WriteFile(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  void MakeSqlite(const std::string& path, const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

  TempDir dir_;
  std::string out_;
};

// --help exits 0 with our own usage, every flag spelled with
// dashes, and no Abseil wording ("Flags from ...", "--helpfull").
TEST_F(CliTest, HelpListsTheFlagsWithDashes) {
  EXPECT_EQ(Run({"--help"}), 0) << out_;
  for (const char* flag : {"--session", "--db", "--store", "--pipeline", "--order-timeout-ms",
                           "--duration-s", "--raw", "--replay", "--tsc-hz", "--include-flagged",
                           "--detail", "--interval-s", "--retain-detail", "--retain",
                           "--skew-interval", "--skew-cores", "--allow-uid", "--group-readable",
                           "--max-segment-bytes",
                           "--correct-skew", "--help", "--version"}) {
    EXPECT_NE(out_.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(out_.rfind("usage: ticktrace-collector ", 0), 0u) << out_;
  for (const char* leak : {"Flags from", "helpfull", "absl", "Abseil", "_ms", "_s ", "tsc_hz",
                           "include_flagged"}) {
    EXPECT_EQ(out_.find(leak), std::string::npos) << leak << "\n" << out_;
  }
  EXPECT_EQ(Run({"-h"}), 0);
  EXPECT_EQ(out_.rfind("usage: ticktrace-collector ", 0), 0u) << out_;
}

// "ticktrace-collector <version> (<commit>)", exit 0: the version is the
// project's (CMakeLists.txt project(VERSION)), the commit hex or "unknown".
TEST_F(CliTest, VersionPrintsVersionAndCommit) {
  EXPECT_EQ(Run({"--version"}), 0) << out_;
  EXPECT_TRUE(std::regex_match(out_, std::regex("ticktrace-collector [0-9]+\\.[0-9]+\\.[0-9]+ "
                                                "\\(([0-9a-f]{4,40}|unknown)\\)\n")))
      << out_;
  EXPECT_EQ(out_.find("Debug build"), std::string::npos) << out_;
}

// The underscore spellings earlier releases documented still work, silently,
// as do Abseil's --noflag negations.
TEST_F(CliTest, UnderscoreSpellingsStillAccepted) {
  const std::string db = dir_.File("u.db");
  EXPECT_EQ(Run({"--db", db, "--order_timeout_ms=0"}), 2);
  EXPECT_NE(out_.find("--order-timeout-ms 0: must be between"), std::string::npos) << out_;
  EXPECT_EQ(Run({"--db", db, "--noinclude_flagged", "--include_flagged=false", "--no-correct-skew",
                 "--duration_s", "-1"}),
            2);
  EXPECT_NE(out_.find("--duration-s"), std::string::npos) << out_;
  EXPECT_FALSE(Exists(db));
}

TEST_F(CliTest, UsageErrorsExitTwoWithOneLine) {
  const std::string db = dir_.File("x.db");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--bogus"},
           {"--order-timeout-ms", "-5"},
           {"--order-timeout-ms", "abc"},
           {"--tsc-hz", "fast"},
           {"--tsc-hz", "5"},
           {"--duration-s", "-1"},
           {"--pipeline", "a,,b"},
           {"--pipeline", "a,b,a"},
           {"--session", "bad/name"},
           {"--raw", "r", "--replay", "p"},
           {"--journal-cap", "1000"},
           {"--journal-cap", "lots"},
           {"stray"},
           {"--include-flagged=maybe"},
           {"--flagfile=/nonexistent/flags"},
           {"--session"}}) {
    std::vector<std::string> a = args;
    a.push_back("--db");
    a.push_back(db);
    EXPECT_EQ(Run(a), 2) << args[0] << ": " << out_;
    EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 1) << out_;
    EXPECT_EQ(out_.rfind("ticktrace-collector: ", 0), 0u) << out_;
    EXPECT_FALSE(Exists(db)) << args[0];
  }
}

TEST_F(CliTest, RefusesANonTicktraceFileUntouched) {
  const std::string text = dir_.File("notes.txt");
  WriteFile(text, "my precious notes\n");
  EXPECT_EQ(Run({"--db", text, "--tsc-hz", "2e9", "--duration-s", "0.1"}), 1);
  EXPECT_NE(out_.find("not a ticktrace store"), std::string::npos) << out_;
  EXPECT_EQ(ReadFile(text), "my precious notes\n");

  const std::string other = dir_.File("other.db");
  MakeSqlite(other, "CREATE TABLE accounts(id INTEGER); INSERT INTO accounts VALUES(1);");
  const std::string before = ReadFile(other);
  EXPECT_EQ(Run({"--db", other, "--tsc-hz", "2e9", "--duration-s", "0.1"}), 1);
  EXPECT_NE(out_.find("not a ticktrace store"), std::string::npos) << out_;
  EXPECT_EQ(ReadFile(other), before);
  EXPECT_FALSE(Exists(other + ".ttjournal"));
}

TEST_F(CliTest, RefusesANewerSchema) {
  const std::string db = dir_.File("new.db");
  MakeSqlite(db,
             "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
             "INSERT INTO meta VALUES('app','ticktrace'),('schema_version','99');");
  const std::string before = ReadFile(db);
  EXPECT_EQ(Run({"--db", db, "--tsc-hz", "2e9", "--duration-s", "0.1"}), 1);
  EXPECT_NE(out_.find("newer"), std::string::npos) << out_;
  EXPECT_EQ(ReadFile(db), before);
}

TEST_F(CliTest, RefusesABadArchiveAndCreatesNothing) {
  const std::string bad = dir_.File("bad.raw");
  WriteFile(bad, std::string(100, 'x'));
  const std::string db = dir_.File("r.db");
  EXPECT_EQ(Run({"--replay", bad, "--db", db}), 1);
  EXPECT_NE(out_.find("not a ticktrace archive"), std::string::npos) << out_;
  EXPECT_FALSE(Exists(db));
  EXPECT_EQ(Run({"--replay", dir_.File("missing.raw"), "--db", db}), 1);
  EXPECT_FALSE(Exists(db));
}

TEST_F(CliTest, RefusesARawArchiveThatCannotBeCreated) {
  const std::string db = dir_.File("m.db");
  EXPECT_EQ(Run({"--raw", dir_.File("missing/dir/x.raw"), "--db", db, "--tsc-hz", "2e9",
                 "--duration-s", "0.1"}),
            1);
  EXPECT_NE(out_.find("cannot create"), std::string::npos) << out_;
  EXPECT_FALSE(Exists(db));
  EXPECT_FALSE(Exists(db + ".ttjournal"));
}

TEST_F(CliTest, RefusesToOverwriteARawArchive) {
  const std::string raw = dir_.File("keep.raw");
  WriteFile(raw, "keep me");
  const std::string db = dir_.File("k.db");
  EXPECT_EQ(Run({"--raw", raw, "--db", db, "--tsc-hz", "2e9", "--duration-s", "0.1"}), 1);
  EXPECT_NE(out_.find("refusing to overwrite"), std::string::npos) << out_;
  EXPECT_EQ(ReadFile(raw), "keep me");
  EXPECT_FALSE(Exists(db));
}

// An archive of known content, replayed by the binary: orders 1..100 with
// a->b = 100 + 10*i ns (1 GHz: one tick is one ns). By hand: count 100, min
// 110, max 1100, mean 605; p50 is rank 50, 600 ns, which the collector's
// histogram reports within 1/256 (docs/collector.md).
TEST_F(CliTest, ReplaysAnArchiveIntoAStore) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  std::vector<abi::Record> records;
  for (uint64_t i = 1; i <= 100; ++i) {
    records.push_back(Stamp(0, i, i * 10000));
    records.push_back(Stamp(1, i, i * 10000 + 100 + 10 * i));
  }
  b.Records(1, records);
  const std::string raw = dir_.File("in.raw");
  b.Write(raw);
  const std::string db = dir_.File("replay.db");
  EXPECT_EQ(Run({"--replay", raw, "--db", db, "--pipeline", "a,b"}), 0) << out_;
  EXPECT_NE(out_.find("a->b"), std::string::npos) << out_;
  StoreQuery q(db);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), 100);
  EXPECT_EQ(q.Real("SELECT min_ns FROM stage_stats WHERE stage='a->b'"), 110);
  EXPECT_EQ(q.Real("SELECT max_ns FROM stage_stats WHERE stage='a->b'"), 1100);
  EXPECT_EQ(q.Real("SELECT mean_ns FROM stage_stats WHERE stage='a->b'"), 605);
  EXPECT_NEAR(q.Real("SELECT p50_ns FROM stage_stats WHERE stage='a->b'"), 600, 600.0 / 256);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), 100);
  EXPECT_EQ(q.Text("SELECT calibration_source FROM runs"), "replay");
}

// A live run with --raw, then a replay of that archive: the same numbers.
// The live run has known content: one real producer (spin mode) stamps a,
// then b, for orders 1..300. By hand: 600 records drained, 300 complete
// orders, 300 samples of a->b and of total. Both stores' per-stage figures
// are equal, and their a->b extremes equal the stamps' own TSC differences
// (at the given 2 GHz: ticks / 2 ns), computed here with SQL on `stamps`.
TEST_F(CliTest, RawArchiveReplaysToTheSameResult) {
  constexpr int kOrders = 300;
  const std::string session = "t_cli_raw_" + std::to_string(getpid());
  const std::string raw = dir_.File("live.raw");
  const std::string live_db = dir_.File("live.db");
  const std::string replay_db = dir_.File("replay.db");
  const std::string live_log = dir_.File("live.log");
  const pid_t collector =
      Spawn({TICKTRACE_COLLECTOR_BIN, "--raw", raw, "--db", live_db, "--tsc-hz", "2e9",
             "--session", session, "--pipeline", "a,b"},
            live_log);
  // Ready once the calibration report is out (the drain loop starts right after).
  const bool ready = testing::WaitFor(
      [&] { return ReadFile(live_log).find("order timeout") != std::string::npos; },
      std::chrono::seconds(20));
  pid_t producer = -1;
  if (ready) {
    producer = Spawn({TICKTRACE_TEST_PRODUCER_BIN, "--session", session, "--mode", "spin",
                      "--orders", std::to_string(kOrders), "--pace-ns", "1000"},
                     dir_.File("producer.log"));
    EXPECT_EQ(WaitExit(producer, std::chrono::seconds(60)), 0)
        << ReadFile(dir_.File("producer.log"));
    // Drained to the end: the collector removes an exited producer's segment.
    EXPECT_TRUE(testing::WaitFor([&] { return testing::SegmentCount(session) == 0; },
                                 std::chrono::seconds(30)));
  }
  kill(collector, SIGTERM);
  const int live_rc = WaitExit(collector, std::chrono::seconds(30));
  testing::RemoveSessionSegments(session);
  ASSERT_TRUE(ready) << ReadFile(live_log);
  ASSERT_EQ(live_rc, 0) << ReadFile(live_log);
  ASSERT_TRUE(Exists(raw));

  EXPECT_EQ(Run({"--replay", raw, "--db", replay_db, "--pipeline", "a,b"}), 0) << out_;
  StoreQuery live(live_db), replay(replay_db);
  for (StoreQuery* q : {&live, &replay}) {
    EXPECT_EQ(q->Int("SELECT value FROM counters WHERE name = 'drained'"), 2 * kOrders);
    EXPECT_EQ(q->Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), kOrders);
    EXPECT_EQ(q->Int("SELECT COUNT(*) FROM samples WHERE stage = 'a->b'"), kOrders);
    EXPECT_EQ(q->Int("SELECT count FROM stage_stats WHERE stage = 'a->b'"), kOrders);
    EXPECT_EQ(q->Int("SELECT count FROM stage_stats WHERE stage = 'total'"), kOrders);
    EXPECT_EQ(q->Int("SELECT SUM(order_id) FROM orders"), kOrders * (kOrders + 1) / 2);
    // a->b's extremes from the stamps themselves: b's TSC minus a's, in ns.
    const std::string diffs =
        "(SELECT (b.tsc - a.tsc) / 2.0 AS ns FROM stamps a JOIN stamps b "
        "ON a.order_id = b.order_id AND a.run_id = b.run_id WHERE a.tag = 'a' AND b.tag = 'b')";
    EXPECT_EQ(q->Real("SELECT min_ns FROM stage_stats WHERE stage = 'a->b'"),
              q->Real("SELECT MIN(ns) FROM " + diffs));
    EXPECT_EQ(q->Real("SELECT max_ns FROM stage_stats WHERE stage = 'a->b'"),
              q->Real("SELECT MAX(ns) FROM " + diffs));
  }
  const std::string sql =
      "SELECT stage, position, count, min_ns, max_ns, mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, "
      "migrated, negative, cross_core, samples_all FROM stage_stats ORDER BY stage";
  EXPECT_EQ(live.Rows(sql), replay.Rows(sql));
  EXPECT_EQ(live.Rows("SELECT order_id, stage, latency_ns, flags FROM samples ORDER BY 1, 2"),
            replay.Rows("SELECT order_id, stage, latency_ns, flags FROM samples ORDER BY 1, 2"));
  EXPECT_EQ(replay.Text("SELECT calibration_source FROM runs"), "replay");
}

// A journal left by a collector killed before it wrote anything is discarded;
// one holding another session's unfinished run is refused, untouched.
TEST_F(CliTest, HandlesLeftoverJournals) {
  const std::string db = dir_.File("j.db");
  const std::string session = "t_cli_journal_" + std::to_string(getpid());
  ArchiveHeader h;
  h.kind = ArchiveKind::kJournal;
  h.run_id = 7;
  WriteFile(db + ".ttjournal", EncodeArchiveHeader(h));
  EXPECT_EQ(Run({"--db", db, "--session", session, "--tsc-hz", "2e9", "--duration-s", "0.1"}), 0)
      << out_;
  EXPECT_NE(out_.find("holds no run info"), std::string::npos) << out_;
  EXPECT_FALSE(Exists(db + ".ttjournal"));

  RunInfo other;
  other.session = "someone_else";
  other.tsc_hz = 2e9;
  std::string journal = EncodeArchiveHeader(h);
  ChunkEncoder::RunInfo(other.ToJson(), &journal);
  WriteFile(db + ".ttjournal", journal);
  EXPECT_EQ(Run({"--db", db, "--session", session, "--tsc-hz", "2e9", "--duration-s", "0.1"}), 1);
  EXPECT_NE(out_.find("someone_else"), std::string::npos) << out_;
  EXPECT_EQ(ReadFile(db + ".ttjournal"), journal);
  StoreQuery q(db);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
}

}  // namespace
}  // namespace ticktrace::collect
