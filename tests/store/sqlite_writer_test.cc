// The SQLite writer against real files: modes, intervals merged across
// writes, packed detail readable through the documented SQL, the restart
// counter, retention and the WAL at the end of a run. Expected values are
// the inputs, counted by hand.

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_writer.h"
#include "gtest/gtest.h"
#include "tests/store/sqlite_query.h"

namespace ticktrace::store {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ticktrace_store_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;  // an interval boundary

OrderDetail MakeOrder(uint64_t id, int64_t first_utc_ns, double hop_ns, uint32_t flags = 0) {
  OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = first_utc_ns;
  o.first_tsc = 1000;
  o.first_tsc_utc_ns = first_utc_ns;
  o.total_ns = hop_ns;
  o.complete = true;
  o.stamps.push_back({.tag = "a", .process_id = 1, .tid = 11, .cpu = 0, .tsc = 1000,
                      .utc_ns = first_utc_ns});
  o.stamps.push_back({.tag = "b", .process_id = 2, .tid = 22, .cpu = 1,
                      .tsc = 1000 + static_cast<uint64_t>(hop_ns),
                      .utc_ns = first_utc_ns + static_cast<int64_t>(hop_ns)});
  o.samples.push_back({.stage = "a->b", .start_utc_ns = first_utc_ns, .latency_ns = hop_ns,
                       .process_begin = 1, .process_end = 2, .cpu_begin = 0, .cpu_end = 1,
                       .flags = flags | kFlagCrossCore});
  o.samples.push_back({.stage = std::string(kTotalStage), .start_utc_ns = first_utc_ns,
                       .latency_ns = hop_ns, .process_begin = 1, .process_end = 2,
                       .cpu_begin = 0, .cpu_end = 1, .flags = flags | kFlagCrossCore});
  return o;
}

IntervalDelta Delta(const std::string& stage, int64_t start, std::vector<double> values) {
  IntervalDelta d;
  d.stage = stage;
  d.start_utc_ns = start;
  d.samples_all = values.size();
  for (double v : values) d.histogram.Add(v);
  return d;
}

// A new store with one run begun at 1e9 Hz (1 tick = 1 ns), for the tests
// that need nothing else of the run.
class SqliteWriterRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path_);
    ASSERT_TRUE(w.ok()) << w.status();
    w_ = std::move(*w);
    RunMeta meta;
    meta.tsc_hz = 1e9;
    absl::StatusOr<int64_t> run = w_->BeginRun(meta);
    ASSERT_TRUE(run.ok()) << run.status();
    run_ = *run;
  }

  TempDir dir_;
  const std::string path_ = dir_.path() + "/t.db";
  std::unique_ptr<SqliteWriter> w_;
  int64_t run_ = 0;
  uint64_t already_ = 0;
};

TEST(SqliteWriter, NewStoreIsPrivateAndOfTheCurrentSchema) {
  TempDir dir;
  const std::string path = dir.path() + "/t.db";
  auto w = SqliteWriter::OpenOrCreate(path);
  ASSERT_TRUE(w.ok()) << w.status();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(QueryInt(path, "SELECT value FROM meta WHERE key = 'schema_version'"), 4);
}

TEST(SqliteWriter, RefusesASymlinkAndLeavesItsTargetAlone) {
  TempDir dir;
  const std::string target = dir.path() + "/target";
  const std::string link = dir.path() + "/link.db";
  { FILE* f = std::fopen(target.c_str(), "w"); std::fputs("precious", f); std::fclose(f); }
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto w = SqliteWriter::OpenOrCreate(link);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("symbolic link"), std::string::npos)
      << w.status();
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8);
}

TEST(SqliteWriter, IntervalsMergeAcrossWritesAndDetailIsQueryable) {
  TempDir dir;
  const std::string path = dir.path() + "/t.db";
  auto w = SqliteWriter::OpenOrCreate(path);
  ASSERT_TRUE(w.ok()) << w.status();
  RunMeta meta;
  meta.session = "s";
  meta.host = "h";
  meta.tsc_hz = 1e9;
  auto run = (*w)->BeginRun(meta);
  ASSERT_TRUE(run.ok()) << run.status();
  uint64_t already = 0;
  // Interval kT0: 100 and 300 ns in one write, 200 ns in the next; kT0+1s: 5000 ns.
  ASSERT_TRUE((*w)->Write(*run, {Delta("a->b", kT0, {100, 300})}, {{kT0, 2, 0}},
                          {MakeOrder(1, kT0 + 10, 100), MakeOrder(2, kT0 + 20, 300)}, nullptr,
                          &already)
                  .ok());
  ASSERT_TRUE((*w)->Write(*run, {Delta("a->b", kT0, {200}), Delta("a->b", kT0 + kSecond, {5000})},
                          {{kT0, 1, 0}, {kT0 + kSecond, 1, 0}},
                          {MakeOrder(3, kT0 + 30, 200), MakeOrder(4, kT0 + kSecond + 5, 5000)},
                          nullptr, &already)
                  .ok());
  EXPECT_EQ(already, 0u);
  const std::string k0 = std::to_string(kT0);
  EXPECT_EQ(QueryInt(path, "SELECT count FROM intervals WHERE start_utc_ns = " + k0), 3);
  EXPECT_EQ(QueryInt(path, "SELECT samples_all FROM intervals WHERE start_utc_ns = " + k0), 3);
  EXPECT_EQ(QueryInt(path, "SELECT max_ns FROM intervals WHERE start_utc_ns = " + k0), 300);
  EXPECT_EQ(QueryInt(path, "SELECT sum_ns FROM intervals WHERE start_utc_ns = " + k0), 600);
  EXPECT_EQ(QueryInt(path, "SELECT orders FROM interval_detail WHERE start_utc_ns = " + k0), 3);
  EXPECT_EQ(QueryInt(path, "SELECT orders_kept FROM interval_detail WHERE start_utc_ns = " + k0),
            3);
  // Per-stage latencies through the documented view: 4 orders x 2 stages.
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM stage_latencies"), 8);
  EXPECT_EQ(QueryInt(path, "SELECT max(latency_ns) FROM stage_latencies WHERE stage = 'a->b'"),
            5000);
  EXPECT_EQ(QueryInt(path, "SELECT order_id FROM stage_latencies WHERE stage = 'total' "
                           "ORDER BY latency_ns DESC LIMIT 1"),
            4);
  // The same order again (a restart re-emits it): kept once.
  ASSERT_TRUE((*w)->Write(*run, {}, {}, {MakeOrder(2, kT0 + 20, 300)}, nullptr, &already).ok());
  EXPECT_EQ(already, 1u);
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM orders"), 4);
  // A second instance of id 2 is another order.
  OrderDetail again = MakeOrder(2, kT0 + 40, 700);
  again.instance = 1;
  ASSERT_TRUE((*w)->Write(*run, {}, {}, {again}, nullptr, &already).ok());
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM orders WHERE order_id = 2"), 2);
  // Id 2 used again long after, when the collector no longer remembered it
  // (instance 0 again, another first TSC): stored as instance 2, not lost.
  OrderDetail much_later = MakeOrder(2, kT0 + 90 * kSecond, 800);
  much_later.first_tsc = 99'000'000'000;
  ASSERT_TRUE((*w)->Write(*run, {}, {}, {much_later}, nullptr, &already).ok());
  EXPECT_EQ(already, 1u);
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM orders WHERE order_id = 2"), 3);
  EXPECT_EQ(QueryInt(path, "SELECT max(instance) FROM orders WHERE order_id = 2"), 2);
  // Once more, in one batch with the previous one re-emitted (a restart):
  // the new one is instance 3; the re-emitted one is found under the
  // instance the store gave it (2, not its own 0) and kept once.
  OrderDetail later_still = MakeOrder(2, kT0 + 95 * kSecond, 900);
  later_still.first_tsc = 99'500'000'000;
  ASSERT_TRUE((*w)->Write(*run, {}, {}, {later_still, much_later}, nullptr, &already).ok());
  EXPECT_EQ(already, 2u);
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM orders WHERE order_id = 2"), 4);
  EXPECT_EQ(QueryInt(path, "SELECT max(instance) FROM orders WHERE order_id = 2"), 3);
}

TEST_F(SqliteWriterRunTest, FlatRowsGiveBackEveryStampAndSample) {
  ASSERT_TRUE(
      w_->Write(run_, {}, {}, {MakeOrder(7, kT0 + 100, 250, kFlagNegative)}, nullptr, &already_)
          .ok());
  w_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_TRUE(ExpandDetail(db).ok());
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      v = sqlite3_column_int64(s, 0);
    } else {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(one("SELECT count(*) FROM stamps"), 2);
  EXPECT_EQ(one("SELECT count(*) FROM samples"), 2);
  // Stamp b: tsc 1000 + 250, at first_utc + 250 ns, tid 22 on cpu 1.
  EXPECT_EQ(one("SELECT tsc FROM stamps WHERE tag = 'b'"), 1250);
  EXPECT_EQ(one("SELECT utc_ns FROM stamps WHERE tag = 'b'"), kT0 + 350);
  EXPECT_EQ(one("SELECT tid FROM stamps WHERE tag = 'b'"), 22);
  EXPECT_EQ(one("SELECT cpu FROM stamps WHERE tag = 'b'"), 1);
  EXPECT_EQ(one("SELECT latency_ns FROM samples WHERE stage = 'a->b'"), 250);
  EXPECT_EQ(one("SELECT flags FROM samples WHERE stage = 'a->b'"),
            kFlagNegative | kFlagCrossCore);
  EXPECT_EQ(one("SELECT process_end FROM samples WHERE stage = 'a->b'"), 2);
  EXPECT_EQ(one("SELECT start_utc_ns FROM samples WHERE stage = 'total'"), kT0 + 100);
  sqlite3_close(db);
}

TEST(SampleCells, ParsesTheStoredShapeOnly) {
  auto cells = ParseSampleCells("[[0,1200,4],[3,-5,0]]");
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[1].stage_id, 3u);
  EXPECT_EQ((*cells)[1].latency_ns, -5);
  EXPECT_TRUE(ParseSampleCells("[]").ok());
  for (const char* bad : {"", "[", "[[1,2]]", "[[1,2,3],]", "[[1,2,3]]x", "[[-1,2,3]]", "{}"}) {
    EXPECT_FALSE(ParseSampleCells(bad).ok()) << bad;
  }
}

TEST(SqliteWriter, RestartsCountEveryResume) {
  TempDir dir;
  const std::string path = dir.path() + "/t.db";
  int64_t run_id = 0;
  {
    auto w = SqliteWriter::OpenOrCreate(path);
    ASSERT_TRUE(w.ok());
    RunMeta meta;
    meta.tsc_hz = 1e9;
    run_id = *(*w)->BeginRun(meta);
  }
  for (int i = 0; i < 3; ++i) {
    auto w = SqliteWriter::OpenOrCreate(path);
    ASSERT_TRUE(w.ok());
    absl::StatusOr<int64_t> restarts = (*w)->ResumeRun(run_id);
    ASSERT_TRUE(restarts.ok()) << restarts.status();
    EXPECT_EQ(*restarts, i + 1);
    // A snapshot's own `restarts` value never overwrites the store's count.
    Snapshot snap;
    snap.counters.emplace_back("restarts", 1);
    uint64_t already = 0;
    ASSERT_TRUE((*w)->Write(run_id, {}, {}, {}, &snap, &already).ok());
  }
  EXPECT_EQ(QueryInt(path, "SELECT value FROM counters WHERE name = 'restarts'"), 3);
}

TEST_F(SqliteWriterRunTest, RetentionDeletesDetailAndKeepsIntervals) {
  std::vector<OrderDetail> orders;
  std::vector<IntervalDelta> deltas;
  for (int s = 0; s < 3; ++s) {  // 3 intervals, 10 orders each
    std::vector<double> v;
    for (int i = 0; i < 10; ++i) {
      orders.push_back(MakeOrder(static_cast<uint64_t>(s * 10 + i + 1), kT0 + s * kSecond + i,
                                 100.0 + i));
      v.push_back(100.0 + i);
    }
    deltas.push_back(Delta("a->b", kT0 + s * kSecond, v));
  }
  ASSERT_TRUE(w_->Write(run_, deltas,
                        {{kT0, 10, 0}, {kT0 + kSecond, 10, 0}, {kT0 + 2 * kSecond, 10, 0}}, orders,
                        nullptr, &already_)
                  .ok());
  auto deleted = w_->ApplyRetention(run_, kT0 + 2 * kSecond, 0, std::nullopt);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 20u);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM orders"), 10);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM stage_latencies"), 20);
  EXPECT_EQ(QueryInt(path_, "SELECT min(order_id) FROM orders"), 21);
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM intervals"), 3);
  EXPECT_EQ(QueryInt(path_, "SELECT sum(detail_deleted) FROM interval_detail"), 2);
  // Intervals older than kT0 + 1 s go too.
  ASSERT_TRUE(w_->ApplyRetention(run_, std::nullopt, 0, kT0 + kSecond).ok());
  EXPECT_EQ(QueryInt(path_, "SELECT count(*) FROM intervals"), 2);
}

TEST_F(SqliteWriterRunTest, EndOfRunLeavesNothingInTheWal) {
  ASSERT_TRUE(w_->Write(run_, {Delta("a->b", kT0, {100})}, {{kT0, 1, 0}}, {MakeOrder(1, kT0, 100)},
                        nullptr, &already_)
                  .ok());
  ASSERT_TRUE(w_->EndRun(run_, kT0 + kSecond).ok());
  struct stat st;
  ASSERT_EQ(::stat((path_ + "-wal").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
  // A copy of the main file alone holds the ended run.
  const std::string copy = dir_.path() + "/copy.db";
  ASSERT_EQ(std::system(("cp '" + path_ + "' '" + copy + "'").c_str()), 0);
  EXPECT_EQ(QueryInt(copy, "SELECT ended_utc_ns FROM runs"), kT0 + kSecond);
  EXPECT_EQ(QueryInt(copy, "SELECT count(*) FROM orders"), 1);
}

// Interval sums are kept in memory between writes: a later writer on the
// same store (a restart), an interval written again after the writer moved
// past it, and a batch that failed and was rolled back must all still give
// the sums of exactly what was committed.
TEST_F(SqliteWriterRunTest, IntervalSumsAreWhatWasCommitted) {
  ASSERT_TRUE(w_->Write(run_, {Delta("a->b", kT0, {100, 300})}, {}, {}, nullptr, &already_).ok());
  // Ten intervals later: kT0 is no longer among the newest the writer keeps.
  ASSERT_TRUE(
      w_->Write(run_, {Delta("a->b", kT0 + 10 * kSecond, {7})}, {}, {}, nullptr, &already_).ok());
  // A late delta of kT0: merged with the stored 100 and 300.
  ASSERT_TRUE(w_->Write(run_, {Delta("a->b", kT0, {200})}, {}, {}, nullptr, &already_).ok());
  const std::string k0 = std::to_string(kT0);
  EXPECT_EQ(QueryInt(path_, "SELECT count FROM intervals WHERE start_utc_ns = " + k0), 3);
  EXPECT_EQ(QueryInt(path_, "SELECT sum_ns FROM intervals WHERE start_utc_ns = " + k0), 600);

  // A batch that fails after its interval was merged: a CHECK constraint
  // refuses its counter, the whole batch is rolled back. (Not a trigger:
  // the writer never runs a store's triggers, docs/security.md.)
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "BEGIN; ALTER TABLE counters RENAME TO counters_before; "
                           "CREATE TABLE counters(run_id INTEGER NOT NULL, name TEXT NOT NULL "
                           "CHECK(name <> 'refused'), value INTEGER NOT NULL, "
                           "PRIMARY KEY(run_id, name)); "
                           "INSERT INTO counters SELECT * FROM counters_before; "
                           "DROP TABLE counters_before; COMMIT",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  Snapshot refused;
  refused.counters.emplace_back("refused", 1);
  EXPECT_FALSE(
      w_->Write(run_, {Delta("a->b", kT0, {1000})}, {}, {}, &refused, &already_).ok());
  EXPECT_EQ(QueryInt(path_, "SELECT count FROM intervals WHERE start_utc_ns = " + k0), 3);
  // The next batch adds to 100, 200 and 300, not to the refused 1000.
  ASSERT_TRUE(w_->Write(run_, {Delta("a->b", kT0, {50})}, {}, {}, nullptr, &already_).ok());
  EXPECT_EQ(QueryInt(path_, "SELECT count FROM intervals WHERE start_utc_ns = " + k0), 4);
  EXPECT_EQ(QueryInt(path_, "SELECT sum_ns FROM intervals WHERE start_utc_ns = " + k0), 650);
  EXPECT_EQ(QueryInt(path_, "SELECT min_ns FROM intervals WHERE start_utc_ns = " + k0), 50);

  // Another writer resumes the run: it starts from what the store holds.
  w_.reset();
  absl::StatusOr<std::unique_ptr<SqliteWriter>> again = SqliteWriter::OpenOrCreate(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE((*again)->ResumeRun(run_).ok());
  ASSERT_TRUE(
      (*again)->Write(run_, {Delta("a->b", kT0, {350})}, {}, {}, nullptr, &already_).ok());
  EXPECT_EQ(QueryInt(path_, "SELECT count FROM intervals WHERE start_utc_ns = " + k0), 5);
  EXPECT_EQ(QueryInt(path_, "SELECT sum_ns FROM intervals WHERE start_utc_ns = " + k0), 1000);
  EXPECT_EQ(QueryInt(path_, "SELECT max_ns FROM intervals WHERE start_utc_ns = " + k0), 350);
  EXPECT_EQ(QueryInt(path_, "SELECT samples_all FROM intervals WHERE start_utc_ns = " + k0), 5);
}

}  // namespace
}  // namespace ticktrace::store
