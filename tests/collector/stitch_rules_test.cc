// The stitcher's rules, each on a small hand-built stream fed to a Stitcher
// directly (collector/stitch/stitcher.h): instances of reused ids inside and
// outside the linger window, late records, fan-out and cycles, timeouts and
// linger at and around their deadlines, the open-order limit, long orders,
// determinism and a checkpoint taken mid-stream. Times are ticks of a 1 GHz
// clock; expected values are worked out by hand from the rules in
// stitcher.h.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/sinks/stage_stats.h"
#include "collector/stitch/stitcher.h"
#include "collector/stream/state_codec.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

// Every emitted order as one line: seq, id#instance, kind, records, samples.
class Recorder : public StitchedOrderSink {
 public:
  void OnStitchedOrder(const StitchedOrder& o, const StitchView& view) override {
    std::string line = absl::StrCat(o.seq, " ", o.order_id, "#", o.instance);
    if (o.late) absl::StrAppend(&line, " late");
    absl::StrAppend(&line, o.fanned_out ? " fanned" : o.complete ? " complete" : " incomplete");
    absl::StrAppend(&line, " records=", o.records);
    for (const StitchedSample& s : o.samples) {
      absl::StrAppend(&line, " ", view.stages->StageName(s.stage_id), "=", s.ticks());
    }
    lines.push_back(std::move(line));
  }
  bool WantsStamps() const override { return false; }
  std::vector<std::string> lines;
};

class StitchRulesTest : public ::testing::Test {
 protected:
  StitchRulesTest() {
    for (const char* n : {"a", "b", "c", "x"}) names_.Intern(n);
    settings_.pipeline = {"a", "b", "c"};
  }

  StitchEvent Ev(const char* tag, uint64_t order, uint64_t tsc, uint32_t process = 1) {
    StitchEvent e;
    e.tsc = tsc;
    e.order_id = order;
    e.name_id = static_cast<uint32_t>(names_.Find(tag));
    e.process_id = process;
    e.tid = 10 + process;
    return e;
  }
  Stitcher Make() { return Stitcher(settings_, time_, &names_, &stats_, &rec_); }

  NameTable names_;
  StitchSettings settings_;
  TimeBase time_ = TimeBase::FromHz(1e9, 0, 1'700'000'000'000'000'000);
  StageStats stats_{/*include_flagged=*/false};
  Recorder rec_;
};

TEST_F(StitchRulesTest, ReuseAfterTheLingerWindowIsTheNextInstance) {
  settings_.timeout_ticks = 10'000;
  settings_.linger_ticks = 100;
  Stitcher st = Make();
  st.AdvanceClock(0);
  for (uint64_t t : {10, 20, 30}) st.AddEvent(Ev(t == 10 ? "a" : t == 20 ? "b" : "c", 7, t));
  st.AdvanceClock(100);  // pending
  st.AdvanceClock(200);  // finished, lingering from 200
  st.AdvanceClock(299);
  EXPECT_TRUE(rec_.lines.empty()) << "one tick before its linger ends";
  st.AdvanceClock(300);
  ASSERT_EQ(rec_.lines.size(), 1u);
  st.AddEvent(Ev("a", 7, 400));
  st.AddEvent(Ev("b", 7, 450));
  st.AddEvent(Ev("c", 7, 470));
  st.AdvanceClock(500);
  st.AdvanceClock(600);
  st.AdvanceClock(700);
  EXPECT_EQ(rec_.lines,
            (std::vector<std::string>{"1 7#0 complete records=3 a->b=10 b->c=10 total=20",
                                      "2 7#1 complete records=3 a->b=50 b->c=20 total=70"}));
  EXPECT_EQ(st.counters().reused_ids, 1u);
  EXPECT_EQ(st.counters().repeated_stages, 0u);
}

// A second process running the same ids right after the first: each of its
// orders repeats the first stage of a lingering order, so it is a new use,
// not repeated stages of the old one.
TEST_F(StitchRulesTest, ASecondProcessReusingIdsInsideTheLingerWindowIsANewInstance) {
  settings_.timeout_ticks = 100'000;
  settings_.linger_ticks = 10'000;
  Stitcher st = Make();
  st.AdvanceClock(0);
  for (uint64_t id = 1; id <= 50; ++id) {
    st.AddEvent(Ev("a", id, 10 * id, 1));
    st.AddEvent(Ev("b", id, 10 * id + 3, 1));
    st.AddEvent(Ev("c", id, 10 * id + 5, 1));
  }
  st.AdvanceClock(1000);
  st.AdvanceClock(2000);  // all 50 lingering until 12000
  for (uint64_t id = 1; id <= 50; ++id) {
    st.AddEvent(Ev("a", id, 3000 + 10 * id, 2));
    st.AddEvent(Ev("b", id, 3000 + 10 * id + 4, 2));
    st.AddEvent(Ev("c", id, 3000 + 10 * id + 7, 2));
  }
  st.AdvanceClock(4000);
  st.AdvanceClock(5000);
  st.AdvanceClock(12'000);  // the first process's orders
  EXPECT_EQ(rec_.lines.size(), 50u);
  st.AdvanceClock(15'000);  // the second's
  ASSERT_EQ(rec_.lines.size(), 100u);
  EXPECT_EQ(rec_.lines[0], "1 1#0 complete records=3 a->b=3 b->c=2 total=5");
  EXPECT_EQ(rec_.lines[50], "51 1#1 complete records=3 a->b=4 b->c=3 total=7");
  EXPECT_EQ(st.counters().orders_complete, 100u);
  EXPECT_EQ(st.counters().repeated_stages, 0u);
  EXPECT_EQ(st.counters().reused_ids, 50u);
  EXPECT_EQ(st.open_orders(), 0u);
}

// The same process stamping the first stage again after the last arrived
// (still pending, not yet lingering) also starts a new use.
TEST_F(StitchRulesTest, ARepeatedFirstStageAfterTheLastStartsANewInstance) {
  settings_.linger_ticks = 1000;
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 3, 10));
  st.AddEvent(Ev("b", 3, 20));
  st.AddEvent(Ev("c", 3, 30));
  st.AddEvent(Ev("a", 3, 40));  // pending: a new use
  st.AddEvent(Ev("b", 3, 45));
  st.Finish();
  EXPECT_EQ(rec_.lines,
            (std::vector<std::string>{"1 3#0 complete records=3 a->b=10 b->c=10 total=20",
                                      "2 3#1 incomplete records=2 a->b=5"}));
}

// A late earlier stage, and a re-sent stage of the process that stamped it,
// join the lingering order; a stage only another process stamped joins too.
TEST_F(StitchRulesTest, LateRecordsJoinTheirLingeringOrder) {
  settings_.linger_ticks = 1000;
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 1, 10, 1));
  st.AddEvent(Ev("c", 1, 30, 2));
  st.AdvanceClock(100);
  st.AdvanceClock(200);            // lingering until 1200
  st.AddEvent(Ev("c", 1, 31, 2));  // re-sent by its own process: a repeat
  st.AddEvent(Ev("b", 1, 20, 3));  // late, from a third process
  st.AdvanceClock(1199);
  EXPECT_TRUE(rec_.lines.empty());
  st.AdvanceClock(1200);
  EXPECT_EQ(rec_.lines,
            (std::vector<std::string>{"1 1#0 complete records=4 a->b=10 b->c=10 total=20"}));
  EXPECT_EQ(st.counters().repeated_stages, 1u);
  EXPECT_EQ(st.counters().reused_ids, 0u);
}

// A stage another process stamped, stamped again by a different process,
// is a new use of the id (here without its first stage: a late instance).
TEST_F(StitchRulesTest, AStageRepeatedByAnotherProcessStartsANewInstance) {
  settings_.linger_ticks = 1000;
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 1, 10, 1));
  st.AddEvent(Ev("b", 1, 20, 1));
  st.AddEvent(Ev("c", 1, 30, 1));
  st.AdvanceClock(100);
  st.AdvanceClock(200);
  st.AddEvent(Ev("b", 1, 500, 2));
  st.AddEvent(Ev("c", 1, 520, 2));
  st.Finish();
  EXPECT_EQ(rec_.lines,
            (std::vector<std::string>{"1 1#0 complete records=3 a->b=10 b->c=10 total=20",
                                      "2 1#1 late incomplete records=2 b->c=20"}));
  EXPECT_EQ(st.counters().orders_late, 1u);
}

TEST_F(StitchRulesTest, AnOrderTimesOutAtItsDeadlineNotATickBefore) {
  settings_.timeout_ticks = 1000;
  Stitcher st = Make();
  st.AdvanceClock(100);
  st.AddEvent(Ev("a", 1, 100));
  st.AdvanceClock(600);
  st.AddEvent(Ev("b", 1, 600));  // the deadline moves to 1600
  st.AdvanceClock(1100);
  EXPECT_TRUE(rec_.lines.empty());
  EXPECT_FALSE(st.NeedsClock(1599));
  st.AdvanceClock(1599);
  EXPECT_TRUE(rec_.lines.empty());
  EXPECT_TRUE(st.NeedsClock(1600));
  st.AdvanceClock(1600);
  EXPECT_EQ(rec_.lines, (std::vector<std::string>{"1 1#0 incomplete records=2 a->b=500"}));
  EXPECT_EQ(st.open_orders(), 0u);
  EXPECT_FALSE(st.NeedsClock(100'000));
}

// Orders due at one clock finish in the order of (last record's clock, id).
TEST_F(StitchRulesTest, TimedOutOrdersFinishByLastActivityThenId) {
  settings_.timeout_ticks = 1000;
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 9, 1));
  st.AddEvent(Ev("a", 5, 2));
  st.AdvanceClock(10);
  st.AddEvent(Ev("a", 2, 11));
  st.AddEvent(Ev("a", 7, 12));
  st.AdvanceClock(5000);
  ASSERT_EQ(rec_.lines.size(), 4u);
  EXPECT_EQ(rec_.lines[0].substr(0, 5), "1 5#0");
  EXPECT_EQ(rec_.lines[1].substr(0, 5), "2 9#0");
  EXPECT_EQ(rec_.lines[2].substr(0, 5), "3 2#0");
  EXPECT_EQ(rec_.lines[3].substr(0, 5), "4 7#0");
}

TEST_F(StitchRulesTest, FanOutParentAfterItsChildrenAndCyclesRefused) {
  settings_.timeout_ticks = 1'000'000;
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 1, 10));
  st.AddLink(2, 1);
  st.AddLink(3, 1);
  st.AddLink(1, 3);  // would close a cycle
  st.AddLink(4, 4);  // a self link
  st.AddEvent(Ev("b", 2, 20));
  st.AddEvent(Ev("c", 2, 40));
  st.AddEvent(Ev("b", 3, 25));
  st.AddEvent(Ev("c", 3, 70));
  st.AdvanceClock(100);
  st.AdvanceClock(200);  // both children finish; the parent becomes pending
  st.AdvanceClock(300);
  st.AdvanceClock(400);
  EXPECT_EQ(rec_.lines,
            (std::vector<std::string>{"1 2#0 complete records=2 a->b=10 b->c=20 total=30",
                                      "2 3#0 complete records=2 a->b=15 b->c=45 total=60",
                                      "3 1#0 fanned records=1"}));
  EXPECT_EQ(st.counters().links_rejected, 2u);
  EXPECT_EQ(st.counters().orders_fanned_out, 1u);
}

TEST_F(StitchRulesTest, RecordsBeyondTheOpenLimitAreCountedNotKept) {
  settings_.max_open_orders = 2;
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("a", 1, 10));
  st.AddEvent(Ev("a", 2, 11));
  st.AddEvent(Ev("a", 3, 12));  // a third open order: refused
  st.AddEvent(Ev("b", 3, 13));
  EXPECT_EQ(st.counters().records_over_open_limit, 2u);
  EXPECT_EQ(st.open_orders(), 2u);
  st.AddEvent(Ev("b", 1, 20));
  st.AddEvent(Ev("c", 1, 30));
  st.AdvanceClock(100);
  st.AdvanceClock(200);  // order 1 emitted (no linger): room for one
  st.AddEvent(Ev("a", 3, 210));
  EXPECT_EQ(st.counters().records_over_open_limit, 2u);
  EXPECT_EQ(st.open_orders(), 2u);
  st.Finish();
  EXPECT_EQ(rec_.lines.size(), 3u);
}

// More records than a cell holds inline: every one is kept, in order.
TEST_F(StitchRulesTest, ALongOrderKeepsEveryRecord) {
  Stitcher st = Make();
  st.AdvanceClock(0);
  st.AddEvent(Ev("x", 1, 5));
  st.AddEvent(Ev("a", 1, 10));
  st.AddEvent(Ev("x", 1, 12));
  st.AddEvent(Ev("a", 1, 8));  // repeated, earlier: the one used
  st.AddEvent(Ev("x", 1, 14));
  st.AddEvent(Ev("b", 1, 20));
  st.AddEvent(Ev("c", 1, 50));
  st.Finish();
  EXPECT_EQ(rec_.lines,
            (std::vector<std::string>{"1 1#0 complete records=7 a->b=12 b->c=30 total=42"}));
  EXPECT_EQ(st.counters().outside_pipeline, 3u);
  EXPECT_EQ(st.counters().repeated_stages, 1u);
}

// A stream with reuse inside and outside the linger, two processes, links,
// long orders and timeouts.
struct Step {
  int kind;  // 0 record, 1 link, 2 clock
  StitchEvent e;
  uint64_t a = 0, b = 0;
};

std::vector<Step> RandomStream(const NameTable& names, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Step> steps;
  uint64_t t = 1000;
  const char* tags[] = {"a", "b", "c", "x"};
  for (int i = 0; i < 6000; ++i) {
    t += 1 + rng() % 40;
    const uint32_t r = rng() % 100;
    if (r < 4) {
      steps.push_back(Step{2, {}, t, 0});
    } else if (r < 6) {
      steps.push_back(Step{1, {}, 1 + rng() % 300, 1 + rng() % 300});
    } else {
      StitchEvent e;
      e.tsc = t - rng() % 50;
      e.order_id = 1 + rng() % 300;
      e.name_id = static_cast<uint32_t>(names.Find(tags[rng() % 4]));
      e.process_id = 1 + rng() % 2;
      e.tid = e.process_id;
      steps.push_back(Step{0, e, 0, 0});
    }
  }
  return steps;
}

void Feed(Stitcher& st, const std::vector<Step>& steps, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    const Step& s = steps[i];
    if (s.kind == 0) st.AddEvent(s.e);
    if (s.kind == 1) st.AddLink(s.a, s.b);
    if (s.kind == 2) st.AdvanceClock(s.a);
  }
}

TEST_F(StitchRulesTest, TheSameStreamGivesTheSameOrdersAndACheckpointChangesNothing) {
  settings_.timeout_ticks = 3000;
  settings_.linger_ticks = 500;
  settings_.max_open_orders = 250;
  const std::vector<Step> steps = RandomStream(names_, 5);

  Stitcher whole = Make();
  Feed(whole, steps, 0, steps.size());
  whole.Finish();
  const std::vector<std::string> first = rec_.lines;
  ASSERT_GT(first.size(), 300u);
  EXPECT_GT(whole.counters().reused_ids, 100u);
  EXPECT_GT(whole.counters().orders_fanned_out, 0u);

  rec_.lines.clear();
  StageStats stats2{false};
  Stitcher again(settings_, time_, &names_, &stats2, &rec_);
  Feed(again, steps, 0, steps.size());
  again.Finish();
  EXPECT_EQ(rec_.lines, first);

  // Stopped at several points, saved, restored into a fresh stitcher, run on.
  for (size_t cut : {steps.size() / 3, steps.size() / 2, steps.size() - 7}) {
    rec_.lines.clear();
    StageStats s1{false}, s2{false};
    Stitcher before(settings_, time_, &names_, &s1, &rec_);
    Feed(before, steps, 0, cut);
    StateWriter w;
    before.SaveState(w);
    Stitcher after(settings_, time_, &names_, &s2, &rec_);
    StateReader r(w.bytes());
    ASSERT_TRUE(after.LoadState(r)) << cut;
    EXPECT_EQ(after.open_orders(), before.open_orders());
    EXPECT_EQ(after.remembered_ids(), before.remembered_ids());
    StateWriter w2;
    after.SaveState(w2);
    EXPECT_EQ(w2.bytes(), w.bytes()) << "the same state saves the same bytes";
    Feed(after, steps, cut, steps.size());
    after.Finish();
    EXPECT_EQ(rec_.lines, first) << "cut at step " << cut;
    EXPECT_EQ(after.counters().repeated_stages, whole.counters().repeated_stages);
    EXPECT_EQ(after.counters().records_over_open_limit, whole.counters().records_over_open_limit);
  }
}

TEST_F(StitchRulesTest, AddEventsIsAddEventInTurn) {
  settings_.timeout_ticks = 3000;
  settings_.linger_ticks = 500;
  const std::vector<Step> steps = RandomStream(names_, 9);
  Stitcher one = Make();
  Feed(one, steps, 0, steps.size());
  one.Finish();
  const std::vector<std::string> first = rec_.lines;
  rec_.lines.clear();
  StageStats s2{false};
  Stitcher batched(settings_, time_, &names_, &s2, &rec_);
  std::vector<StitchEvent> batch;
  for (const Step& s : steps) {
    if (s.kind == 0) {
      batch.push_back(s.e);
      continue;
    }
    batched.AddEvents(batch);
    batch.clear();
    if (s.kind == 1) batched.AddLink(s.a, s.b);
    if (s.kind == 2) batched.AdvanceClock(s.a);
  }
  batched.AddEvents(batch);
  batched.Finish();
  EXPECT_EQ(rec_.lines, first);
}

}  // namespace
}  // namespace ticktrace::collect
