// The real ticktrace-view binary: exit statuses, one-line errors on stderr,
// --help everywhere, and the store left byte-for-byte alone by every command.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <thread>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "store/sqlite/sqlite_writer.h"
#include "store_fixture.h"

namespace ticktrace::view {
namespace {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Starts ticktrace-view with `args`, stdout and stderr to files in `dir`.
pid_t Spawn(const std::vector<std::string>& args, const testing::TempDir& dir) {
  const std::string out_path = dir.File(".cli-stdout");
  const std::string err_path = dir.File(".cli-stderr");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Its own process group, and SIGKILL if the test dies first (a `top` left
    // running by an aborted test would otherwise outlive it).
    ::setpgid(0, 0);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(126);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> argv;
    std::string program = TICKTRACE_VIEW_BINARY;
    argv.push_back(program.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

CliResult Collect(pid_t pid, const testing::TempDir& dir) {
  CliResult r;
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::ReadFile(dir.File(".cli-stdout"));
  r.err = testing::ReadFile(dir.File(".cli-stderr"));
  std::remove(dir.File(".cli-stdout").c_str());
  std::remove(dir.File(".cli-stderr").c_str());
  return r;
}

CliResult RunCli(const std::vector<std::string>& args, const testing::TempDir& dir) {
  return Collect(Spawn(args, dir), dir);
}

std::string Describe(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += " " + a;
  return s;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.File("known.db");
    testing::WriteKnownStore(db_);
    snapshot_ = testing::Snapshot(db_);
    listing_ = dir_.List();
  }
  // The store is unchanged and no file appeared beside it.
  void ExpectStoreUntouched(const std::string& context) {
    EXPECT_TRUE(testing::Snapshot(db_) == snapshot_) << "store changed after" << context;
    EXPECT_EQ(dir_.List(), listing_) << "files appeared after" << context;
  }
  // `args` fails with `exit_code` and exactly one stderr line holding `text`.
  void ExpectError(const std::vector<std::string>& args, int exit_code, const std::string& text) {
    const CliResult r = RunCli(args, dir_);
    EXPECT_EQ(r.exit_code, exit_code) << Describe(args) << "\n" << r.err;
    EXPECT_EQ(r.out, "") << Describe(args);
    ASSERT_FALSE(r.err.empty()) << Describe(args);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line:" << Describe(args) << "\n"
                                                  << r.err;
    EXPECT_EQ(r.err.rfind("ticktrace-view: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << Describe(args) << "\n" << r.err;
    ExpectStoreUntouched(Describe(args));
  }

  testing::TempDir dir_;
  std::string db_;
  testing::FileSnapshot snapshot_;
  std::vector<std::string> listing_;
};

TEST_F(CliTest, EverySubcommandWorksAndLeavesTheStoreAlone) {
  const std::vector<std::vector<std::string>> commands = {
      {"summary", "--db", db_},
      {"summary", "--db", db_, "--json"},
      {"summary", "--db", db_, "--run", "1"},
      {"summary", "--store", "sqlite:" + db_, "--exact"},
      {"summary", "--store", db_, "--since", "+10ms", "--until", "+19ms"},
      {"summary", "--db", db_, "--stage", "total", "--process", "md", "--since", "-150ms",
       "--until", "2026-11-30T08:00:00.090Z", "--include-flagged"},
      {"orders", "--db", db_, "--slowest", "3"},
      {"orders", "--db", db_, "--slowest", "2", "--stage", "risk"},
      {"order", "--db", db_, "102"},
      {"order", "--db", db_, "1", "--run", "1"},
      {"percentiles", "--db", db_, "--stage", "total"},
      {"percentiles", "--db", db_, "--stage", "md->strategy", "--unit", "ns",
       "--include-flagged"},
      {"runs", "--db", db_},
      {"runs", "--store", "sqlite:" + db_},
      {"export", "--db", db_, "--format", "csv", "--out", "-", "--limit", "3"},
      {"export", "--db", db_, "--format", "chrome", "--out", "-"},
      {"top", "--db", db_, "--iterations", "2", "--interval-ms", "10"},
  };
  for (const auto& args : commands) {
    const CliResult r = RunCli(args, dir_);
    EXPECT_EQ(r.exit_code, 0) << Describe(args) << "\n" << r.err;
    EXPECT_EQ(r.err, "") << Describe(args);
    EXPECT_FALSE(r.out.empty()) << Describe(args);
    ExpectStoreUntouched(Describe(args));
  }
}

TEST_F(CliTest, SummaryJsonFromTheBinary) {
  const CliResult r = RunCli({"summary", "--db", db_, "--json"}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["run"], 2);
  EXPECT_EQ(j["stages"].size(), 4u);
  EXPECT_EQ(j["stages"][3]["stage"], "total");
}

TEST_F(CliTest, OutputsOfTheTextCommands) {
  CliResult r = RunCli({"summary", "--db", db_}, dir_);
  EXPECT_NE(r.out.find("stage "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p99.9"), std::string::npos) << r.out;
  r = RunCli({"orders", "--db", db_, "--slowest", "2"}, dir_);
  EXPECT_NE(r.out.find("#1  order 102"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#2  order 100"), std::string::npos) << r.out;
  r = RunCli({"order", "--db", db_, "102"}, dir_);
  EXPECT_NE(r.out.find("linked: 50 -> 102"), std::string::npos) << r.out;
  r = RunCli({"percentiles", "--db", db_, "--stage", "total"}, dir_);
  EXPECT_EQ(r.out.rfind("       Value     Percentile TotalCount 1/(1-Percentile)", 0), 0u);
  EXPECT_NE(r.out.find("Total count    =          101]"), std::string::npos) << r.out;
  r = RunCli({"runs", "--db", db_}, dir_);
  EXPECT_NE(r.out.find("2 runs in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run 1  session old"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("md[1001], strategy[1002], gateway[1003]"), std::string::npos) << r.out;
}

TEST_F(CliTest, ExportWritesFilesButNeverTheStore) {
  const std::string json_path = dir_.File("trace.json");
  CliResult r = RunCli({"export", "--db", db_, "--format", "chrome", "--out", json_path}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("102 orders, 403 stamps"), std::string::npos) << r.out;
  EXPECT_TRUE(nlohmann::json::parse(testing::ReadFile(json_path)).contains("traceEvents"));
  const std::string csv_path = dir_.File("samples.csv");
  r = RunCli({"export", "--db", db_, "--format", "csv", "--out", csv_path}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines =
      absl::StrSplit(testing::ReadFile(csv_path), '\n', absl::SkipEmpty());
  EXPECT_EQ(lines.size(), testing::KnownSamples().size() + 1);
  std::remove(json_path.c_str());
  std::remove(csv_path.c_str());
  ExpectStoreUntouched("export");
  ExpectError({"export", "--db", db_, "--format", "csv", "--out", db_}, 2, "is the store itself");
}

TEST_F(CliTest, HelpForEverySubcommand) {
  for (const char* cmd : {"summary", "orders", "order", "percentiles", "runs", "export", "top"}) {
    const CliResult r = RunCli({cmd, "--help"}, dir_);
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_EQ(r.out.rfind(std::string("usage: ticktrace-view ") + cmd, 0), 0u) << r.out;
    EXPECT_NE(r.out.find("--db PATH"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--iterations"), std::string::npos) << r.out;  // hidden
  }
  const CliResult general = RunCli({"--help"}, dir_);
  EXPECT_EQ(general.exit_code, 0);
  for (const char* cmd : {"summary", "orders", "order", "percentiles", "runs", "export", "top"}) {
    EXPECT_NE(general.out.find(std::string("  ") + cmd + " "), std::string::npos) << cmd;
  }
}

TEST_F(CliTest, BadFilesGetOneLineAndExitOne) {
  const std::string missing = dir_.File("missing.db");
  ExpectError({"summary", "--db", missing}, 1, "missing.db: no such file");
  EXPECT_EQ(::access(missing.c_str(), F_OK), -1) << "the viewer created the missing file";

  const std::string text = dir_.File("notes.txt");
  { std::ofstream(text) << std::string(200, 'x'); }
  listing_ = dir_.List();
  ExpectError({"runs", "--db", text}, 1, "not an SQLite database");

  const std::string other = dir_.File("other.db");
  {
    sqlite3* db = nullptr;
    sqlite3_open(other.c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  listing_ = dir_.List();
  ExpectError({"summary", "--db", other}, 1, "not a ticktrace store");

  const std::string future = dir_.File("future.db");
  testing::WriteKnownStore(future);
  testing::ExecSql(future, "UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  listing_ = dir_.List();
  const testing::FileSnapshot future_snap = testing::Snapshot(future);
  ExpectError({"summary", "--db", future}, 1, "schema version 5 is newer");
  EXPECT_TRUE(testing::Snapshot(future) == future_snap);
}

TEST_F(CliTest, UnknownRunStageOrderProcessExitOne) {
  ExpectError({"summary", "--db", db_, "--run", "7"}, 1, "run 7 not found");
  ExpectError({"summary", "--db", db_, "--stage", "nope"}, 1, "stage 'nope' not found in run 2");
  ExpectError({"percentiles", "--db", db_, "--stage", "nope"}, 1, "stage 'nope' not found");
  ExpectError({"orders", "--db", db_, "--slowest", "3", "--stage", "x"}, 1,
              "stage 'x' not found");
  ExpectError({"order", "--db", db_, "4242"}, 1, "order 4242 not found");
  ExpectError({"order", "--db", db_, "50", "--run", "1"}, 1, "order 50 not found in run 1");
  ExpectError({"summary", "--db", db_, "--process", "ghost"}, 1, "process 'ghost' not found");
  ExpectError({"export", "--db", db_, "--format", "csv", "--out", dir_.File("x.csv"), "--run",
               "9"},
              1, "run 9 not found");
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  ExpectError({}, 2, "missing subcommand");
  ExpectError({"frobnicate"}, 2, "unknown subcommand 'frobnicate'");
  ExpectError({"summary"}, 2, "needs --db");
  ExpectError({"summary", "--db", db_, "--store", db_}, 2, "give one");
  ExpectError({"summary", "--store", "ftp://x/y"}, 2, "unknown kind of store");
  // Nothing listens on port 1: the ClickHouse reader says so, naming the store.
  ExpectError({"runs", "--store", "clickhouse://127.0.0.1:1/db"}, 1, "clickhouse://127.0.0.1:1/db");
  ExpectError({"summary", "--db", db_, "--bogus"}, 2, "unknown flag '--bogus'");
  ExpectError({"summary", "--db", db_, "--since", "yesterday"}, 2, "--since: bad time");
  ExpectError({"summary", "--db", db_, "--until", "2026-11-31T00:00:00Z"}, 2, "--until: bad time");
  ExpectError({"summary", "--db", db_, "--since", "+20ms", "--until", "+10ms"}, 2, "is after");
  ExpectError({"summary", "--db", db_, "--run", "two"}, 2, "--run: expected an integer");
  ExpectError({"summary", "--db", db_, "--include-flagged", "--exclude-flagged"}, 2, "contradict");
  ExpectError({"orders", "--db", db_}, 2, "needs --slowest");
  ExpectError({"orders", "--db", db_, "--slowest", "0"}, 2, "--slowest");
  ExpectError({"order", "--db", db_}, 2, "needs ID");
  ExpectError({"order", "--db", db_, "abc"}, 2, "expected an integer");
  ExpectError({"percentiles", "--db", db_}, 2, "needs --stage");
  ExpectError({"percentiles", "--db", db_, "--stage", "total", "--unit", "s"}, 2, "--unit");
  ExpectError({"export", "--db", db_, "--format", "xml", "--out", "-"}, 2, "--format");
  ExpectError({"runs", "--db", db_, "extra"}, 2, "unexpected argument 'extra'");
}

// --hosts on a store of one host (every run on "testhost"): it just works,
// nothing crosses hosts, and the flags' misuse is one line.
TEST_F(CliTest, HostsOnAOneHostStoreJustWorks) {
  CliResult r = RunCli({"summary", "--db", db_, "--hosts", "all", "--pipeline",
                        "md,strategy,gateway", "--json"},
                       dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stitched"], true);
  EXPECT_EQ(j["reference_run"]["run"], 2);  // the latest run with "md" in its pipeline
  EXPECT_EQ(j["hosts"], nlohmann::json::array({"testhost"}));
  EXPECT_EQ(j["orders_across_hosts"], 0);
  ASSERT_EQ(j["stages"].size(), 3u) << r.out;
  const char* const stages[] = {"md->strategy", "strategy->gateway", "total"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["stages"][i]["stage"], stages[i]);
    EXPECT_EQ(j["stages"][i]["from_host"], "testhost");
    EXPECT_EQ(j["stages"][i]["to_host"], "testhost");
    EXPECT_EQ(j["stages"][i]["cross_host"], false);
    EXPECT_TRUE(j["stages"][i]["uncertainty_ns"].is_null());
  }
  r = RunCli({"summary", "--db", db_, "--hosts", "testhost"}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("one host in scope"), std::string::npos) << r.out;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"orders", "--db", db_, "--slowest", "2", "--hosts", "all"},
                                             {"order", "--db", db_, "102", "--hosts", "all"},
                                             {"report", "--db", db_, "--out", "-", "--hosts", "all"}}) {
    r = RunCli(args, dir_);
    EXPECT_EQ(r.exit_code, 0) << Describe(args) << "\n" << r.err;
    EXPECT_NE(r.out.find("testhost"), std::string::npos) << Describe(args);
    ExpectStoreUntouched(Describe(args));
  }
  ExpectError({"summary", "--db", db_, "--hosts", "md01,gw01"}, 1,
              "has no run of host 'md01' (its hosts: testhost)");
  ExpectError({"summary", "--db", db_, "--pipeline", "md,gateway"}, 2, "give --hosts all");
  ExpectError({"orders", "--db", db_, "--slowest", "2", "--stitch-window", "1s"}, 2,
              "give --hosts all");
  ExpectError({"summary", "--db", db_, "--hosts", "all", "--process", "md"}, 2,
              "--process does not apply with --hosts");
  ExpectError({"summary", "--db", db_, "--hosts", "all", "--stitch-window", "soon"}, 2,
              "--stitch-window");
  ExpectError({"summary", "--db", db_, "--hosts", "a,,b"}, 2, "--hosts: expected");
  ExpectError({"order", "--db", db_, "4242", "--hosts", "all"}, 1, "order 4242 is in no run");
}

TEST_F(CliTest, TopStopsCleanlyOnSigint) {
  const pid_t pid = Spawn({"top", "--db", db_, "--interval-ms", "50"}, dir_);
  // Wait for the first frame.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (testing::ReadFile(dir_.File(".cli-stdout")).find("total") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "top did not stop on SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string out = testing::ReadFile(dir_.File(".cli-stdout"));
  EXPECT_NE(out.find("ticktrace-view top"), std::string::npos);
  EXPECT_EQ(testing::ReadFile(dir_.File(".cli-stderr")), "");
  std::remove(dir_.File(".cli-stdout").c_str());
  std::remove(dir_.File(".cli-stderr").c_str());
  EXPECT_TRUE(testing::Snapshot(db_) == snapshot_);
}

// top follows a store that a writer holds open (WAL, -wal/-shm present): a
// run committed after the first frame shows in a later one.
TEST(CliLiveTest, TopSeesCommitsOfARunningWriter) {
  testing::TempDir dir;
  const std::string db = dir.File("live.db");
  store::RunMeta run;
  std::unique_ptr<store::Writer> writer = testing::OpenWriterWithRun(db, "first", &run);
  ASSERT_NE(writer, nullptr);
  const pid_t pid = Spawn({"top", "--db", db, "--iterations", "400", "--interval-ms", "25"}, dir);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (testing::ReadFile(dir.File(".cli-stdout")).find("session first") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  run.session = "second";
  const absl::StatusOr<int64_t> second = writer->BeginRun(run);
  ASSERT_TRUE(second.ok()) << second.status();
  store::Snapshot snapshot;
  snapshot.counters = {{"drained", 77}};
  uint64_t already_stored = 0;
  ASSERT_TRUE(writer->Write(*second, {}, {}, {}, &snapshot, &already_stored).ok());
  while (testing::ReadFile(dir.File(".cli-stdout")).find("session second") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  const CliResult r = Collect(pid, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("session first"), std::string::npos);
  EXPECT_NE(r.out.find("run 2  session second"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("drained 77"), std::string::npos);
  EXPECT_EQ(r.err, "");
}

TEST_F(CliTest, TopRunsAFixedNumberOfFrames) {
  const CliResult r = RunCli({"top", "--db", db_, "--iterations", "3", "--interval-ms", "1"}, dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t frames = 0;
  for (size_t at = r.out.find("ticktrace-view top"); at != std::string::npos;
       at = r.out.find("ticktrace-view top", at + 1)) {
    ++frames;
  }
  EXPECT_EQ(frames, 3u);
}

}  // namespace
}  // namespace ticktrace::view
