// The pipeline's id scheme and fan-out rule, and the examples' flags.

#include "messages.h"

#include <set>

#include "stage_flags.h"
#include "gtest/gtest.h"

namespace ticktrace::examples {
namespace {

TEST(MessagesTest, CountsForTicksMatchTheRuleTickByTick) {
  for (uint64_t n = 0; n < 50; ++n) {
    ExpectedCounts brute;
    brute.ticks = n;
    for (uint64_t id = 1; id <= n; ++id) {
      const uint32_t k = OrdersForTick(id);
      brute.orders += k;
      if (k == 0) ++brute.ticks_without_order;
      if (k == 1) ++brute.ticks_with_one_order;
      if (k == 2) ++brute.ticks_with_two_orders;
    }
    const ExpectedCounts c = CountsForTicks(n);
    EXPECT_EQ(c.orders, brute.orders) << n;
    EXPECT_EQ(c.ticks_without_order, brute.ticks_without_order) << n;
    EXPECT_EQ(c.ticks_with_one_order, brute.ticks_with_one_order) << n;
    EXPECT_EQ(c.ticks_with_two_orders, brute.ticks_with_two_orders) << n;
  }
  EXPECT_EQ(CountsForTicks(4000).orders, 4000u);  // 1 + 1 + 2 + 0 per four ticks
}

TEST(MessagesTest, OrderIdsNeverCollideWithTickIdsOrEachOther) {
  std::set<uint64_t> ids;
  for (uint64_t tick = 1; tick <= 10000; ++tick) ids.insert(tick);
  for (uint64_t tick = 1; tick <= 10000; ++tick) {
    for (uint32_t k = 0; k < OrdersForTick(tick); ++k) {
      const uint64_t id = OrderId(tick, k);
      EXPECT_TRUE(ids.insert(id).second) << id;
      EXPECT_TRUE(IsOrderId(id));
      EXPECT_EQ(TickOfOrder(id), tick);
      EXPECT_LT(id, 1ull << 63) << "must stay a positive SQLite INTEGER";
    }
    EXPECT_FALSE(IsOrderId(tick));
  }
  EXPECT_LT(OrderId(kMaxTickId, 1), 1ull << 63);
  EXPECT_EQ(TickOfOrder(OrderId(kMaxTickId, 1)), kMaxTickId);
}

// The examples' flags on the one parser (common/flags.h), with their list values.
TEST(StageFlagsTest, ParsesFormsAndRejectsBadInputInOneLine) {
  uint64_t n = 1;
  bool b = false;
  std::string s = "x";
  std::vector<uint64_t> list;
  BoundFlags p(StageCommand("test"));
  p.AddUint64({"n", "N", ""}, &n);
  p.AddBool({"b", "", ""}, &b);
  p.AddString({"s", "TEXT", ""}, &s);
  p.AddCustom({"l", "A,B", ""}, [&](absl::string_view flag, absl::string_view v) {
    return ParseUint64List(flag, v, 2, &list);
  });
  const char* ok[] = {"prog", "--n=5", "--b", "--s", "hello", "--l", "3,4"};
  ASSERT_TRUE(p.Parse(7, ok).ok());
  EXPECT_EQ(n, 5u);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "hello");
  EXPECT_EQ(list, (std::vector<uint64_t>{3, 4}));

  for (const char* bad : {"--nope", "--n=-1", "--n=abc", "--l=1", "--l=1,x", "stray"}) {
    const char* argv[] = {"prog", bad};
    const absl::Status st = p.Parse(2, argv).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.message().find('\n'), absl::string_view::npos) << bad;
  }
  const char* missing[] = {"prog", "--n"};
  EXPECT_FALSE(p.Parse(2, missing).ok());
}

}  // namespace
}  // namespace ticktrace::examples
