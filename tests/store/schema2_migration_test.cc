// A schema-2 store (schema 2's own DDL, fixtures/schema2.sql, with rows
// chosen by hand: one row per order and its unique index) is migrated to
// schema 3's blocks when a writer opens it: a backup first, one line said,
// and then the reader API, docs/store.md's stage_latencies examples and the
// writer's exactly-once check give the answers counted by hand.

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "store/common/detail.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/reader.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Rows Query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  Rows rows;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(s) == SQLITE_ROW) {
      rows.emplace_back();
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const unsigned char* t = sqlite3_column_text(s, i);
        rows.back().emplace_back(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rows;
}

std::string One(const std::string& path, const std::string& sql) {
  const Rows rows = Query(path, sql);
  return rows.empty() || rows[0].empty() ? "<none>" : rows[0][0];
}

// The docs/store.md example (a ```sql block) that contains `needle`.
std::string DocsExample(const std::string& needle) {
  const std::string text = ReadFile(std::string(TICKTRACE_SOURCE_DIR) + "/docs/store.md");
  for (size_t at = text.find("```sql\n"); at != std::string::npos;
       at = text.find("```sql\n", at)) {
    at += 7;
    const size_t end = text.find("```", at);
    if (end == std::string::npos) break;
    std::string code;
    for (absl::string_view line : absl::StrSplit(text.substr(at, end - at), '\n')) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "--")) continue;
      code.append(line.data(), line.size()).push_back('\n');
    }
    for (absl::string_view s : absl::StrSplit(code, ';')) {
      if (s.find(needle) != absl::string_view::npos) {
        return std::string(absl::StripAsciiWhitespace(s));
      }
    }
    at = end + 3;
  }
  ADD_FAILURE() << "docs/store.md has no SQL example with '" << needle << "'";
  return "SELECT 1 WHERE 0";
}

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT = 1'764'590'000 * kSecond;  // the docs examples' window starts here

// One schema-2 order row of run 3: a hop strat_out -> gw_in of `hop_ns`
// (stage 0, and stage 1 `total`), stamps at TSC `tsc` and `tsc + hop_ns`
// (1 tick = 1 ns).
struct V2Order {
  int64_t order_id, instance, first_utc_ns, hop_ns, tsc;
};

std::string PackedHop(const V2Order& o) {
  PackedDetail d;
  d.stamps.push_back({.name_id = 0, .process_id = 1, .tid = 11, .cpu = 0, .tsc_delta = 0});
  d.stamps.push_back({.name_id = 1, .process_id = 2, .tid = 22, .cpu = 1, .tsc_delta = o.hop_ns});
  for (int i = 0; i < 2; ++i) {
    d.samples.push_back(
        {.start_delta_ns = 0, .process_begin = 1, .process_end = 2, .cpu_begin = 0, .cpu_end = 1});
  }
  std::string out;
  PackDetail(d, &out);
  return out;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err << "\n"
                                                                               << sql;
}

// Orders A (100/0), B (101/0), C (100/1: the id reused) and D (102/0), one
// per interval; D is 100 s after the docs' window. Stored in that order.
const std::vector<V2Order> kOrders = {{100, 0, kT + 7, 400, 5'000},
                                      {101, 0, kT + kSecond + 7, 1200, 6'000},
                                      {100, 1, kT + 2 * kSecond + 7, 800, 7'000},
                                      {102, 0, kT + 100 * kSecond, 50, 8'000}};

void MakeSchema2Store(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  Exec(db, ReadFile(std::string(TICKTRACE_SOURCE_DIR) + "/tests/store/fixtures/schema2.sql"));
  for (int run = 1; run <= 3; ++run) {
    Exec(db, absl::StrCat("INSERT INTO runs(run_id, session, host, started_utc_ns, tsc_hz, "
                          "calibration_source, anchor_tsc, anchor_utc_ns, environment, settings, "
                          "pipeline, pipeline_learned) VALUES(",
                          run, ", 's', 'h', ", kT, ", 1e9, 'test', 0, ", kT,
                          ", '{}', '{}', 'strat_out,gw_in', 0)"));
  }
  Exec(db, "INSERT INTO stages VALUES(3, 0, 'strat_out->gw_in', 'hop'), (3, 1, 'total', 'total')");
  Exec(db, "INSERT INTO names VALUES(3, 0, 'strat_out'), (3, 1, 'gw_in')");
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO orders(order_key, run_id, order_id, instance, "
                               "parent_order_id, first_utc_ns, first_tsc, total_ns, complete, "
                               "missing, flags, samples, detail) "
                               "VALUES(?, 3, ?, ?, NULL, ?, ?, ?, 1, NULL, 0, ?, ?)",
                               -1, &s, nullptr),
            SQLITE_OK);
  int64_t key = 1;
  for (const V2Order& o : kOrders) {
    const std::string samples = absl::StrCat("[[0,", o.hop_ns, ",0],[1,", o.hop_ns, ",0]]");
    const std::string detail = PackedHop(o);
    sqlite3_bind_int64(s, 1, key);
    sqlite3_bind_int64(s, 2, o.order_id);
    sqlite3_bind_int64(s, 3, o.instance);
    sqlite3_bind_int64(s, 4, o.first_utc_ns);
    sqlite3_bind_int64(s, 5, o.tsc);
    sqlite3_bind_int64(s, 6, o.hop_ns);
    sqlite3_bind_text(s, 7, samples.data(), static_cast<int>(samples.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 8, detail.data(), static_cast<int>(detail.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_reset(s);
    // Its interval: one order, kept, its key; a histogram of its hop.
    const int64_t start = o.first_utc_ns - o.first_utc_ns % kSecond;
    Exec(db, absl::StrCat("INSERT INTO interval_detail VALUES(3, ", start, ", 1, 1, ", key, ", ",
                          key, ", 0)"));
    Histogram h;
    h.Add(static_cast<double>(o.hop_ns));
    const std::string blob = h.Encode();
    sqlite3_stmt* iv = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO intervals VALUES(3, 0, ?, 1, 1, 0, 0, 0, 0, 0, 0, 0, "
                                 "0, ?, ?, ?, ?)",
                                 -1, &iv, nullptr),
              SQLITE_OK);
    sqlite3_bind_int64(iv, 1, start);
    for (int i = 2; i <= 4; ++i) sqlite3_bind_double(iv, i, static_cast<double>(o.hop_ns));
    sqlite3_bind_blob(iv, 5, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(iv), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(iv);
    ++key;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
}

class Schema2Migration : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ticktrace_schema2_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/store.db";
    MakeSchema2Store(path_);
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_, path_;
};

TEST_F(Schema2Migration, BackupLineAndEveryAnswerByHand) {
  ASSERT_EQ(One(path_, "SELECT value FROM meta WHERE key = 'schema_version'"), "2");
  std::vector<std::string> said;
  SqliteOpenOptions options;
  options.on_migration = [&](const std::string& line) { said.push_back(line); };
  absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path_, options);
  ASSERT_TRUE(w.ok()) << w.status();

  // One line, naming the backup, which is the untouched schema-2 store.
  const std::string backup = path_ + ".schema2.bak";
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("store schema 2 migrated in place to schema 4"), std::string::npos)
      << said[0];
  EXPECT_NE(said[0].find(backup), std::string::npos) << said[0];
  EXPECT_EQ(said[0].find('\n'), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat(backup.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(One(backup, "SELECT value FROM meta WHERE key = 'schema_version'"), "2");
  EXPECT_EQ(One(backup, "SELECT count(*) FROM orders"), "4");

  // Schema 3: four orders in four blocks (one per interval), no orders table.
  EXPECT_EQ(One(path_, "SELECT value FROM meta WHERE key = 'schema_version'"), "4");
  EXPECT_EQ(One(path_, "SELECT type FROM sqlite_master WHERE name = 'orders'"), "view");
  EXPECT_EQ(One(path_, "SELECT count(*) FROM order_blocks"), "4");
  EXPECT_EQ(One(path_, "SELECT count(*) FROM orders"), "4");
  // Each interval's key range is its order's new key.
  EXPECT_EQ(Query(path_,
                  "SELECT count(*) FROM interval_detail d JOIN orders o ON o.order_key = "
                  "d.first_order_key AND o.order_key = d.last_order_key AND o.first_utc_ns >= "
                  "d.start_utc_ns AND o.first_utc_ns < d.start_utc_ns + 1000000000"),
            (Rows{{"4"}}));
  // The view's columns hold the old row's values.
  EXPECT_EQ(Query(path_,
                  "SELECT order_id, instance, first_utc_ns, first_tsc, total_ns, complete, "
                  "missing, flags, samples FROM orders WHERE order_id = 100 ORDER BY instance"),
            (Rows{{"100", "0", std::to_string(kT + 7), "5000", "400", "1", "NULL", "0",
                   "[[0,400,0],[1,400,0]]"},
                  {"100", "1", std::to_string(kT + 2 * kSecond + 7), "7000", "800", "1", "NULL",
                   "0", "[[0,800,0],[1,800,0]]"}}));

  // docs/store.md's stage_latencies examples: the slowest hops of run 3
  // (1200, 800, 400, 50 ns), and per stage in the window kT .. kT + 60 s
  // (A, B and C: mean (400 + 1200 + 800) / 3 = 800).
  EXPECT_EQ(Query(path_, DocsExample("LIMIT 10")),
            (Rows{{"101", "0", "1200", "0"},
                  {"100", "1", "800", "0"},
                  {"100", "0", "400", "0"},
                  {"102", "0", "50", "0"}}));
  EXPECT_EQ(Query(path_, DocsExample("GROUP BY stage")),
            (Rows{{"strat_out->gw_in", "3", "800.0"}, {"total", "3", "800.0"}}));

  // The writer: the last stored orders, newest first (D, then C), and an
  // order of before the migration written again is kept once.
  absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> last = (*w)->LastStoredOrders(3, 2);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, (std::vector<std::pair<uint64_t, uint32_t>>{{102, 0}, {100, 1}}));
  ASSERT_TRUE((*w)->LookupRun(3).ok());
  OrderDetail again;
  again.order_id = 101;
  again.first_utc_ns = kT + kSecond + 7;
  again.first_tsc = 6'000;
  uint64_t already = 0;
  ASSERT_TRUE((*w)->Write(3, {}, {}, {again}, nullptr, &already).ok());
  EXPECT_EQ(already, 1u);
  w->reset();

  // The reader API.
  absl::StatusOr<std::unique_ptr<StoreReader>> r = StoreReader::Open(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<std::vector<OrderRow>> instances = (*r)->OrderInstances(3, 100);
  ASSERT_TRUE(instances.ok()) << instances.status();
  ASSERT_EQ(instances->size(), 2u);
  EXPECT_EQ((*instances)[0].instance, 0);
  EXPECT_EQ((*instances)[0].first_utc_ns, kT + 7);
  EXPECT_EQ((*instances)[1].instance, 1);
  EXPECT_EQ((*instances)[1].total_ns, 800.0);
  absl::StatusOr<std::vector<SampleRow>> samples = (*r)->SamplesOfOrder(3, 101);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 2u);
  for (const SampleRow& s : *samples) {
    EXPECT_EQ(s.latency_ns, 1200.0);
    EXPECT_EQ(s.cpu_end, 1);
  }
  // Stamps from the packed detail: gw_in 1200 ticks (= ns) after strat_out.
  absl::StatusOr<std::vector<StampRow>> stamps = (*r)->StampsOfInstance(3, 101, 0);
  ASSERT_TRUE(stamps.ok()) << stamps.status();
  ASSERT_EQ(stamps->size(), 2u);
  EXPECT_EQ((*stamps)[0].tag, "strat_out");
  EXPECT_EQ((*stamps)[1].tag, "gw_in");
  EXPECT_EQ((*stamps)[1].tsc, 7'200);
  EXPECT_EQ((*stamps)[1].utc_ns, kT + kSecond + 7 + 1200);
  absl::StatusOr<std::vector<RankedOrder>> slowest = (*r)->FindSlowest(3, "strat_out->gw_in", 2);
  ASSERT_TRUE(slowest.ok()) << slowest.status();
  ASSERT_EQ(slowest->size(), 2u);
  EXPECT_EQ((*slowest)[0].order_id, 101);
  EXPECT_EQ((*slowest)[0].latency_ns, 1200.0);
  EXPECT_EQ((*slowest)[1].order_id, 100);
  EXPECT_EQ((*slowest)[1].latency_ns, 800.0);
  absl::StatusOr<std::vector<int64_t>> runs = (*r)->RunsWithOrder(102);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(*runs, std::vector<int64_t>{3});
}

TEST_F(Schema2Migration, ANewerSchemaIsRefusedInOneLine) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  Exec(db, "UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path_);
  ASSERT_FALSE(w.ok());
  const std::string message(w.status().message());
  EXPECT_NE(message.find("store schema 5 is newer"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  struct stat st;
  EXPECT_NE(::stat((path_ + ".schema5.bak").c_str(), &st), 0);
  EXPECT_EQ(One(path_, "SELECT count(*) FROM orders"), "4");  // still schema 2's table
}

}  // namespace
}  // namespace ticktrace::store
