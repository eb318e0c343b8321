// FillOrderDetail: the store's row of a stitched order, by hand, and the same
// row when filled into a detail that held a larger, different order before
// (the store sink fills written details again).

#include "collector/sinks/order_rows.h"

#include <string>
#include <vector>

#include "collector/analysis/name_table.h"
#include "collector/sinks/stage_stats.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kU0 = 1'800'000'000'000'000'000;

class OrderRowsTest : public ::testing::Test {
 protected:
  OrderRowsTest() {
    view_.time = &time_;
    view_.tag_names = &tags_;
    view_.stages = &stages_;
    view_.pipeline = &pipeline_;
    // An order of stamps a (TSC 1000) and c (TSC 1500) missing b: stage a->c, 500 ns.
    order_.seq = 5;
    order_.order_id = 42;
    order_.instance = 1;
    order_.chain_start_tsc = 1000;
    order_.missing = {1};
    StitchedSample s;
    s.stage_id = stages_.StageId("a->c", StageKind::kTransition);
    s.begin_tsc = 1000;
    s.end_tsc = 1500;
    s.flags = kFlagCrossCore;
    s.begin_process = 7;
    s.end_process = 7;
    order_.samples.push_back(s);
    for (const auto& [tag, tsc] : {std::pair{"a", 1000}, std::pair{"c", 1500}}) {
      StitchedStamp e;
      e.tsc = static_cast<uint64_t>(tsc);
      e.name_id = tags_.Intern(tag);
      e.process_id = 7;
      e.tid = 8;
      order_.stamps.push_back(e);
    }
    order_.records = 2;
  }

  void ExpectTheOrder(const store::OrderDetail& d) {
    EXPECT_EQ(d.order_id, 42u);
    EXPECT_EQ(d.instance, 1u);
    EXPECT_FALSE(d.parent_order_id.has_value());
    EXPECT_EQ(d.first_utc_ns, kU0 + 1000);  // 1 ns per tick from TSC 0 at kU0
    EXPECT_EQ(d.first_tsc, 1000u);
    EXPECT_EQ(d.first_tsc_utc_ns, kU0 + 1000);
    EXPECT_FALSE(d.total_ns.has_value());
    EXPECT_FALSE(d.complete);
    EXPECT_EQ(d.missing, "b");
    ASSERT_EQ(d.samples.size(), 1u);
    EXPECT_EQ(d.samples[0].stage, "a->c");
    EXPECT_EQ(d.samples[0].start_utc_ns, kU0 + 1000);
    EXPECT_EQ(d.samples[0].latency_ns, 500);
    EXPECT_EQ(d.samples[0].process_begin, 7);
    EXPECT_EQ(d.samples[0].cpu_begin, -1);
    EXPECT_EQ(d.samples[0].flags, kFlagCrossCore);
    ASSERT_EQ(d.stamps.size(), 2u);
    EXPECT_EQ(d.stamps[0].tag, "a");
    EXPECT_EQ(d.stamps[1].tag, "c");
    EXPECT_EQ(d.stamps[1].utc_ns, kU0 + 1500);
    EXPECT_EQ(d.stamps[1].tid, 8u);
    EXPECT_FALSE(d.stamps[1].is_span);
    EXPECT_EQ(d.stamps[1].cpu_end, -1);
    EXPECT_EQ(d.stamps[1].duration_ns, 0);
    EXPECT_EQ(d.stamps[1].flags, 0u);
  }

  TimeBase time_ = TimeBase::FromHz(1e9, 0, kU0);
  NameTable tags_;
  StageStats stages_{false};
  std::vector<std::string> pipeline_{"a", "b", "c"};
  StitchView view_;
  StitchedOrder order_;
};

TEST_F(OrderRowsTest, ByHand) {
  const FinishedOrder f = ToFinishedOrder(order_, view_);
  EXPECT_EQ(f.seq, 5u);
  ExpectTheOrder(f.order);
}

TEST_F(OrderRowsTest, RefilledDetailKeepsNothingOfTheOldOrder) {
  store::OrderDetail d;
  d.order_id = 9;
  d.parent_order_id = 8;
  d.total_ns = 3;
  d.complete = true;
  d.first_tsc = 1;
  d.missing = "x,y";
  d.samples.resize(3);
  d.samples[0].stage = "a much longer stage name than fits inline";
  d.samples[0].cpu_begin = 3;
  d.stamps.resize(4);
  d.stamps[1].is_span = true;
  d.stamps[1].cpu_end = 2;
  d.stamps[1].duration_ns = 77;
  d.stamps[1].flags = kFlagLate;
  FillOrderDetail(order_, view_, &d);
  ExpectTheOrder(d);
}

}  // namespace
}  // namespace ticktrace::collect
