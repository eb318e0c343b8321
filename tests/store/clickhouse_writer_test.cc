// ClickHouseWriter against a real clickhouse-server (tests/support fixture):
// a batch set read back with SQL over HTTP, a batch whose answer is lost
// written exactly once, a resume that drops an uncommitted batch and keeps
// re-emitted orders once, and a server killed and restarted in the middle of
// a stream of batches losing and duplicating nothing. Expected values are
// computed by hand from the batches the test writes.
//
// The lost answer comes from a real TCP relay between the writer and the
// server that forwards an INSERT into `orders` and then closes the client's
// connection instead of relaying the server's answer: the server applied
// it, the writer does not know.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/clickhouse/clickhouse_writer.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/reader.h"
#include "gtest/gtest.h"
#include "tests/support/clickhouse_server.h"

namespace ticktrace::store {
namespace {

using ticktrace::testing::ClickHouseServer;

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kT0 = 1'764'000'000LL * kSecondNs;  // an interval start

// A loopback TCP relay; `drop_answer_marker` armed: the first request that
// contains it is forwarded, and the server's answer is not (the client's
// connection is closed when the answer arrives).
class Relay {
 public:
  explicit Relay(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(listen_fd_, 16);
    thread_ = std::thread([this] { Accept(); });
  }
  ~Relay() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
    for (std::thread& t : conns_) t.join();
  }
  int port() const { return port_; }
  void DropAnswerOnce(std::string marker) {
    std::lock_guard lock(mu_);
    marker_ = std::move(marker);
  }
  int answers_dropped() const { return dropped_.load(); }

 private:
  void Accept() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      conns_.emplace_back([this, c] { Serve(c); });
    }
  }
  void Serve(int client) {
    const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    if (::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(up);
      ::close(client);
      return;
    }
    bool drop_next_answer = false;
    char buf[65536];
    while (!stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
      if (::poll(p, 2, 100) <= 0) continue;
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::read(client, buf, sizeof(buf));
        if (n <= 0) break;
        {
          std::lock_guard lock(mu_);
          if (!marker_.empty() && std::string_view(buf, n).find(marker_) != std::string::npos) {
            marker_.clear();
            drop_next_answer = true;
          }
        }
        if (::write(up, buf, n) != n) break;
      }
      if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::read(up, buf, sizeof(buf));
        if (n <= 0) break;
        if (drop_next_answer) {
          ++dropped_;
          break;  // the server applied it; the client never hears
        }
        if (::write(client, buf, n) != n) break;
      }
    }
    ::close(up);
    ::close(client);
  }

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> dropped_{0};
  std::mutex mu_;
  std::string marker_;
  std::thread thread_;
  std::vector<std::thread> conns_;  // Accept thread only, joined after it
};

uint64_t Count(const ClickHouseServer& ch, const std::string& sql) {
  absl::StatusOr<std::string> r = ch.Query(sql);
  EXPECT_TRUE(r.ok()) << sql << ": " << r.status();
  uint64_t v = 0;
  if (r.ok()) {
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(*r), &v)) << sql << ": " << *r;
  }
  return v;
}

RunMeta Meta() {
  RunMeta m;
  m.session = "ch_writer_test";
  m.host = "hostA";
  m.started_utc_ns = kT0;
  m.tsc_hz = 3e9;
  m.calibration_source = "test";
  m.pipeline = "a,b";
  return m;
}

// Order `id`: stages a->b (`ab_ns`) and total (`ab_ns`), first stamp at `utc_ns`.
OrderDetail Order(uint64_t id, int64_t utc_ns, double ab_ns) {
  OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = utc_ns;
  o.first_tsc = 1000 + id;
  o.first_tsc_utc_ns = utc_ns;
  o.total_ns = ab_ns;
  o.complete = true;
  o.stamps.push_back(StampDetail{.tag = "a", .process_id = 1, .tid = 7, .cpu = 0,
                                 .tsc = o.first_tsc, .utc_ns = utc_ns});
  o.stamps.push_back(StampDetail{.tag = "b", .process_id = 1, .tid = 7, .cpu = 0,
                                 .tsc = o.first_tsc + 300, .utc_ns = utc_ns + 100});
  o.samples.push_back(SampleDetail{.stage = "a->b", .start_utc_ns = utc_ns, .latency_ns = ab_ns});
  o.samples.push_back(SampleDetail{.stage = "total", .start_utc_ns = utc_ns, .latency_ns = ab_ns});
  return o;
}

// One batch: `n` orders from id `first`, all in interval kT0 + k s, a->b
// latencies 100, 200, ... ns; the deltas and counts the sink would send.
struct Batch {
  std::vector<IntervalDelta> intervals;
  std::vector<IntervalOrders> interval_orders;
  std::vector<OrderDetail> orders;
  Snapshot snapshot;
};
Batch MakeBatch(uint64_t first, int n, int64_t interval_start) {
  Batch b;
  IntervalDelta ab;
  ab.stage = "a->b";
  ab.kind = StageKind::kTransition;
  ab.start_utc_ns = interval_start;
  IntervalDelta total;
  total.stage = "total";
  total.kind = StageKind::kTotal;
  total.start_utc_ns = interval_start;
  for (int i = 0; i < n; ++i) {
    const double ns = 100.0 * (i + 1);
    b.orders.push_back(Order(first + i, interval_start + i, ns));
    ab.histogram.Add(ns);
    total.histogram.Add(ns);
  }
  ab.samples_all = total.samples_all = n;
  b.intervals = {ab, total};
  b.interval_orders = {IntervalOrders{.start_utc_ns = interval_start, .orders = uint64_t(n)}};
  b.snapshot.counters = {{"samples", 2 * (first + n - 1)}};
  b.snapshot.anchors = {AnchorRow{.tsc = 1000 + first, .utc_ns = interval_start}};
  return b;
}

// Id 2 used again when the collector no longer remembered it: instance 0
// again, another first TSC (5000, not 1002): a second order of that id.
OrderDetail ReusedId2() {
  OrderDetail o = Order(2, kT0 + 10, 700);
  o.first_tsc = 5000;
  o.stamps[0].tsc = 5000;
  o.stamps[1].tsc = 5300;
  return o;
}

absl::Status WriteBatch(ClickHouseWriter& w, int64_t run, const Batch& b, uint64_t* already) {
  return w.Write(run, b.intervals, b.interval_orders, b.orders, &b.snapshot, already);
}

class ClickHouseWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
    absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start();
    ASSERT_TRUE(ch.ok()) << ch.status();
    ch_ = *std::move(ch);
  }
  std::unique_ptr<ClickHouseWriter> Open(int port, std::vector<std::string>* notices = nullptr,
                                         int64_t retention_step_ns = 600 * kSecondNs) {
    ClickHouseOptions o;
    o.retention_step_ns = retention_step_ns;
    o.http.host = "127.0.0.1";
    o.http.port = port;
    o.http.request_timeout_ms = 20000;
    o.database = "tt";
    o.backoff_max_ms = 500;
    o.on_notice = [notices](const std::string& line) {
      if (notices != nullptr) notices->push_back(line);
    };
    absl::StatusOr<std::unique_ptr<ClickHouseWriter>> w = ClickHouseWriter::Open(o);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }
  std::unique_ptr<ClickHouseServer> ch_;
};

TEST_F(ClickHouseWriterTest, WritesABatchSetAndReadsItBack) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(*run, 1);
  uint64_t already = 0;
  // Two batches into the same interval (two delta rows), one into the next.
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(1, 3, kT0), &already).ok());
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(10, 2, kT0), &already).ok());
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(20, 4, kT0 + kSecondNs), &already).ok());
  EXPECT_EQ(already, 0u);
  ASSERT_TRUE(w->EndRun(*run, kT0 + 5 * kSecondNs).ok());

  const std::string r = " WHERE run_id = 1";
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders" + r), 9u);
  EXPECT_EQ(Count(*ch_, "SELECT uniqExact(order_id, instance) FROM tt.orders" + r), 9u);
  // The three batches, and EndRun's roll-up of their minute
  // (clickhouse_rollup.h): one row per stage, every a->b sample in it.
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.batches" + r), 4u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.intervals_minute" + r), 2u);
  EXPECT_EQ(Count(*ch_, "SELECT sum(count) FROM tt.intervals_minute WHERE run_id = 1 AND "
                        "stage = 'a->b'"),
            9u);
  // a->b: 3 + 2 samples in kT0, 4 in kT0 + 1 s; sum 100+200+300+100+200 = 900 ns.
  EXPECT_EQ(Count(*ch_, "SELECT sum(count) FROM tt.intervals WHERE run_id = 1 AND stage = 'a->b' "
                        "AND start_utc_ns = " + std::to_string(kT0)),
            5u);
  EXPECT_EQ(Count(*ch_, "SELECT toUInt64(sum(sum_ns)) FROM tt.intervals WHERE run_id = 1 AND "
                        "stage = 'a->b' AND start_utc_ns = " + std::to_string(kT0)),
            900u);
  EXPECT_EQ(Count(*ch_, "SELECT sum(orders) FROM tt.interval_detail" + r), 9u);
  EXPECT_EQ(Count(*ch_, "SELECT sum(orders_kept) FROM tt.interval_detail WHERE run_id = 1 AND "
                        "start_utc_ns = " + std::to_string(kT0)),
            5u);
  // Stage ids match between intervals and the dictionary; samples' arrays too.
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.stages FINAL" + r), 2u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.names FINAL" + r), 2u);
  EXPECT_EQ(Count(*ch_, "SELECT sum(arraySum(sample_latency_ns)) FROM tt.orders" + r),
            2u * (100 + 200 + 300 + 100 + 200 + 100 + 200 + 300 + 400));
  // The counters' newest version: samples = 2 * 23 from the last batch.
  EXPECT_EQ(Count(*ch_, "SELECT value FROM tt.counters FINAL WHERE run_id = 1 AND "
                        "name = 'samples'"),
            46u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.anchors FINAL" + r), 3u);
  EXPECT_EQ(Count(*ch_, "SELECT ended_utc_ns FROM tt.runs FINAL" + r),
            static_cast<uint64_t>(kT0 + 5 * kSecondNs));
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.runs FINAL" + r), 1u);
  // The histograms of the kT0 a->b rows merge into the 5 samples.
  absl::StatusOr<std::string> hex = ch_->Query(
      "SELECT hex(histogram) FROM tt.intervals WHERE run_id = 1 AND stage = 'a->b' AND "
      "start_utc_ns = " + std::to_string(kT0) + " ORDER BY batch");
  ASSERT_TRUE(hex.ok());
  Histogram merged;
  for (absl::string_view line : absl::StrSplit(*hex, '\n', absl::SkipEmpty())) {
    ASSERT_TRUE(merged.MergeEncoded(absl::HexStringToBytes(line)).ok());
  }
  EXPECT_EQ(merged.count(), 5u);
  EXPECT_NEAR(merged.max(), 300, 300.0 / 256);
  // A second run takes the next id; the schema is checked, not recreated.
  // Its clock-sync bound (multi-host) is kept when RunMeta has one.
  std::unique_ptr<ClickHouseWriter> w2 = Open(ch_->http_port());
  ASSERT_NE(w2, nullptr);
  RunMeta meta2 = Meta();
  const bool has_clock_error = [](auto& m) {
    if constexpr (requires { m.clock_error_ns; }) {
      m.clock_error_ns = 1500.0;
      return true;
    }
    return false;
  }(meta2);
  absl::StatusOr<int64_t> run2 = w2->BeginRun(meta2);
  ASSERT_TRUE(run2.ok());
  EXPECT_EQ(*run2, 2);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.runs FINAL WHERE run_id = 1 AND "
                        "clock_error_ns IS NULL"),
            1u);
  if (has_clock_error) {
    EXPECT_EQ(Count(*ch_, "SELECT toUInt64(clock_error_ns) FROM tt.runs FINAL WHERE run_id = 2"),
              1500u);
  }
}

// What the collector said about a run goes with the snapshot (table
// run_notes): one row per kind, a kind said again replaced by its newest
// text, read back by the viewer's reader in kind order.
TEST_F(ClickHouseWriterTest, KeepsTheRunsNotesOnePerKindWithTheNewestText) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok()) << run.status();
  uint64_t already = 0;
  Batch first = MakeBatch(1, 2, kT0);
  first.snapshot.notes = {RunNote{"unseen_tags", "tag fil_tx never seen"}};
  ASSERT_TRUE(WriteBatch(*w, *run, first, &already).ok());
  Batch second = MakeBatch(10, 2, kT0 + kSecondNs);
  second.snapshot.notes = {RunNote{"unseen_tags", "tag fil_tx never seen; closest fill_tx"},
                           RunNote{"pipeline_order", "declared b,a; the data shows a,b"}};
  ASSERT_TRUE(WriteBatch(*w, *run, second, &already).ok());
  ASSERT_TRUE(w->EndRun(*run, kT0 + 5 * kSecondNs).ok());

  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.run_notes FINAL WHERE run_id = 1"), 2u);
  absl::StatusOr<std::unique_ptr<StoreReader>> reader = StoreReader::Open(ch_->Uri("tt"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<std::vector<RunNote>> notes = (*reader)->Notes(*run);
  ASSERT_TRUE(notes.ok()) << notes.status();
  const std::vector<RunNote> expected = {
      RunNote{"pipeline_order", "declared b,a; the data shows a,b"},
      RunNote{"unseen_tags", "tag fil_tx never seen; closest fill_tx"}};
  EXPECT_EQ(*notes, expected);
}

// The clocks other than the TSC that read a stage's ends (table
// stage_clocks): every snapshot says all it knows; the store keeps the
// union, each row once, read back by stage, side and clock.
TEST_F(ClickHouseWriterTest, KeepsEachStagesOtherClocksOnceAsTheUnionOfItsSnapshots) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok()) << run.status();
  uint64_t already = 0;
  Batch first = MakeBatch(1, 2, kT0);
  first.snapshot.stage_clocks = {StageClockRow{"wire_rx->md_rx", "begin", "realtime"}};
  ASSERT_TRUE(WriteBatch(*w, *run, first, &already).ok());
  Batch second = MakeBatch(10, 2, kT0 + kSecondNs);
  second.snapshot.stage_clocks = {StageClockRow{"wire_rx->md_rx", "begin", "realtime"},
                                  StageClockRow{"wire_tx->venue_rx", "end", "exchange"},
                                  StageClockRow{"wire_rx->md_rx", "begin", "phc"}};
  ASSERT_TRUE(WriteBatch(*w, *run, second, &already).ok());
  ASSERT_TRUE(w->EndRun(*run, kT0 + 5 * kSecondNs).ok());

  absl::StatusOr<std::unique_ptr<StoreReader>> reader = StoreReader::Open(ch_->Uri("tt"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<std::vector<StageClockRow>> clocks = (*reader)->StageClocks(*run);
  ASSERT_TRUE(clocks.ok()) << clocks.status();
  const std::vector<StageClockRow> expected = {
      StageClockRow{"wire_rx->md_rx", "begin", "phc"},
      StageClockRow{"wire_rx->md_rx", "begin", "realtime"},
      StageClockRow{"wire_tx->venue_rx", "end", "exchange"}};
  EXPECT_EQ(*clocks, expected);
  absl::StatusOr<std::vector<StageClockRow>> other = (*reader)->StageClocks(*run + 1);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->empty());
}

TEST_F(ClickHouseWriterTest, AnInsertWhoseAnswerIsLostIsWrittenOnce) {
  Relay relay(ch_->http_port());
  std::vector<std::string> notices;
  std::unique_ptr<ClickHouseWriter> w = Open(relay.port(), &notices);
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok()) << run.status();
  uint64_t already = 0;
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(1, 3, kT0), &already).ok());
  // The server applies the next INSERT INTO orders; its answer is lost.
  relay.DropAnswerOnce("INSERT%20INTO%20orders");
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(10, 4, kT0 + kSecondNs), &already).ok());
  EXPECT_EQ(relay.answers_dropped(), 1);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders WHERE run_id = 1"), 7u);
  EXPECT_EQ(Count(*ch_, "SELECT uniqExact(order_id) FROM tt.orders WHERE run_id = 1"), 7u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.batches WHERE run_id = 1"), 2u);
  // Said once when it failed and once when it answered again.
  ASSERT_EQ(notices.size(), 2u) << (notices.empty() ? "" : notices[0]);
  EXPECT_NE(notices[0].find("retrying"), std::string::npos) << notices[0];
  EXPECT_NE(notices[1].find("answers again"), std::string::npos) << notices[1];
}

TEST_F(ClickHouseWriterTest, ResumeDropsAnUncommittedBatchAndKeepsStoredOrdersOnce) {
  int64_t run = 0;
  {
    std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
    ASSERT_NE(w, nullptr);
    absl::StatusOr<int64_t> r = w->BeginRun(Meta());
    ASSERT_TRUE(r.ok());
    run = *r;
    uint64_t already = 0;
    ASSERT_TRUE(WriteBatch(*w, run, MakeBatch(1, 3, kT0), &already).ok());
    ASSERT_TRUE(w->Write(run, {}, {}, {ReusedId2()}, nullptr, &already).ok());  // batch 2
  }
  // What a collector that died in the middle of its next batch leaves: rows
  // of batch 3 without their commit record, and its counters.
  ASSERT_TRUE(ch_->Query("INSERT INTO tt.intervals (run_id, stage_id, start_utc_ns, batch, stage, "
                         "count, histogram) VALUES (1, 0, " + std::to_string(kT0) +
                         ", 3, 'a->b', 50, '')").ok());
  ASSERT_TRUE(ch_->Query("INSERT INTO tt.counters VALUES (1, 'samples', 3, 999)").ok());
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<RunState> state = w->LookupRun(run);
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->exists);
  EXPECT_FALSE(state->ended);
  EXPECT_EQ(state->counters["samples"], 6);  // batch 1's, not the uncommitted 999
  absl::StatusOr<int64_t> restarts = w->ResumeRun(run);
  ASSERT_TRUE(restarts.ok()) << restarts.status();
  EXPECT_EQ(*restarts, 1);
  EXPECT_EQ(Count(*ch_, "SELECT sum(count) FROM tt.intervals WHERE run_id = 1"), 6u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.counters WHERE run_id = 1 AND value = 999"), 0u);
  // The journal re-sends orders 1..3 and the second order of id 2 (all
  // stored: each known by its id and first TSC, though two share the key
  // (2, 0)) with 4..5 (new).
  Batch again = MakeBatch(1, 5, kT0);
  again.orders.push_back(ReusedId2());
  uint64_t already = 0;
  ASSERT_TRUE(WriteBatch(*w, run, again, &already).ok());
  EXPECT_EQ(already, 4u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders WHERE run_id = 1"), 6u);
  EXPECT_EQ(Count(*ch_, "SELECT sum(orders_kept) FROM tt.interval_detail WHERE run_id = 1"), 6u);
  absl::StatusOr<RunState> after = w->LookupRun(run);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->counters["restarts"], 1);
}

TEST_F(ClickHouseWriterTest, ServerKilledAndRestartedMidStreamLosesAndDuplicatesNothing) {
  std::vector<std::string> notices;
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port(), &notices);
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok());
  constexpr int kBatches = 24;
  constexpr int kPerBatch = 500;
  std::atomic<int> written{0};
  std::atomic<bool> failed{false};
  absl::Status error;  // the writer thread's, read after join
  std::thread writer([&] {
    for (int i = 0; i < kBatches; ++i) {
      uint64_t already = 0;
      absl::Status s = WriteBatch(*w, *run, MakeBatch(1 + i * kPerBatch, kPerBatch,
                                                      kT0 + i * kSecondNs), &already);
      if (!s.ok()) {
        error = s;
        failed.store(true);
        return;
      }
      written.store(i + 1);
    }
  });
  while (written.load() < 6 && !failed.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ch_->Kill();  // mid-stream, perhaps mid-INSERT
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const int at_kill = written.load();
  ASSERT_TRUE(ch_->Restart().ok()) << ch_->LogTail();
  writer.join();
  ASSERT_TRUE(error.ok()) << error;
  EXPECT_LT(at_kill, kBatches) << "the writer did not wait for the server";
  const uint64_t total = uint64_t{kBatches} * kPerBatch;
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders WHERE run_id = 1"), total);
  EXPECT_EQ(Count(*ch_, "SELECT uniqExact(order_id) FROM tt.orders WHERE run_id = 1"), total);
  EXPECT_EQ(Count(*ch_, "SELECT sum(count) FROM tt.intervals WHERE run_id = 1"), 2 * total);
  EXPECT_EQ(Count(*ch_, "SELECT sum(orders) FROM tt.interval_detail WHERE run_id = 1"), total);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.batches WHERE run_id = 1"),
            uint64_t{kBatches});
  ASSERT_GE(notices.size(), 2u);
  EXPECT_NE(notices.front().find("retrying"), std::string::npos) << notices.front();
  EXPECT_NE(notices.back().find("answers again"), std::string::npos) << notices.back();
}

TEST_F(ClickHouseWriterTest, StopWithAServerThatAnswersStillWritesTheFinalBatch) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok());
  w->RequestStop();  // the collector stopping: its last flush follows
  uint64_t already = 0;
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(1, 3, kT0), &already).ok());
  ASSERT_TRUE(w->EndRun(*run, kT0 + kSecondNs).ok());
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders WHERE run_id = 1"), 3u);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.runs FINAL WHERE ended_utc_ns IS NOT NULL"), 1u);
}

TEST_F(ClickHouseWriterTest, StopMakesAWaitingWriteReturnPromptly) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(ch_->Stop().ok());
  absl::Status s;
  std::thread t([&] {
    uint64_t already = 0;
    s = WriteBatch(*w, *run, MakeBatch(1, 3, kT0), &already);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto asked = std::chrono::steady_clock::now();
  w->RequestStop();
  t.join();
  const auto waited = std::chrono::steady_clock::now() - asked;
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("journal keeps it"), std::string::npos) << s;
  // Not a timing test: "promptly" is far below the 20 s request timeout.
  EXPECT_LT(waited, std::chrono::seconds(10));
}

// A second writer on the same run (no BeginRun, no ResumeRun: e.g. a tool
// adding to a run) takes batch ids above the run's, so its batches are not
// taken for the first one's (the check before a retry counts by batch id).
TEST_F(ClickHouseWriterTest, AnotherWriterOnTheSameRunTakesFreshBatchIds) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok());
  uint64_t already = 0;
  ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(1, 3, kT0), &already).ok());
  std::unique_ptr<ClickHouseWriter> w2 = Open(ch_->http_port());
  ASSERT_NE(w2, nullptr);
  ASSERT_TRUE(WriteBatch(*w2, *run, MakeBatch(10, 2, kT0 + kSecondNs), &already).ok());
  EXPECT_EQ(Count(*ch_, "SELECT uniqExact(batch) FROM tt.batches WHERE run_id = 1"), 2u);
  EXPECT_EQ(Count(*ch_, "SELECT min(batch) FROM tt.orders WHERE run_id = 1 AND order_id >= 10"),
            (uint64_t{1} << 32) | 1);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders WHERE run_id = 1"), 5u);
}

// Mutations run in the background: waits until the server has done them.
void WaitForMutations(const ClickHouseServer& ch) {
  for (int i = 0; i < 600; ++i) {
    if (Count(ch, "SELECT count() FROM system.mutations WHERE is_done = 0") == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "mutations still running after 30 s";
}

TEST_F(ClickHouseWriterTest, RetentionDeletesOldDetailAndMarksItsIntervalsThenOldIntervals) {
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port(), nullptr, /*retention_step_ns=*/0);
  ASSERT_NE(w, nullptr);
  absl::StatusOr<int64_t> run = w->BeginRun(Meta());
  ASSERT_TRUE(run.ok());
  uint64_t already = 0;
  // Ten 1 s intervals, 2 orders each.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(WriteBatch(*w, *run, MakeBatch(1 + 2 * i, 2, kT0 + i * kSecondNs), &already).ok());
  }
  // Detail of the intervals before kT0 + 5 s: 5 intervals, 10 orders.
  absl::StatusOr<uint64_t> deleted =
      w->ApplyRetention(*run, kT0 + 5 * kSecondNs, 0, std::nullopt);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 10u);
  WaitForMutations(*ch_);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.orders WHERE run_id = 1"), 10u);
  EXPECT_EQ(Count(*ch_, "SELECT min(first_utc_ns) FROM tt.orders WHERE run_id = 1"),
            static_cast<uint64_t>(kT0 + 5 * kSecondNs));
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM (SELECT start_utc_ns FROM tt.interval_detail "
                        "WHERE run_id = 1 GROUP BY start_utc_ns HAVING max(detail_deleted) = 1)"),
            5u);
  // The intervals stay: 10 intervals x 2 stages x 2 samples.
  EXPECT_EQ(Count(*ch_, "SELECT sum(count) FROM tt.intervals WHERE run_id = 1"), 40u);
  // Intervals before kT0 + 3 s go, with their detail rows.
  deleted = w->ApplyRetention(*run, std::nullopt, 0, kT0 + 3 * kSecondNs);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 0u);  // their orders were gone already
  WaitForMutations(*ch_);
  EXPECT_EQ(Count(*ch_, "SELECT sum(count) FROM tt.intervals WHERE run_id = 1"), 28u);
  EXPECT_EQ(
      Count(*ch_, "SELECT uniqExact(start_utc_ns) FROM tt.interval_detail WHERE run_id = 1"), 7u);
}

// Another writer's creation caught half way: every table of the schema but
// no meta row yet. That is ours (a concurrent or interrupted creation), not
// somebody else's database: the writer finishes it. Each table is created
// by hand from the schema's own statements, the side tables kept outside
// the schema version (run_notes, budget_breaches, stage_clocks) among them.
TEST_F(ClickHouseWriterTest, FinishesAStoreWhoseCreationStoppedBeforeMeta) {
  ASSERT_TRUE(ch_->Query("CREATE DATABASE tt").ok());
  size_t tables = 0;
  for (std::string_view ddl : ClickHouseSchemaStatements()) {
    std::string in_tt(ddl);
    const std::string create = "CREATE TABLE IF NOT EXISTS ";
    ASSERT_EQ(in_tt.rfind(create, 0), 0u) << ddl;
    if (in_tt.compare(create.size(), 5, "meta(") == 0) continue;
    in_tt.insert(create.size(), "tt.");
    ASSERT_TRUE(ch_->Query(in_tt).ok()) << in_tt;
    ++tables;
  }
  ASSERT_GE(tables, 3u);
  std::unique_ptr<ClickHouseWriter> w = Open(ch_->http_port());
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM tt.meta FINAL WHERE key = 'app'"), 1u);
}

TEST_F(ClickHouseWriterTest, RefusesAnotherApplicationsDatabase) {
  ASSERT_TRUE(ch_->Query("CREATE DATABASE tt").ok());
  ASSERT_TRUE(ch_->Query("CREATE TABLE tt.theirs (x UInt8) ENGINE = TinyLog").ok());
  ClickHouseOptions o;
  o.http.port = ch_->http_port();
  o.database = "tt";
  absl::StatusOr<std::unique_ptr<ClickHouseWriter>> w = ClickHouseWriter::Open(o);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(w.status())) << w.status();
  EXPECT_EQ(Count(*ch_, "SELECT count() FROM system.tables WHERE database = 'tt'"), 1u);
}

}  // namespace
}  // namespace ticktrace::store
