// Schema 3's order blocks through the SQLite writer and reader on real
// files: an interval's orders fill blocks of 256 orders or 3 900 bytes (0,
// 1, 256 and 257 orders), orders re-emitted after a restart across a block
// boundary are kept once,
// and retention deletes whole blocks with their id pages. Expected values
// are the inputs, counted by hand.

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/reader.h"
#include "gtest/gtest.h"
#include "tests/store/sqlite_query.h"

namespace ticktrace::store {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;  // an interval boundary

// Order `id` in the interval starting at `interval`, with a hop of `id` ns;
// its first TSC is told by its id (the same order re-emitted has the same).
OrderDetail Order(uint64_t id, int64_t interval) {
  OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = interval + static_cast<int64_t>(id % 1000) * 1000;
  o.first_tsc = 1'000'000 + id * 10;
  o.first_tsc_utc_ns = o.first_utc_ns;
  o.total_ns = static_cast<double>(id);
  o.complete = true;
  o.stamps.push_back({.tag = "a", .process_id = 1, .tid = 1, .cpu = 0, .tsc = o.first_tsc,
                      .utc_ns = o.first_utc_ns});
  o.stamps.push_back({.tag = "b", .process_id = 1, .tid = 1, .cpu = 0, .tsc = o.first_tsc + id,
                      .utc_ns = o.first_utc_ns + static_cast<int64_t>(id)});
  o.samples.push_back({.stage = "a->b", .start_utc_ns = o.first_utc_ns,
                       .latency_ns = static_cast<double>(id)});
  o.samples.push_back({.stage = std::string(kTotalStage), .start_utc_ns = o.first_utc_ns,
                       .latency_ns = static_cast<double>(id)});
  return o;
}

// Orders first..last (inclusive) in `interval`.
std::vector<OrderDetail> Orders(uint64_t first, uint64_t last, int64_t interval) {
  std::vector<OrderDetail> out;
  for (uint64_t id = first; id <= last; ++id) out.push_back(Order(id, interval));
  return out;
}

class OrderBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ticktrace_blocks_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/t.db";
    Open();
    RunMeta meta;
    meta.tsc_hz = 1e9;
    absl::StatusOr<int64_t> run = w_->BeginRun(meta);
    ASSERT_TRUE(run.ok()) << run.status();
    run_ = *run;
  }
  void TearDown() override {
    w_.reset();
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  void Open() {
    absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path_);
    ASSERT_TRUE(w.ok()) << w.status();
    w_ = std::move(*w);
  }
  // A collector's restart: a new writer on the store resumes the run.
  void Restart() {
    w_.reset();
    Open();
    ASSERT_TRUE(w_->LookupRun(run_).ok());
    ASSERT_TRUE(w_->ResumeRun(run_).ok());
  }
  void Write(const std::vector<OrderDetail>& orders, std::vector<IntervalOrders> counted = {}) {
    ASSERT_TRUE(w_->Write(run_, {}, counted, orders, nullptr, &already_).ok());
  }
  int64_t Int(const std::string& sql) { return QueryInt(path_, sql); }
  std::string In(int64_t interval) {
    return absl::StrCat(" WHERE start_utc_ns = ", interval);
  }

  std::string dir_, path_;
  std::unique_ptr<SqliteWriter> w_;
  int64_t run_ = 0;
  uint64_t already_ = 0;
};

// A block ends at 256 orders or when its encoding reaches 3 900 bytes
// (sqlite_block_codec.h). By hand, from the layout in
// sqlite_block_codec.cc, for Order(id) with ids from 1001 (or 2001) up, one
// interval: the header takes 27 bytes (version 1, order count 2 from 128
// orders on, stamp table 1 + 2 x 6, sample table 1 + 2 x 5); an order 22
// (bits 1, id step 1, UTC step 1000 ns 2, TSC step 10 ticks 1, total 1,
// sample count 1, "a->b" 1 + latency 2 + start 1, "total" 1 + latency 2 +
// start -id 2, stamp count 1, "a" 1 + 1, "b" 1 + 2), the block's first 25
// (its id 2 bytes, its TSC 3). 27 + 25 + 22 (n - 1) >= 3 900 first at
// n = 176: 256 orders make blocks of 176 and 80, 257 of 176 and 81.
TEST_F(OrderBlocks, AnIntervalFillsBlocksBySize) {
  // Intervals 0..3 s hold 0, 1, 256 and 257 orders, all in one batch.
  const int64_t t1 = kT0 + kSecond, t2 = kT0 + 2 * kSecond, t3 = kT0 + 3 * kSecond;
  std::vector<OrderDetail> orders = Orders(1, 1, t1);
  for (OrderDetail& o : Orders(1001, 1256, t2)) orders.push_back(std::move(o));
  for (OrderDetail& o : Orders(2001, 2257, t3)) orders.push_back(std::move(o));
  Write(orders, {{kT0, 5, 0}, {t1, 1, 0}, {t2, 256, 0}, {t3, 257, 0}});
  EXPECT_EQ(already_, 0u);

  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks" + In(kT0)), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks" + In(t1)), 1);
  const std::string length = "json_array_length(ticktrace_block_orders(orders))";
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks" + In(t2)), 2);
  EXPECT_EQ(Int("SELECT max(" + length + ") FROM order_blocks" + In(t2)), 176);
  EXPECT_EQ(Int("SELECT min(" + length + ") FROM order_blocks" + In(t2)), 80);
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks" + In(t3)), 2);
  EXPECT_EQ(Int("SELECT max(" + length + ") FROM order_blocks" + In(t3)), 176);
  EXPECT_EQ(Int("SELECT min(" + length + ") FROM order_blocks" + In(t3)), 81);
  // interval_detail: what was counted, what was kept (none where none came).
  EXPECT_EQ(Int("SELECT orders_kept FROM interval_detail" + In(kT0)), 0);
  EXPECT_EQ(Int("SELECT first_order_key IS NULL FROM interval_detail" + In(kT0)), 1);
  EXPECT_EQ(Int("SELECT orders_kept FROM interval_detail" + In(t1)), 1);
  EXPECT_EQ(Int("SELECT orders_kept FROM interval_detail" + In(t2)), 256);
  EXPECT_EQ(Int("SELECT orders_kept FROM interval_detail" + In(t3)), 257);
  // The view: one row per order, each order's key within its interval's range.
  EXPECT_EQ(Int("SELECT count(*) FROM orders"), 514);
  EXPECT_EQ(Int("SELECT count(DISTINCT order_key) FROM orders"), 514);
  EXPECT_EQ(Int("SELECT count(*) FROM orders o JOIN interval_detail d ON o.first_utc_ns >= "
                "d.start_utc_ns AND o.first_utc_ns < d.start_utc_ns + 1000000000 WHERE "
                "o.order_key BETWEEN d.first_order_key AND d.last_order_key"),
            514);
  EXPECT_EQ(Int("SELECT count(*) FROM stage_latencies"), 2 * 514);
  EXPECT_EQ(Int("SELECT sum(latency_ns) FROM stage_latencies WHERE stage = 'a->b'"),
            1 + (1001 + 1256) * 256 / 2 + (2001 + 2257) * 257 / 2);

  // The reader finds the orders on either side of the boundary by id, and
  // every sample of the interval by time.
  w_.reset();
  absl::StatusOr<std::unique_ptr<StoreReader>> r = StoreReader::Open(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int64_t id : {2001, 2256, 2257}) {
    absl::StatusOr<std::vector<SampleRow>> samples = (*r)->SamplesOfOrder(run_, id);
    ASSERT_TRUE(samples.ok()) << samples.status();
    ASSERT_EQ(samples->size(), 2u) << id;
    EXPECT_EQ((*samples)[0].latency_ns, static_cast<double>(id));
    absl::StatusOr<std::vector<StampRow>> stamps = (*r)->Stamps(run_, id);
    ASSERT_TRUE(stamps.ok()) << stamps.status();
    ASSERT_EQ(stamps->size(), 2u);
    EXPECT_EQ((*stamps)[1].tsc - (*stamps)[0].tsc, id);
  }
  SampleFilter filter;
  filter.stage = "a->b";
  filter.since_utc_ns = t3;
  filter.until_utc_ns = t3 + kSecond - 1;
  int64_t count = 0;
  ASSERT_TRUE((*r)->ForEachSample(run_, filter, false, [&](const SampleRow&) { ++count; }).ok());
  EXPECT_EQ(count, 257);
  absl::StatusOr<std::vector<OrderRow>> first = (*r)->OrdersByTime(run_, 3);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0].order_id, 1);     // t1
  EXPECT_EQ((*first)[1].order_id, 1001);  // t2, by first_utc_ns
  EXPECT_EQ((*first)[2].order_id, 1002);
}

// Orders without stamps or samples take 7 bytes each (bits, id step, UTC
// step 2, TSC step, two counts): 256 of them end a block well before its
// 3 900 bytes.
TEST_F(OrderBlocks, SmallOrdersFillBlocksOf256) {
  std::vector<OrderDetail> orders;
  for (uint64_t id = 1; id <= 257; ++id) {
    OrderDetail o;
    o.order_id = id;
    o.first_utc_ns = kT0 + static_cast<int64_t>(id) * 1000;
    o.first_tsc = 1'000'000 + id * 10;
    o.first_tsc_utc_ns = o.first_utc_ns;
    o.complete = true;
    orders.push_back(o);
  }
  Write(orders, {{kT0, 257, 0}});
  const std::string length = "json_array_length(ticktrace_block_orders(orders))";
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks"), 2);
  EXPECT_EQ(Int("SELECT max(" + length + ") FROM order_blocks"), 256);
  EXPECT_EQ(Int("SELECT min(" + length + ") FROM order_blocks"), 1);
  EXPECT_EQ(Int("SELECT count(*) FROM orders"), 257);
  EXPECT_EQ(Int("SELECT max(order_key) - min(order_key) FROM orders"), 256);
}

TEST_F(OrderBlocks, OrdersReEmittedAcrossABlockAreKeptOnce) {
  // 300 orders in two blocks: the first ends at 3 900 bytes, between ids
  // 150 and 300 (ids 1..63 take about 17 bytes each, the others 22, as in
  // AnIntervalFillsBlocksBySize: near id 190).
  Write(Orders(1, 300, kT0));
  ASSERT_EQ(Int("SELECT count(*) FROM order_blocks"), 2);
  ASSERT_LT(Int("SELECT max(order_key) FROM orders WHERE order_id <= 150") / 256,
            Int("SELECT min(order_key) FROM orders WHERE order_id >= 300") / 256);
  // A restart re-emits 150..300 (both blocks) with 301..310 new, in one batch.
  Restart();
  Write(Orders(150, 310, kT0));
  EXPECT_EQ(already_, 151u);
  EXPECT_EQ(Int("SELECT count(*) FROM orders"), 310);
  EXPECT_EQ(Int("SELECT count(DISTINCT order_id) FROM orders"), 310);
  EXPECT_EQ(Int("SELECT max(instance) FROM orders"), 0);
  EXPECT_EQ(Int("SELECT orders_kept FROM interval_detail" + In(kT0)), 310);
  // Without a restart too: the same orders again are kept once, and a
  // reuse of id 5 (instance 0 again, another first TSC) is instance 1.
  OrderDetail reused = Order(5, kT0 + kSecond);
  reused.first_tsc = 77;
  Write({Order(256, kT0), Order(257, kT0), reused});
  EXPECT_EQ(already_, 153u);
  EXPECT_EQ(Int("SELECT count(*) FROM orders"), 311);
  EXPECT_EQ(Int("SELECT instance FROM orders WHERE order_id = 5 AND first_tsc = 77"), 1);
  // The last stored, newest first.
  absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> last = w_->LastStoredOrders(run_, 3);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, (std::vector<std::pair<uint64_t, uint32_t>>{{5, 1}, {310, 0}, {309, 0}}));
}

TEST_F(OrderBlocks, RetentionDeletesWholeBlocksAndTheirIdPages) {
  const int64_t t1 = kT0 + kSecond, t2 = kT0 + 2 * kSecond;
  std::vector<OrderDetail> orders = Orders(1, 257, kT0);
  for (OrderDetail& o : Orders(1001, 1257, t1)) orders.push_back(std::move(o));
  for (OrderDetail& o : Orders(2001, 2003, t2)) orders.push_back(std::move(o));
  Write(orders, {{kT0, 257, 0}, {t1, 257, 0}, {t2, 3, 0}});
  ASSERT_EQ(Int("SELECT count(*) FROM order_blocks"), 5);
  const std::string dangling =
      "SELECT count(*) FROM order_ids i WHERE NOT EXISTS (SELECT 1 FROM order_blocks b WHERE "
      "b.block_key = i.block_key)";

  // By age: the detail of the intervals before t1 (257 orders, 2 blocks).
  absl::StatusOr<uint64_t> deleted = w_->ApplyRetention(run_, t1, 0, std::nullopt);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 257u);
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks" + In(kT0)), 0);
  EXPECT_EQ(Int("SELECT detail_deleted FROM interval_detail" + In(kT0)), 1);
  EXPECT_EQ(Int("SELECT detail_deleted FROM interval_detail" + In(t1)), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM orders"), 260);
  EXPECT_EQ(Int(dangling), 0);

  // By size: every interval's detail goes while the store is above 1 byte.
  deleted = w_->ApplyRetention(run_, std::nullopt, 1, std::nullopt);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 260u);
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM order_ids"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM interval_detail WHERE detail_deleted = 0"), 0);

  // An order whose detail was deleted, re-emitted, is stored again: the
  // store no longer holds it.
  Write({Order(2, kT0)});
  EXPECT_EQ(already_, 0u);
  EXPECT_EQ(Int("SELECT count(*) FROM orders"), 1);
}

// Size retention across runs: a store shared by two runs retires the older
// run's detail first, whatever run is being written, oldest interval first;
// Size() is what the files take on disk.
TEST_F(OrderBlocks, SizeRetentionRetiresTheOldestRunFirst) {
  const int64_t t1 = kT0 + kSecond, t2 = kT0 + 2 * kSecond;
  // Run 1: 2 x 2000 orders in two intervals; then run 2: 2000 orders.
  std::vector<OrderDetail> first = Orders(1, 2000, kT0);
  for (OrderDetail& o : Orders(2001, 4000, t1)) first.push_back(std::move(o));
  Write(first, {{kT0, 2000, 0}, {t1, 2000, 0}});
  const int64_t run1 = run_;
  RunMeta meta;
  meta.tsc_hz = 1e9;
  absl::StatusOr<int64_t> run2 = w_->BeginRun(meta);
  ASSERT_TRUE(run2.ok()) << run2.status();
  run_ = *run2;
  Write(Orders(1, 2000, t2), {{t2, 2000, 0}});

  const std::optional<StoreSize> size = w_->Size();
  ASSERT_TRUE(size.has_value());
  EXPECT_GT(size->live_bytes, 0u);
  EXPECT_GE(size->disk_bytes, size->live_bytes);  // the files hold the live pages

  // A limit just below what the store holds: some detail goes, and what
  // goes is a prefix of (run 1 at kT0, run 1 at t1, run 2 at t2) -- how long
  // a prefix depends on the room the writer keeps for its WAL.
  absl::StatusOr<uint64_t> deleted =
      w_->ApplyRetention(run_, std::nullopt, size->disk_bytes - 1, std::nullopt);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  auto gone = [&](int64_t run, int64_t start) {
    return Int(absl::StrCat("SELECT detail_deleted FROM interval_detail WHERE run_id = ", run,
                            " AND start_utc_ns = ", start));
  };
  const int64_t d1 = gone(run1, kT0), d2 = gone(run1, t1), d3 = gone(run_, t2);
  EXPECT_EQ(d1, 1);
  EXPECT_GE(d1, d2);
  EXPECT_GE(d2, d3);
  EXPECT_EQ(*deleted, 2000u * static_cast<uint64_t>(d1 + d2 + d3));
  // A limit of 1 byte: everything goes, run 2 last; the statistics rows stay.
  deleted = w_->ApplyRetention(run_, std::nullopt, 1, std::nullopt);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(Int("SELECT count(*) FROM order_blocks"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM interval_detail WHERE detail_deleted = 1"), 3);
  EXPECT_EQ(Int("SELECT sum(orders) FROM interval_detail"), 6000);
}

}  // namespace
}  // namespace ticktrace::store
