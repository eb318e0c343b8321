// The stitcher remembers, per order id, the next instance number (a reused id
// is a new instance), and forgets an id once it has been gone for
// instance_memory_ticks() = 2 x timeout + 2 x linger of the stream, so that
// this memory follows the order rate and not the run's length
// (collector/stitch/stitcher.h). An id that stays open longer than that is
// remembered while it is open (its memory is looked at again every 2200
// ticks) and forgotten at the first look that finds it gone. Times below
// are ticks of a 1 GHz clock: timeout 1000, linger 100, so the memory lasts
// 2 x 1000 + 2 x 100 = 2200 ticks.

#include "collector/sinks/stage_stats.h"
#include "collector/stitch/stitcher.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

class InstanceMemoryTest : public ::testing::Test {
 protected:
  InstanceMemoryTest() {
    for (const char* n : {"a", "b", "c"}) names_.Intern(n);
    settings_.pipeline = {"a", "b", "c"};
    settings_.timeout_ticks = 1000;
    settings_.linger_ticks = 100;
  }

  StitchEvent Ev(const char* tag, uint64_t order, uint64_t tsc) {
    StitchEvent e;
    e.tsc = tsc;
    e.order_id = order;
    e.name_id = static_cast<uint32_t>(names_.Find(tag));
    e.process_id = 1;
    e.tid = 11;
    return e;
  }

  NameTable names_;
  StitchSettings settings_;
  TimeBase time_ = TimeBase::FromHz(1e9, 0, 1'700'000'000'000'000'000);
  StageStats stats_{/*include_flagged=*/false};
};

TEST_F(InstanceMemoryTest, AnIdOpenLongerThanTheMemoryIsForgottenOnceItIsGone) {
  Stitcher st(settings_, time_, &names_, &stats_, nullptr);
  // Order 1 opens at 0 and stays open to 10000: a `b` every 500 ticks keeps
  // it within its timeout. Order 2 opens and completes at 100..300.
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 1, 0));
  for (uint64_t t = 100; t < 10'000; t += 100) {
    st.AdvanceClock(t);
    if (t % 500 == 0) st.AddEvent(Ev("b", 1, t));
    if (t == 100) st.AddEvent(Ev("a", 2, t));
    if (t == 200) st.AddEvent(Ev("b", 2, t));
    if (t == 300) st.AddEvent(Ev("c", 2, t));
  }
  // Order 2 finished at about 400 and was emitted 100 later: gone for more
  // than 2200 ticks, it is forgotten; order 1 is open and remembered.
  EXPECT_EQ(st.counters().orders_complete, 1u);
  EXPECT_EQ(st.open_orders(), 1u);
  EXPECT_EQ(st.remembered_ids(), 1u);

  // Order 1 completes at 10000 and is emitted after its linger (10200); the
  // look at its memory after that (by hand: at 11500, 2200 ticks after the
  // one at 9200 that still found it open) forgets it.
  st.AddEvent(Ev("c", 1, 10'000));
  for (uint64_t t = 10'000; t <= 11'400; t += 100) st.AdvanceClock(t);
  EXPECT_EQ(st.counters().orders_complete, 2u);
  EXPECT_EQ(st.open_orders(), 0u);
  EXPECT_EQ(st.remembered_ids(), 1u);
  st.AdvanceClock(11'500);
  EXPECT_EQ(st.remembered_ids(), 0u);
}

}  // namespace
}  // namespace ticktrace::collect
