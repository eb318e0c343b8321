// Stores that are not the collector's own, and stores whose schema holds SQL
// of somebody else's: the real collector and viewer binaries against them.
//   - a valid store another local user (a throwaway account made here)
//     planted, mode 0666, in a sticky world-writable directory: refused in
//     one line, nothing appended;
//   - a store of ours that others may write: refused; one its group may
//     write: refused, and accepted with --group-writable-store;
//   - triggers inside a store (RAISE(ABORT) on the orders' table, a marker
//     row on a new run): they never run, every order is stored;
//   - a schema-1 store with a trigger that would abort the migration: the
//     viewer migrates it, the trigger never runs;
//   - a recursive view in place of `runs` or `stage_stats`: the viewer
//     answers in one line instead of hanging;
//   - a query that computes longer than TICKTRACE_QUERY_TIMEOUT_MS: stopped
//     with one line.
// Expected order counts come from the archive each test writes by hand.

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

constexpr int kOrders = 10;

// Runs `sql` on the SQLite file `path` (created if absent) with a plain
// connection, as another tool or user would.
void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// A throwaway local account, removed when the test ends.
class ThrowawayUser {
 public:
  ThrowawayUser() {
    name_ = absl::StrCat("ttplant", getpid());
    const std::string add = absl::StrCat("useradd --system --no-create-home --shell /usr/sbin/nologin ",
                                         name_, " >/dev/null 2>&1");
    if (std::system(add.c_str()) != 0) return;
    if (const passwd* pw = ::getpwnam(name_.c_str()); pw != nullptr) {
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
      made_ = true;
    }
  }
  ~ThrowawayUser() {
    if (made_) std::system(absl::StrCat("userdel ", name_, " >/dev/null 2>&1").c_str());
  }
  bool made() const { return made_; }
  uid_t uid() const { return uid_; }

  // Writes `bytes` to the new file `path` with mode 0666, as this user (a
  // child process that drops to the account first). True on success.
  bool Plant(const std::string& path, const std::string& bytes) const {
    const pid_t pid = fork();
    if (pid == 0) {
      if (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 || setuid(uid_) != 0) _exit(3);
      const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0) _exit(4);
      if (fchmod(fd, 0666) != 0) _exit(5);
      if (write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) _exit(6);
      _exit(close(fd) == 0 ? 0 : 7);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

 private:
  std::string name_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool made_ = false;
};

class PlantedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // kOrders orders a->b, 100 ns each (1 GHz: a tick is a ns).
    ArchiveBuilder b;
    b.Process(1, {"a", "b"});
    std::vector<abi::Record> records;
    for (uint64_t i = 1; i <= kOrders; ++i) {
      records.push_back(Stamp(0, i, i * 10000));
      records.push_back(Stamp(1, i, i * 10000 + 100));
    }
    b.Records(1, records);
    raw_ = dir_.File("in.raw");
    b.Write(raw_);
  }

  // Runs a binary with `args`; returns its exit code; its output in out_.
  int Run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
    const std::string log = dir_.File("out.log");
    std::remove(log.c_str());
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    const int rc = WaitExit(Spawn(argv, log), std::chrono::seconds(120));
    for (const std::string& e : env) ::unsetenv(e.substr(0, e.find('=')).c_str());
    out_ = ReadFile(log);
    return rc;
  }
  // The collector replays the archive into `db`, with `extra` flags.
  int Replay(const std::string& db, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {TICKTRACE_COLLECTOR_BIN, "--session",
                                     absl::StrCat("t_planted_", getpid()), "--replay", raw_,
                                     "--db", db, "--pipeline", "a,b"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Run(argv);
  }
  int View(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
    args.insert(args.begin(), TICKTRACE_VIEW_BIN);
    return Run(args, env);
  }
  // A genuine store of one run of the archive, made by the collector.
  std::string GenuineStore(const std::string& name) {
    const std::string db = dir_.File(name);
    EXPECT_EQ(Replay(db), 0) << out_;
    return db;
  }

  TempDir dir_;
  std::string raw_;
  std::string out_;
};

TEST_F(PlantedStoreTest, AStoreAnotherUserPlantedIsRefusedAndLeftAsItWas) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a throwaway user (useradd)";
  ThrowawayUser other;
  if (!other.made()) GTEST_SKIP() << "useradd could not make a throwaway user here";
  const std::string genuine = GenuineStore("genuine.db");
  // A sticky world-writable directory, like /tmp (inside the test's own
  // directory, which the other user must be able to pass through).
  ASSERT_EQ(chmod(dir_.path().c_str(), 0711), 0);
  const std::string shared = dir_.File("shared");
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  const std::string planted = shared + "/store.db";
  const std::string bytes = ReadFile(genuine);
  ASSERT_TRUE(other.Plant(planted, bytes));
  struct stat st;
  ASSERT_EQ(stat(planted.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, other.uid());
  ASSERT_EQ(st.st_mode & 07777, 0666u);

  EXPECT_EQ(Replay(planted), 1) << out_;
  EXPECT_NE(out_.find(absl::StrCat(planted, ": belongs to uid ", other.uid(),
                                   ", not to this uid 0 (or root); refusing it")),
            std::string::npos)
      << out_;
  EXPECT_EQ(Lines(out_), 1u) << out_;
  // Nothing appended, nothing created beside it.
  EXPECT_EQ(ReadFile(planted), bytes);
  EXPECT_NE(access((planted + "-wal").c_str(), F_OK), 0);
  EXPECT_NE(access((planted + "-journal").c_str(), F_OK), 0);
}

TEST_F(PlantedStoreTest, AWalPlantedBesideANewStoreIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a throwaway user (useradd)";
  ThrowawayUser other;
  if (!other.made()) GTEST_SKIP() << "useradd could not make a throwaway user here";
  ASSERT_EQ(chmod(dir_.path().c_str(), 0711), 0);
  const std::string shared = dir_.File("shared");
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  const std::string db = shared + "/store.db";
  // SQLite would read frames of a -wal that is there into the new store.
  ASSERT_TRUE(other.Plant(db + "-wal", std::string(32, '\0')));
  EXPECT_EQ(Replay(db), 1) << out_;
  EXPECT_NE(out_.find(db + "-wal: belongs to uid "), std::string::npos) << out_;
  EXPECT_NE(access(db.c_str(), F_OK), 0) << "no store was created";
}

TEST_F(PlantedStoreTest, AStoreOthersOrTheGroupMayWriteIsRefusedUnlessAllowed) {
  const std::string db = GenuineStore("store.db");
  const std::string bytes = ReadFile(db);
  ASSERT_EQ(chmod(db.c_str(), 0666), 0);
  EXPECT_EQ(Replay(db), 1) << out_;
  EXPECT_NE(out_.find(db + ": other users may write it (mode 0666); refusing it"),
            std::string::npos)
      << out_;
  EXPECT_EQ(Lines(out_), 1u) << out_;
  EXPECT_EQ(ReadFile(db), bytes);
  // The group alone: refused, and accepted when the flag says so.
  ASSERT_EQ(chmod(db.c_str(), 0660), 0);
  EXPECT_EQ(Replay(db), 1) << out_;
  EXPECT_NE(out_.find("(mode 0660)"), std::string::npos) << out_;
  EXPECT_EQ(Replay(db, {"--group-writable-store"}), 0) << out_;
  StoreQuery q(db);
  EXPECT_EQ(q.Int("SELECT count(*) FROM runs"), 2);
}

TEST_F(PlantedStoreTest, TriggersInsideTheStoreNeverRun) {
  const std::string db = GenuineStore("store.db");
  // Run 1 holds kOrders orders. One trigger aborts every new block of
  // orders, the other would leave a mark for a new run.
  Sql(db,
      "CREATE TRIGGER planted_abort BEFORE INSERT ON order_blocks "
      "BEGIN SELECT RAISE(ABORT, 'planted trigger ran'); END;"
      "CREATE TRIGGER planted_mark AFTER INSERT ON runs "
      "BEGIN INSERT INTO meta(key, value) VALUES('planted_trigger_ran', 'yes'); END;");
  EXPECT_EQ(Replay(db), 0) << out_;
  EXPECT_EQ(out_.find("planted trigger ran"), std::string::npos) << out_;
  StoreQuery q(db);
  EXPECT_EQ(q.Int("SELECT count(*) FROM runs"), 2);
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders WHERE run_id = 2 AND complete = 1"), kOrders);
  EXPECT_EQ(q.Int("SELECT count(*) FROM meta WHERE key = 'planted_trigger_ran'"), 0);
  // The viewer reads it, and its triggers stay where they were.
  EXPECT_EQ(View({"summary", "--db", db, "--run", "2"}), 0) << out_;
  EXPECT_EQ(q.Int("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 2);
}

TEST_F(PlantedStoreTest, MigratingASchema1StoreDoesNotRunItsTriggers) {
  const std::string db = dir_.File("schema1.db");
  const std::string fixture =
      std::string(TICKTRACE_SOURCE_DIR) + "/tests/store/fixtures/schema1_demo.db";
  ASSERT_EQ(std::system(absl::StrCat("cp '", fixture, "' '", db, "'").c_str()), 0);
  ASSERT_EQ(chmod(db.c_str(), 0600), 0);
  // The migration writes meta.schema_version: a trigger there would abort it
  // (and one on a new name, too).
  Sql(db,
      "CREATE TRIGGER planted_meta BEFORE UPDATE ON meta "
      "BEGIN SELECT RAISE(ABORT, 'planted trigger ran'); END;"
      "CREATE TRIGGER planted_meta_insert BEFORE INSERT ON meta "
      "BEGIN SELECT RAISE(ABORT, 'planted trigger ran'); END;");
  EXPECT_EQ(View({"summary", "--db", db}), 0) << out_;
  EXPECT_EQ(out_.find("planted trigger ran"), std::string::npos) << out_;
  EXPECT_NE(out_.find("migrated in place to schema 4"), std::string::npos) << out_;
  StoreQuery q(db);
  EXPECT_EQ(q.Text("SELECT value FROM meta WHERE key = 'schema_version'"), "4");
  // fixtures/README.md: the demo run stored 80 orders.
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders"), 80);
}

// A view that never ends: a recursive CTE filtered to nothing, so SQLite
// computes for ever without returning a row.
std::string EndlessView(const std::string& name, const std::string& columns, int column_count) {
  std::string values;
  for (int i = 0; i < column_count; ++i) absl::StrAppend(&values, i == 0 ? "" : ", ", "x");
  return absl::StrCat("CREATE VIEW ", name, "(", columns,
                      ") AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                      "SELECT ",
                      values, " FROM c WHERE x < 0;");
}

TEST_F(PlantedStoreTest, ARecursiveViewInPlaceOfATableDoesNotHangTheViewer) {
  const std::string db = GenuineStore("store.db");
  Sql(db, "DROP TABLE stage_stats;" +
              EndlessView("stage_stats",
                          "run_id, stage, position, count, min_ns, max_ns, mean_ns, p50_ns, "
                          "p90_ns, p99_ns, p999_ns, migrated, negative, cross_core, "
                          "include_flagged, samples_all, skew, out_of_order, late, uncertainty_ns",
                          20));
  // Far below the ctest timeout: the viewer refuses the view at once (and
  // a step would stop at TICKTRACE_QUERY_TIMEOUT_MS, 60 s by default).
  const int rc = View({"summary", "--db", db});
  EXPECT_NE(rc, -1) << "the viewer hung";
  EXPECT_NE(rc, 0) << out_;
  EXPECT_NE(out_.find(db + ": `stage_stats` is a view, not a table"), std::string::npos) << out_;
  EXPECT_EQ(Lines(out_), 1u) << out_;

  const std::string db2 = GenuineStore("store2.db");
  Sql(db2, "DROP TABLE runs;" +
               EndlessView("runs",
                           "run_id, session, host, started_utc_ns, ended_utc_ns, tsc_hz, "
                           "calibration_source, spread_ppm, kernel_tsc_hz, tsc_step_ns, "
                           "anchor_tsc, anchor_utc_ns, environment, settings, pipeline, "
                           "pipeline_learned, interval_ns, detail, utc_drift_ppm, clock_error_ns",
                           20));
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"summary"}, {"runs"}, {"orders", "--slowest", "3"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--db", db2});
    const int rc2 = View(args);
    EXPECT_NE(rc2, -1) << command[0] << ": the viewer hung";
    EXPECT_NE(rc2, 0) << command[0] << ": " << out_;
    EXPECT_NE(out_.find(db2 + ": `runs` is a view, not a table"), std::string::npos)
        << command[0] << ": " << out_;
    EXPECT_EQ(Lines(out_), 1u) << command[0] << ": " << out_;
  }
  // The collector refuses such a store too, before writing anything.
  const std::string bytes = ReadFile(db2);
  EXPECT_EQ(Replay(db2), 1) << out_;
  EXPECT_NE(out_.find(db2 + ": `runs` is a view, not a table"), std::string::npos) << out_;
  EXPECT_EQ(ReadFile(db2), bytes);
}

TEST_F(PlantedStoreTest, AQueryStepLongerThanTheLimitIsStopped) {
  const std::string db = GenuineStore("store.db");
  // `runs` as a plain table of 300,000 rows without its primary key: the
  // viewer's "latest run" (ORDER BY run_id DESC LIMIT 1) must scan them all
  // in its first step, tens of milliseconds at least, against a 1 ms limit.
  Sql(db,
      "CREATE TABLE runs_copy AS SELECT * FROM runs; DROP TABLE runs;"
      "CREATE TABLE runs AS SELECT * FROM runs_copy; DROP TABLE runs_copy;"
      "WITH RECURSIVE c(x) AS (SELECT 2 UNION ALL SELECT x + 1 FROM c WHERE x < 300001) "
      "INSERT INTO runs SELECT x, session, host, started_utc_ns, ended_utc_ns, tsc_hz, "
      "calibration_source, spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, "
      "environment, settings, pipeline, pipeline_learned, interval_ns, detail, utc_drift_ppm, "
      "clock_error_ns FROM c, (SELECT * FROM runs LIMIT 1);");
  const int rc = View({"summary", "--db", db}, {"TICKTRACE_QUERY_TIMEOUT_MS=1"});
  EXPECT_EQ(rc, 1) << out_;
  EXPECT_NE(out_.find("query stopped after its time limit (TICKTRACE_QUERY_TIMEOUT_MS)"),
            std::string::npos)
      << out_;
  EXPECT_EQ(Lines(out_), 1u) << out_;
}

}  // namespace
}  // namespace ticktrace::collect
