// When the store sink hands its work to the writer: by size, by time (a
// clock the test moves), and at once for Flush and a new snapshot; with the
// sequence numbers the store holds in the same transaction.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collector/sinks/store_sink.h"
#include "gtest/gtest.h"
#include "ticktrace/store/names.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kT0 = 1'800'000'000'000'000'000;  // a whole second

// Keeps what each Write() got; writes nothing.
class RecordingWriter : public store::Writer {
 public:
  struct Write_ {
    size_t orders = 0;
    std::vector<store::IntervalDelta> intervals;
    std::vector<store::IntervalOrders> interval_orders;
    std::vector<std::pair<std::string, int64_t>> counters;
  };
  absl::StatusOr<int64_t> BeginRun(const store::RunMeta&) override { return 1; }
  absl::StatusOr<store::RunState> LookupRun(int64_t) override { return store::RunState{}; }
  absl::StatusOr<int64_t> ResumeRun(int64_t) override { return 1; }
  absl::Status Write(int64_t, const std::vector<store::IntervalDelta>& intervals,
                     const std::vector<store::IntervalOrders>& interval_orders,
                     const std::vector<store::OrderDetail>& orders, const store::Snapshot* snapshot,
                     uint64_t*) override {
    std::lock_guard lock(mu_);
    Write_ w{orders.size(), intervals, interval_orders, {}};
    if (snapshot != nullptr) w.counters = snapshot->counters;
    writes_.push_back(std::move(w));
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> ApplyRetention(int64_t, std::optional<int64_t>, uint64_t,
                                          std::optional<int64_t>) override {
    return 0;
  }
  absl::Status EndRun(int64_t, int64_t) override { return absl::OkStatus(); }
  const std::string& location() const override { return location_; }

  std::vector<Write_> writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }
  size_t orders_written() const {
    size_t n = 0;
    for (const Write_& w : writes()) n += w.orders;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Write_> writes_;
  std::string location_ = "recording";
};

// Order `seq`: one sample of stage a->b, `latency_ns`, two stamps.
FinishedOrder Order(uint64_t seq, double latency_ns) {
  FinishedOrder f;
  f.seq = seq;
  f.order.order_id = seq;
  f.order.first_utc_ns = kT0 + static_cast<int64_t>(seq);
  f.order.complete = true;
  store::SampleDetail s;
  s.stage = "a->b";
  s.start_utc_ns = f.order.first_utc_ns;
  s.latency_ns = latency_ns;
  f.order.samples.push_back(s);
  for (int i = 0; i < 2; ++i) {
    store::StampDetail st;
    st.tag = i == 0 ? "a" : "b";
    st.tsc = seq * 1000 + static_cast<uint64_t>(i);
    st.utc_ns = f.order.first_utc_ns + i;
    f.order.stamps.push_back(st);
  }
  return f;
}

// Waits (up to 10 s) until `writer` holds `orders` orders.
bool WaitForOrders(const RecordingWriter& writer, size_t orders) {
  for (int i = 0; i < 1000 && writer.orders_written() < orders; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return writer.orders_written() >= orders;
}

int64_t CounterOf(const std::vector<std::pair<std::string, int64_t>>& counters, store::Counter c) {
  for (const auto& [name, value] : counters) {
    if (name == store::CounterName(c)) return value;
  }
  return -1;
}

// Submit() after every pass hands nothing over until 200 ms after the first
// order gathered; at 200 ms everything goes, in one batch.
TEST(StoreSinkBatchingTest, ByTime) {
  RecordingWriter writer;
  int64_t now_ns = 5'000;
  StoreSinkOptions o;
  o.submit_every_ns = 200'000'000;
  o.now_ns = [&now_ns] { return now_ns; };
  StoreSink sink(&writer, 1, o);
  sink.Start();
  for (uint64_t seq = 1; seq <= 3; ++seq) sink.OnFinishedOrder(Order(seq, 100.0 * seq));
  sink.Submit();
  EXPECT_EQ(sink.orders_gathered(), 3u);
  now_ns += 199'999'999;
  sink.Submit();
  EXPECT_EQ(sink.orders_gathered(), 3u);
  EXPECT_TRUE(writer.writes().empty());  // nothing was queued: nothing can be written
  now_ns += 1;
  sink.Submit();
  EXPECT_EQ(sink.orders_gathered(), 0u);
  ASSERT_TRUE(WaitForOrders(writer, 3));
  const std::vector<RecordingWriter::Write_> w = writer.writes();
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(w[0].intervals.size(), 1u);
  EXPECT_EQ(w[0].intervals[0].stage, "a->b");
  EXPECT_EQ(w[0].intervals[0].start_utc_ns, kT0);
  EXPECT_EQ(w[0].intervals[0].samples_all, 3u);
  EXPECT_EQ(w[0].intervals[0].histogram.count(), 3u);
  EXPECT_EQ(w[0].intervals[0].histogram.min(), 100);
  EXPECT_EQ(w[0].intervals[0].histogram.max(), 300);
  ASSERT_EQ(w[0].interval_orders.size(), 1u);
  EXPECT_EQ(w[0].interval_orders[0].orders, 3u);
  EXPECT_EQ(CounterOf(w[0].counters, store::Counter::kStoreStatsThrough), 3);
  EXPECT_EQ(CounterOf(w[0].counters, store::Counter::kStoreDetailThrough), 3);

  // The clock starts again with the next order gathered.
  sink.OnFinishedOrder(Order(4, 400));
  now_ns += 100'000'000;
  sink.Submit();
  EXPECT_EQ(sink.orders_gathered(), 1u);
  ASSERT_TRUE(sink.Stop().ok());
  EXPECT_EQ(writer.orders_written(), 4u);
  EXPECT_EQ(sink.counters().orders_stored, 4u);
}

// max_orders_per_transaction kept orders go at once, without Submit().
TEST(StoreSinkBatchingTest, BySize) {
  RecordingWriter writer;
  StoreSinkOptions o;
  o.max_orders_per_transaction = 2;
  o.now_ns = [] { return int64_t{0}; };  // time never makes a batch due
  StoreSink sink(&writer, 1, o);
  sink.Start();
  sink.OnFinishedOrder(Order(1, 100));
  EXPECT_EQ(sink.orders_gathered(), 1u);
  sink.OnFinishedOrder(Order(2, 100));
  EXPECT_EQ(sink.orders_gathered(), 0u);
  ASSERT_TRUE(WaitForOrders(writer, 2));
  sink.OnFinishedOrder(Order(3, 100));
  sink.Submit();
  EXPECT_EQ(sink.orders_gathered(), 1u);
  ASSERT_TRUE(sink.Stop().ok());
  EXPECT_EQ(writer.orders_written(), 3u);
}

// Flush and a new snapshot hand everything over whatever the clock says; the
// snapshot is written with, or after, the orders gathered before it.
TEST(StoreSinkBatchingTest, FlushAndSnapshotHandOverAtOnce) {
  RecordingWriter writer;
  StoreSinkOptions o;
  o.now_ns = [] { return int64_t{0}; };
  StoreSink sink(&writer, 1, o);
  sink.Start();
  sink.OnFinishedOrder(Order(1, 100));
  sink.OnFinishedOrder(Order(2, 100));
  store::Snapshot s;
  s.counters.emplace_back("test_marker", 7);
  sink.SetSnapshot(s);
  EXPECT_EQ(sink.orders_gathered(), 0u);
  sink.Flush();
  size_t orders_up_to_snapshot = 0;
  bool seen = false;
  for (const RecordingWriter::Write_& w : writer.writes()) {
    orders_up_to_snapshot += w.orders;
    for (const auto& [name, value] : w.counters) seen = seen || name == "test_marker";
    if (seen) break;
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(orders_up_to_snapshot, 2u);

  sink.OnFinishedOrder(Order(3, 100));
  sink.Flush();
  EXPECT_EQ(sink.orders_gathered(), 0u);
  EXPECT_EQ(writer.orders_written(), 3u);
  EXPECT_EQ(sink.stored_through(), 3u);
  ASSERT_TRUE(sink.Stop().ok());
}

}  // namespace
}  // namespace ticktrace::collect
