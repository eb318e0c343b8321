// A schema-3 store whose order blocks are in the older encoding (a JSON
// array in `orders`, packed details end to end in `detail`, and the views as
// the writer created them before compact blocks) reads the same as the same
// orders in compact blocks: the views `orders` and `stage_latencies` and the
// flat rows (ExpandDetail) give identical rows; a writer that opens it
// replaces the views, appends compact blocks beside the old ones, and every
// row still reads. The old store is made from a real one by rewriting each
// block with the older encoding of its orders, and the views with their old
// text (copied below from the schema before compact blocks).

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/names.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

// The views as schema 3 created them before compact blocks.
constexpr char kOldViews[] = R"sql(
DROP VIEW IF EXISTS stage_latencies;
DROP VIEW IF EXISTS orders;
CREATE VIEW IF NOT EXISTS orders AS
  SELECT b.block_key * 256 + CAST(j.key AS INTEGER) AS order_key, b.run_id,
         json_extract(j.value, '$[0]') AS order_id, json_extract(j.value, '$[1]') AS instance,
         json_extract(j.value, '$[2]') AS parent_order_id,
         b.start_utc_ns + json_extract(j.value, '$[3]') AS first_utc_ns,
         json_extract(j.value, '$[4]') AS first_tsc, json_extract(j.value, '$[5]') AS total_ns,
         json_extract(j.value, '$[6]') AS complete, json_extract(j.value, '$[7]') AS missing,
         json_extract(j.value, '$[8]') AS flags, json_extract(j.value, '$[9]') AS samples,
         substr(b.detail, json_extract(j.value, '$[10]') + 1,
                json_extract(j.value, '$[11]')) AS detail
  FROM order_blocks b, json_each(b.orders) j;
CREATE VIEW IF NOT EXISTS stage_latencies AS
  SELECT o.run_id, o.order_id, o.instance, st.name AS stage,
         json_extract(j.value, '$[1]') AS latency_ns, json_extract(j.value, '$[2]') AS flags,
         o.first_utc_ns, o.order_key, CAST(j.key AS INTEGER) AS seq
  FROM orders o, json_each(o.samples) j
       JOIN stages st ON st.run_id = o.run_id AND st.stage_id = json_extract(j.value, '$[0]');
)sql";

// Order `id`: two stamps of two threads (the second a span on every third
// id, flagged on every fourth), incomplete on every fifth, the child of
// `id` - 1 on every seventh, without a total on every eleventh.
OrderDetail Order(uint64_t id, int64_t interval) {
  OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = interval + static_cast<int64_t>(id % 1000) * 1000;
  o.first_tsc = 1'000'000 + id * 10;
  o.first_tsc_utc_ns = o.first_utc_ns;
  if (id % 11 != 0) o.total_ns = static_cast<double>(id);
  o.complete = id % 5 != 0;
  if (!o.complete) o.missing = "c";
  if (id % 7 == 0) o.parent_order_id = id - 1;
  o.stamps.push_back({.tag = "a", .process_id = 1, .tid = 11, .cpu = 0, .tsc = o.first_tsc,
                      .utc_ns = o.first_utc_ns});
  StampDetail b{.tag = "b", .process_id = 2, .tid = 22, .cpu = 1, .tsc = o.first_tsc + id,
                .utc_ns = o.first_utc_ns + static_cast<int64_t>(id), .flags = id % 4 == 0 ? 4u : 0u};
  if (id % 3 == 0) {
    b.is_span = true;
    b.cpu_end = 1;
    b.duration_ns = 250;
  }
  o.stamps.push_back(b);
  o.samples.push_back({.stage = "a->b", .start_utc_ns = o.first_utc_ns,
                       .latency_ns = static_cast<double>(id), .process_begin = 1,
                       .process_end = 2, .cpu_begin = 0, .cpu_end = 1,
                       .flags = id % 4 == 0 ? 4u : 0u});
  o.samples.push_back({.stage = std::string(kTotalStage), .start_utc_ns = o.first_utc_ns,
                       .latency_ns = static_cast<double>(id)});
  return o;
}

std::vector<std::string> Rows(sqlite3* db, const std::string& sql) {
  std::vector<std::string> rows;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    return rows;
  }
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const unsigned char* t = sqlite3_column_text(s, i);
      absl::StrAppend(&row, t ? reinterpret_cast<const char*>(t) : "NULL", "|");
    }
    rows.push_back(row);
  }
  if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  sqlite3_finalize(s);
  return rows;
}

// Every row plain SQL and the flat rows give, by order.
std::vector<std::string> Dump(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> all = Rows(
      db,
      "SELECT 'order', order_key, run_id, order_id, instance, parent_order_id, first_utc_ns, "
      "first_tsc, total_ns, complete, missing, flags, samples, hex(detail) FROM orders "
      "ORDER BY order_key");
  for (std::string& r : Rows(db, "SELECT 'latency', * FROM stage_latencies ORDER BY order_key, seq")) {
    all.push_back(std::move(r));
  }
  EXPECT_TRUE(ExpandDetail(db).ok());
  for (std::string& r : Rows(db, "SELECT 'sample', * FROM temp.samples ORDER BY order_key, seq")) {
    all.push_back(std::move(r));
  }
  for (std::string& r :
       Rows(db, "SELECT 'stamp', * FROM temp.stamps ORDER BY order_key, tsc, tag")) {
    all.push_back(std::move(r));
  }
  sqlite3_close(db);
  return all;
}

class OldBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ticktrace_old_blocks_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/t.db";
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Opens a writer on the store, starts or resumes the run, writes `orders`.
  void WriteOrders(const std::vector<OrderDetail>& orders) {
    absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path_);
    ASSERT_TRUE(w.ok()) << w.status();
    if (run_ == 0) {
      RunMeta meta;
      meta.tsc_hz = 2e9;
      absl::StatusOr<int64_t> run = (*w)->BeginRun(meta);
      ASSERT_TRUE(run.ok()) << run.status();
      run_ = *run;
    } else {
      ASSERT_TRUE((*w)->LookupRun(run_).ok());
      ASSERT_TRUE((*w)->ResumeRun(run_).ok());
    }
    uint64_t already = 0;
    ASSERT_TRUE((*w)->Write(run_, {}, {}, orders, nullptr, &already).ok());
  }

  // Every block rewritten in the older encoding, and the old views.
  void MakeOld() {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::vector<std::tuple<int64_t, std::string, std::string>> blocks;
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT block_key, orders, detail FROM order_blocks", -1, &s,
                                 nullptr),
              SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const std::string_view orders(static_cast<const char*>(sqlite3_column_blob(s, 1)),
                                    static_cast<size_t>(sqlite3_column_bytes(s, 1)));
      ASSERT_TRUE(IsCompactBlock(orders));
      absl::StatusOr<std::string> json = BlockOrdersJson(orders);
      absl::StatusOr<std::vector<std::string>> details = BlockDetails(orders, "");
      ASSERT_TRUE(json.ok() && details.ok());
      std::string detail;
      for (const std::string& d : *details) detail += d;
      blocks.emplace_back(sqlite3_column_int64(s, 0), *json, detail);
    }
    sqlite3_finalize(s);
    ASSERT_FALSE(blocks.empty());
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE order_blocks SET orders = ?, detail = ? WHERE block_key = ?",
                                 -1, &s, nullptr),
              SQLITE_OK);
    for (const auto& [key, json, detail] : blocks) {
      sqlite3_bind_text(s, 1, json.data(), static_cast<int>(json.size()), SQLITE_STATIC);
      sqlite3_bind_blob(s, 2, detail.data(), static_cast<int>(detail.size()), SQLITE_STATIC);
      sqlite3_bind_int64(s, 3, key);
      ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
      sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    ASSERT_EQ(sqlite3_exec(db, kOldViews, nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }

  std::string dir_, path_;
  int64_t run_ = 0;
};

TEST_F(OldBlocks, ReadTheSameAsCompactOnesAndTakeNewBlocksBeside) {
  std::vector<OrderDetail> orders;
  for (uint64_t id = 1; id <= 300; ++id) orders.push_back(Order(id, kT0));
  WriteOrders(orders);
  const std::vector<std::string> compact = Dump(path_);
  // 300 orders, 600 stage latencies, 600 samples, 600 stamps.
  ASSERT_EQ(compact.size(), 2100u);
  // The writer stored what it was given; by hand from Order(): 42 of the
  // ids 1..300 are multiples of 7 (parents), 27 of 11 (no total), 60 of 5
  // (incomplete, missing "c"), 100 of 3 (spans), 75 of 4 (flagged 4).
  const auto count = [&](const std::string& where) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    const std::vector<std::string> r = Rows(db, "SELECT count(*) FROM orders WHERE " + where);
    sqlite3_close(db);
    return r.empty() ? std::string("?") : r[0];
  };
  EXPECT_EQ(count("parent_order_id = order_id - 1"), "42|");
  EXPECT_EQ(count("parent_order_id IS NOT NULL"), "42|");
  EXPECT_EQ(count("total_ns IS NULL"), "27|");
  EXPECT_EQ(count("total_ns = order_id"), "273|");
  EXPECT_EQ(count("complete = 0 AND missing = 'c'"), "60|");
  EXPECT_EQ(count("complete = 1 AND missing IS NULL"), "240|");
  EXPECT_EQ(count("flags = 4"), "75|");
  EXPECT_EQ(count("first_tsc = 1000000 + order_id * 10 AND first_utc_ns = " +
                  std::to_string(kT0) + " + (order_id % 1000) * 1000"),
            "300|");
  MakeOld();
  EXPECT_EQ(Dump(path_), compact);
  // The viewer's reader takes the schema-3 store as it is.
  {
    absl::StatusOr<std::unique_ptr<StoreReader>> r =
        internal::OpenSqliteStoreReader(path_, OpenMode::kSnapshot);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->schema_version(), 3);
  }
  // A writer on the old store: it becomes schema 4 in place, said in one
  // line, with no backup (no row is rewritten); the views are replaced, the
  // old blocks stay, new orders go into compact blocks beside them.
  {
    std::vector<std::string> said;
    SqliteOpenOptions options;
    options.on_migration = [&](const std::string& line) { said.push_back(line); };
    absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path_, options);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find("store schema 3 moved to schema 4 in place"), std::string::npos)
        << said[0];
  }
  EXPECT_NE(::access((path_ + ".schema3.bak").c_str(), F_OK), 0);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    EXPECT_EQ(Rows(db, "SELECT value FROM meta WHERE key = 'schema_version'"),
              std::vector<std::string>{"4|"});
    sqlite3_close(db);
  }
  EXPECT_EQ(Dump(path_), compact);
  WriteOrders({Order(301, kT0 + kSecond), Order(302, kT0 + kSecond)});
  std::vector<std::string> mixed = Dump(path_);
  ASSERT_EQ(mixed.size(), 2100u + 14u);
  // Every row of the old blocks is still there, as it was.
  std::vector<std::string> before = compact;
  std::sort(before.begin(), before.end());
  std::sort(mixed.begin(), mixed.end());
  EXPECT_TRUE(std::includes(mixed.begin(), mixed.end(), before.begin(), before.end()));
}

}  // namespace
}  // namespace ticktrace::store
