// The records-lost figure (ticktrace/store/losses.h): one figure over the
// counters, every cause once, and its text. Values by hand.

#include "ticktrace/store/losses.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

// drained 1000 (of which over_open_limit 3, malformed 5, unattributed 2
// could not be analysed); before the drain: dropped 10, slotless 20, refused
// 30, journal 40. Written 1000 + 10 + 20 + 30 + 40 = 1100; lost 10 + 20 + 30
// + 40 + 3 + 5 + 2 = 110, 10%.
TEST(RecordLoss, EveryCauseOnceOverWhatWasWritten) {
  const std::map<std::string, int64_t> counters = {{"drained", 1000},
                                                   {"dropped", 10},
                                                   {"slotless_dropped", 20},
                                                   {"records_in_refused_segments", 30},
                                                   {"journal_records_lost", 40},
                                                   {"records_over_open_limit", 3},
                                                   {"malformed", 5},
                                                   {"unattributed", 2},
                                                   {"orders_complete", 497},
                                                   {"duplicates_skipped", 7}};
  const RecordLoss loss = ComputeRecordLoss(counters);
  EXPECT_EQ(loss.written, 1100);
  EXPECT_EQ(loss.lost, 110);
  EXPECT_DOUBLE_EQ(loss.LostShare(), 0.1);
  EXPECT_EQ(loss.Text(),
            "110 of 1100 (10%): ring_full 10, no_ring 20, refused_segment 30, journal_corrupt 40, "
            "over_open_limit 3, malformed 5, unattributed 2");
  // The same from the collector's (name, value) list.
  const std::vector<std::pair<std::string, int64_t>> list(counters.begin(), counters.end());
  EXPECT_EQ(ComputeRecordLoss(list).Text(), loss.Text());
}

TEST(RecordLoss, NothingLostAndNothingWritten) {
  EXPECT_EQ(ComputeRecordLoss(std::map<std::string, int64_t>{{"drained", 400000}}).Text(),
            "0 of 400000");
  const RecordLoss none = ComputeRecordLoss(std::map<std::string, int64_t>{});
  EXPECT_EQ(none.Text(), "0 of 0");
  EXPECT_EQ(none.LostShare(), 0);
}

TEST(RecordLoss, PercentText) {
  EXPECT_EQ(LostPercentText(1.0), "100%");
  EXPECT_EQ(LostPercentText(741942.0 / 1541942.0), "48%");
  EXPECT_EQ(LostPercentText(0.012), "1.2%");
  EXPECT_EQ(LostPercentText(0.001), "0.1%");
  EXPECT_EQ(LostPercentText(0.00012), "0.012%");
  EXPECT_EQ(LostPercentText(0), "0%");
}

}  // namespace
}  // namespace ticktrace::store
