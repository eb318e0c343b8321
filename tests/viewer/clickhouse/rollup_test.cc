// The per-minute rollup of the ClickHouse store (schema 2,
// store/clickhouse/clickhouse_rollup.h) against the per-interval path, on a
// real clickhouse-server (tests/support/clickhouse_server.h): hand-built
// intervals written by the collector's ClickHouseWriter, read back by the
// viewer's reader in minute buckets with the rollup and without it (the
// rollup table dropped and created again empty), and both against the
// figures the intervals say.
//
// The intervals (1-s intervals from kT0, a whole minute; one stage "a->b"):
// second s in [0, 300) holds 10 samples in the percentiles, 1000 + 10 s + j
// ns for j in 0..9, and s % 3 more samples flagged `migrated` outside them
// (samples_all = 10 + s % 3). So minute m holds the 600 distinct values
// 1000 + 600 m .. 1000 + 600 m + 599 (p50: the 300th, 1000 + 600 m + 299;
// p99: the 594th), 600 + 60 samples in all, 60 flagged. Written in batches
// of 10 s; then one late delta of second 5 (a minute rolled up by then):
// one sample of 50 ns.

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "store/clickhouse/row_binary.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/clickhouse/clickhouse_writer.h"
#include "store/clickhouse/http_client.h"
#include "gtest/gtest.h"
#include "tests/support/clickhouse_server.h"
#include "tests/support/clickhouse_suite.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {
namespace {

using ::ticktrace::testing::ClickHouseServer;
using ::ticktrace::testing::StartSuiteServer;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kT0 = 1'800'000'000'000'000'000;  // a whole minute (30 000 000 of them)
constexpr int kSeconds = 300;
constexpr double kRelativeError = 1.0 / 256;  // the histogram's (docs/store.md)

store::IntervalDelta Second(int s) {
  store::IntervalDelta d;
  d.stage = "a->b";
  d.start_utc_ns = kT0 + s * kSecond;
  for (int j = 0; j < 10; ++j) d.histogram.Add(1000.0 + 10 * s + j);
  d.samples_all = 10 + s % 3;
  d.flag_counts[0] = s % 3;  // migrated
  return d;
}

// Writes the story into `database` with the collector's writer; returns
// the run id.
int64_t WriteStory(ClickHouseServer& server, const std::string& database, bool late) {
  store::ClickHouseOptions o;
  o.http.port = server.http_port();
  o.database = database;
  absl::StatusOr<std::unique_ptr<store::ClickHouseWriter>> w = store::ClickHouseWriter::Open(o);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return -1;
  store::RunMeta meta;
  meta.session = "rollup";
  meta.tsc_hz = 1e9;
  meta.interval_ns = kSecond;
  absl::StatusOr<int64_t> run = (*w)->BeginRun(meta);
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return -1;
  uint64_t already = 0;
  for (int from = 0; from < kSeconds; from += 10) {
    std::vector<store::IntervalDelta> batch;
    for (int s = from; s < from + 10; ++s) batch.push_back(Second(s));
    absl::Status st = (*w)->Write(*run, batch, {}, {}, nullptr, &already);
    EXPECT_TRUE(st.ok()) << st;
  }
  if (late) {
    store::IntervalDelta d;
    d.stage = "a->b";
    d.start_utc_ns = kT0 + 5 * kSecond;
    d.histogram.Add(50);
    d.samples_all = 1;
    absl::Status st = (*w)->Write(*run, {d}, {}, {}, nullptr, &already);
    EXPECT_TRUE(st.ok()) << st;
  }
  absl::Status st = (*w)->EndRun(*run, kT0 + kSeconds * kSecond);
  EXPECT_TRUE(st.ok()) << st;
  return *run;
}

std::vector<store::IntervalRow> Minutes(ClickHouseServer& server, const std::string& database,
                                 int64_t run, const store::TimeWindow& window) {
  absl::StatusOr<std::unique_ptr<store::StoreReader>> r = store::StoreReader::Open(server.Uri(database));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  absl::StatusOr<std::vector<store::IntervalRow>> rows =
      (*r)->Intervals(run, std::nullopt, window, kMinute);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<store::IntervalRow>();
}

int64_t Count(ClickHouseServer& server, const std::string& sql) {
  absl::StatusOr<std::string> n = server.Query(sql);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? std::stoll(std::string(absl::StripAsciiWhitespace(*n))) : -1;
}

// The rollup table emptied: the reader falls back to the intervals.
void DropRollup(ClickHouseServer& server, const std::string& database) {
  ASSERT_TRUE(server.Query(absl::StrCat("DROP TABLE ", database, ".intervals_minute")).ok());
  store::HttpClient client(store::HttpClientOptions::FromEnvironment("127.0.0.1",
                                                                     server.http_port()));
  ASSERT_TRUE(store::EnsureClickHouseSchema(client, database).ok());
  ASSERT_EQ(Count(server, absl::StrCat("SELECT count() FROM ", database, ".intervals_minute")), 0);
}

void ExpectSame(const std::vector<store::IntervalRow>& a, const std::vector<store::IntervalRow>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].stage, b[k].stage);
    EXPECT_EQ(a[k].start_utc_ns, b[k].start_utc_ns);
    EXPECT_EQ(a[k].count, b[k].count) << k;
    EXPECT_EQ(a[k].samples_all, b[k].samples_all) << k;
    EXPECT_EQ(a[k].flag_counts, b[k].flag_counts) << k;
    EXPECT_EQ(a[k].min_ns, b[k].min_ns) << k;
    EXPECT_EQ(a[k].max_ns, b[k].max_ns) << k;
    EXPECT_EQ(a[k].p50_ns, b[k].p50_ns) << k;
    EXPECT_EQ(a[k].p99_ns, b[k].p99_ns) << k;
    EXPECT_EQ(a[k].p999_ns, b[k].p999_ns) << k;
  }
}

class ClickHouseRollupTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartSuiteServer();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
    ASSERT_NE(server_, nullptr);
  }
  static ClickHouseServer* server_;
};
ClickHouseServer* ClickHouseRollupTest::server_ = nullptr;

TEST_F(ClickHouseRollupTest, MinutesFromTheRollupEqualTheIntervalsAndTheStory) {
  const std::string db = "tt_rollup";
  const int64_t run = WriteStory(*server_, db, true);
  ASSERT_GE(run, 0);
  // The writer rolled every minute up (EndRun rolls the last ones).
  EXPECT_GE(Count(*server_, absl::StrCat("SELECT count() FROM ", db,
                                         ".intervals_minute WHERE run_id = ", run,
                                         " AND samples_all > 0")),
            5);
  EXPECT_EQ(Count(*server_, absl::StrCat("SELECT uniqExact(start_utc_ns) FROM ", db,
                                         ".intervals_minute WHERE run_id = ", run)),
            5);
  const std::vector<store::IntervalRow> rolled = Minutes(*server_, db, run, store::TimeWindow{});
  ASSERT_EQ(rolled.size(), 5u);
  for (int m = 0; m < 5; ++m) {
    const store::IntervalRow& r = rolled[m];
    EXPECT_EQ(r.stage, "a->b");
    EXPECT_EQ(r.start_utc_ns, kT0 + m * kMinute);
    const int late = m == 0 ? 1 : 0;  // second 5's late sample of 50 ns
    EXPECT_EQ(r.count, 600 + late) << m;
    EXPECT_EQ(r.samples_all, 660 + late) << m;
    EXPECT_EQ(r.flag_counts[0], 60) << m;
    EXPECT_EQ(r.min_ns, m == 0 ? 50.0 : 1000.0 + 600 * m) << m;
    EXPECT_EQ(r.max_ns, 1000.0 + 600 * m + 599) << m;
    // The 300th (and 594th) of 600 distinct values; with the late 50 ns in
    // minute 0, the 301st (595th) of 601, the same values.
    const double p50 = 1000.0 + 600 * m + 299;
    ASSERT_TRUE(r.p50_ns.has_value());
    EXPECT_NEAR(*r.p50_ns, p50, p50 * kRelativeError) << m;
    const double p99 = 1000.0 + 600 * m + 593;
    ASSERT_TRUE(r.p99_ns.has_value());
    EXPECT_NEAR(*r.p99_ns, p99, p99 * kRelativeError) << m;
  }
  // A window that starts and ends inside minutes: whole minutes from the
  // rollup, the edges from the intervals.
  const store::TimeWindow window{kT0 + 90 * kSecond, kT0 + 250 * kSecond};
  const std::vector<store::IntervalRow> rolled_window = Minutes(*server_, db, run, window);
  ASSERT_EQ(rolled_window.size(), 4u);
  EXPECT_EQ(rolled_window[0].count, 300);  // seconds 90..119
  EXPECT_EQ(rolled_window[1].count, 600);
  EXPECT_EQ(rolled_window[2].count, 600);
  EXPECT_EQ(rolled_window[3].count, 100);  // seconds 240..249

  DropRollup(*server_, db);
  ExpectSame(rolled, Minutes(*server_, db, run, store::TimeWindow{}));
  ExpectSame(rolled_window, Minutes(*server_, db, run, window));
}

// The reader does take whole minutes from the rollup: a committed interval
// row added behind the writer's back (second 70, minute 1, already rolled
// up) shows in a per-second bucket but not in minute 1 of a minute bucket;
// minute 4's partial window edge comes from the intervals.
TEST_F(ClickHouseRollupTest, WholeMinutesAreReadFromTheRollup) {
  const std::string db = "tt_rollup_used";
  const int64_t run = WriteStory(*server_, db, false);
  ASSERT_GE(run, 0);
  store::HttpClient client(store::HttpClientOptions::FromEnvironment("127.0.0.1",
                                                                     server_->http_port()));
  for (int s : {70, 245}) {
    store::IntervalDelta d = Second(s);
    store::RowBinaryWriter row;
    row.I64(run);
    row.U32(0);  // a->b, the only stage
    row.I64(d.start_utc_ns);
    row.U64(uint64_t(Count(*server_, absl::StrCat("SELECT max(batch) FROM ", db, ".batches"))));
    row.Str(d.stage);
    row.U64(d.samples_all);
    row.U64(d.histogram.count());
    for (uint64_t f : d.flag_counts) row.U64(f);
    row.Nullable(std::optional<double>(d.histogram.min()));
    row.Nullable(std::optional<double>(d.histogram.max()));
    row.F64(d.histogram.sum());
    row.Str(d.histogram.Encode());
    row.EndRow();
    ASSERT_TRUE(client.Insert("INSERT INTO intervals FORMAT RowBinary", row.bytes(), db).ok());
  }
  absl::StatusOr<std::unique_ptr<store::StoreReader>> r = store::StoreReader::Open(server_->Uri(db));
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<std::vector<store::IntervalRow>> seconds =
      (*r)->Intervals(run, std::nullopt, store::TimeWindow{kT0 + 70 * kSecond, kT0 + 71 * kSecond},
                      kSecond);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  ASSERT_EQ(seconds->size(), 1u);
  EXPECT_EQ(seconds->front().count, 20);
  const std::vector<store::IntervalRow> minutes =
      Minutes(*server_, db, run, store::TimeWindow{kT0, kT0 + 250 * kSecond});
  ASSERT_EQ(minutes.size(), 5u);
  EXPECT_EQ(minutes[1].count, 600);      // the rollup's minute 1
  EXPECT_EQ(minutes[4].count, 100 + 10);  // seconds 240..249 and the added 245
}

// A schema-1 store (no rollup table, meta says 1) is migrated when a writer
// opens it: the table made, every run rolled up through its newest minute
// (excluded), version 2; the reader's figures are the same.
TEST_F(ClickHouseRollupTest, SchemaOneStoreIsMigrated) {
  const std::string db = "tt_rollup_migrate";
  const int64_t run = WriteStory(*server_, db, false);
  ASSERT_GE(run, 0);
  const std::vector<store::IntervalRow> before = Minutes(*server_, db, run, store::TimeWindow{});
  ASSERT_EQ(before.size(), 5u);
  ASSERT_TRUE(server_->Query(absl::StrCat("DROP TABLE ", db, ".intervals_minute")).ok());
  ASSERT_TRUE(
      server_->Query(absl::StrCat("INSERT INTO ", db, ".meta VALUES ('schema_version', '1')"))
          .ok());
  {
    absl::StatusOr<std::unique_ptr<store::StoreReader>> r = store::StoreReader::Open(server_->Uri(db));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->schema_version(), 1);
    // A schema-1 store reads from its intervals.
    absl::StatusOr<std::vector<store::IntervalRow>> rows =
        (*r)->Intervals(run, std::nullopt, store::TimeWindow{}, kMinute);
    ASSERT_TRUE(rows.ok()) << rows.status();
    ExpectSame(before, *rows);
  }
  store::ClickHouseOptions o;
  o.http.port = server_->http_port();
  o.database = db;
  absl::StatusOr<std::unique_ptr<store::ClickHouseWriter>> w = store::ClickHouseWriter::Open(o);
  ASSERT_TRUE(w.ok()) << w.status();
  store::HttpClient client(store::HttpClientOptions::FromEnvironment("127.0.0.1",
                                                                     server_->http_port()));
  absl::StatusOr<int> version = store::ReadClickHouseSchemaVersion(client, db);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, 2);
  // Minutes 0..3 rolled up (the newest, 4, is left to the intervals).
  EXPECT_EQ(Count(*server_, absl::StrCat("SELECT uniqExact(start_utc_ns) FROM ", db,
                                         ".intervals_minute WHERE run_id = ", run)),
            4);
  ExpectSame(before, Minutes(*server_, db, run, store::TimeWindow{}));
  // Opened again: nothing rolled twice.
  w->reset();
  absl::StatusOr<std::unique_ptr<store::ClickHouseWriter>> again = store::ClickHouseWriter::Open(o);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Count(*server_, absl::StrCat("SELECT count() FROM ", db,
                                         ".intervals_minute WHERE run_id = ", run)),
            4);
  ExpectSame(before, Minutes(*server_, db, run, store::TimeWindow{}));
}

}  // namespace
}  // namespace ticktrace::view
