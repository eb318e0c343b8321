// A schema-1 store written by the old code (fixtures/README.md) is migrated
// in place, after a backup copy: every order and sample is kept, and the
// intervals computed from the old samples give back the old whole-run
// statistics (to the histogram's precision).

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ticktrace/store/histogram.h"
#include "store/sqlite/sqlite_writer.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

const std::string kFixture = std::string(TICKTRACE_SOURCE_DIR) + "/tests/store/fixtures/schema1_demo.db";

class Migration : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ticktrace_migration_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/store.db";
    ASSERT_EQ(std::system(("cp '" + kFixture + "' '" + path_ + "'").c_str()), 0);
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  static std::vector<std::vector<std::string>> Query(const std::string& db_path,
                                                     const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    std::vector<std::vector<std::string>> rows;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    } else {
      while (sqlite3_step(s) == SQLITE_ROW) {
        std::vector<std::string> row;
        for (int i = 0; i < sqlite3_column_count(s); ++i) {
          if (sqlite3_column_type(s, i) == SQLITE_BLOB) {
            row.emplace_back(static_cast<const char*>(sqlite3_column_blob(s, i)),
                             static_cast<size_t>(sqlite3_column_bytes(s, i)));
          } else {
            const char* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
            row.emplace_back(t ? t : "");
          }
        }
        rows.push_back(std::move(row));
      }
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return rows;
  }
  static int64_t Int(const std::string& db_path, const std::string& sql) {
    auto rows = Query(db_path, sql);
    return rows.empty() ? -1 : std::stoll(rows[0][0]);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(Migration, KeepsEveryOrderAndSampleAndABackup) {
  // What the old code wrote (README: 80 orders, 280 samples).
  ASSERT_EQ(Int(path_, "SELECT count(*) FROM orders"), 80);
  ASSERT_EQ(Int(path_, "SELECT count(*) FROM samples"), 280);
  std::string said;
  SqliteOpenOptions options;
  options.on_migration = [&](const std::string& line) { said = line; };
  auto w = SqliteWriter::OpenOrCreate(path_, options);
  ASSERT_TRUE(w.ok()) << w.status();
  w->reset();
  const std::string backup = path_ + ".schema1.bak";
  EXPECT_NE(said.find("migrated in place"), std::string::npos) << said;
  EXPECT_NE(said.find(backup), std::string::npos) << said;
  // The backup is the old store, whole.
  EXPECT_EQ(Int(backup, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);
  EXPECT_EQ(Int(backup, "SELECT count(*) FROM samples"), 280);
  struct stat st;
  ASSERT_EQ(::stat(backup.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  EXPECT_EQ(Int(path_, "SELECT value FROM meta WHERE key = 'schema_version'"), 4);
  EXPECT_EQ(Int(path_, "SELECT count(*) FROM orders"), 80);
  EXPECT_EQ(Int(path_, "SELECT count(*) FROM stage_latencies"), 280);
  EXPECT_EQ(Int(path_, "SELECT sum(orders) FROM interval_detail"), 80);
  EXPECT_EQ(Int(path_, "SELECT sum(orders_kept) FROM interval_detail"), 80);
  // Sample by sample, the latencies are the old ones (rounded to the ns).
  const auto old_rows = Query(backup,
                              "SELECT order_id, stage, latency_ns FROM samples ORDER BY order_id, "
                              "stage");
  const auto new_rows = Query(path_,
                              "SELECT order_id, stage, latency_ns FROM stage_latencies ORDER BY "
                              "order_id, stage");
  ASSERT_EQ(old_rows.size(), new_rows.size());
  for (size_t i = 0; i < old_rows.size(); ++i) {
    EXPECT_EQ(old_rows[i][0], new_rows[i][0]);
    EXPECT_EQ(old_rows[i][1], new_rows[i][1]);
    EXPECT_NEAR(std::stod(old_rows[i][2]), std::stod(new_rows[i][2]), 0.5) << i;
  }
  // Opened again: nothing more to migrate, no second backup needed.
  said.clear();
  auto again = SqliteWriter::OpenOrCreate(path_, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(said.empty()) << said;
}

TEST_F(Migration, IntervalsMergeToTheOldWholeRunStatistics) {
  auto w = SqliteWriter::OpenOrCreate(path_);
  ASSERT_TRUE(w.ok()) << w.status();
  w->reset();
  const auto old_stats = Query(path_ + ".schema1.bak",
                               "SELECT stage, count, samples_all, p50_ns, p99_ns, max_ns FROM "
                               "stage_stats");
  ASSERT_EQ(old_stats.size(), 7u);
  for (const auto& row : old_stats) {
    const std::string& stage = row[0];
    Histogram merged;
    int64_t samples_all = 0;
    for (const auto& r : Query(path_, "SELECT i.histogram, i.samples_all FROM intervals i JOIN "
                                      "stages s USING(run_id, stage_id) WHERE s.name = '" +
                                          stage + "'")) {
      auto h = Histogram::Decode(r[0]);
      ASSERT_TRUE(h.ok()) << h.status();
      merged.Merge(*h);
      samples_all += std::stoll(r[1]);
    }
    EXPECT_EQ(static_cast<int64_t>(merged.count()), std::stoll(row[1])) << stage;
    EXPECT_EQ(samples_all, std::stoll(row[2])) << stage;
    const double p50 = std::stod(row[3]);
    EXPECT_NEAR(merged.Quantile(0.5), p50, std::fabs(p50) / 256 + 1e-9) << stage;
    // Exact, but read back as SQLite's 15-digit text.
    EXPECT_NEAR(merged.max(), std::stod(row[5]), std::fabs(merged.max()) * 1e-12) << stage;
  }
}

}  // namespace
}  // namespace ticktrace::store
