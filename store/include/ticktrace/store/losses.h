// The one figure of what a run lost: records the producers wrote (or tried
// to) that were not analysed, whatever the cause, with its breakdown. Every
// place that shows losses (the collector's exit report and /metrics, the
// viewer's summary, top and report, the demo) computes it here, from the
// store's counters, so that they all say the same number.
//
//   written = drained + dropped + slotless_dropped + records_in_refused_segments
//             + journal_records_lost
//   lost    = dropped + slotless_dropped + records_in_refused_segments
//             + journal_records_lost + records_over_open_limit + malformed
//             + unattributed
//
// The first four causes never reached the analysis (drained does not count
// them); the last three were drained and could not be analysed (drained
// counts them). Each record is lost to one cause only.

#ifndef TICKTRACE_STORE_LOSSES_H_
#define TICKTRACE_STORE_LOSSES_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ticktrace::store {

// A cause of loss: its label (the `cause` of ticktrace_records_lost_total,
// and the word the text forms use) and the store counter that counts it.
struct LossCause {
  std::string_view cause;
  std::string_view counter;
};

// Every cause, in the order the breakdowns list them.
inline constexpr std::array<LossCause, 7> kLossCauses = {{
    {"ring_full", "dropped"},
    {"no_ring", "slotless_dropped"},
    {"refused_segment", "records_in_refused_segments"},
    {"journal_corrupt", "journal_records_lost"},
    {"over_open_limit", "records_over_open_limit"},
    {"malformed", "malformed"},
    {"unattributed", "unattributed"},
}};

// Lost records above this share of those written make every stage's
// confidence say "records lost N%": 1 per mille, the share of samples that
// make a p99.9. Losses are not random (a ring fills in a burst, when stages
// are slow), so a loss of that size may be the whole tail the p99.9 is read
// from.
inline constexpr double kLostShareNoted = 0.001;

struct RecordLoss {
  int64_t written = 0;
  int64_t lost = 0;
  std::array<int64_t, kLossCauses.size()> by_cause{};  // kLossCauses order

  // lost / written; 0 when nothing was written.
  double LostShare() const;
  // "1000 of 1000 (100%): refused_segment 1000" (the causes that are not
  // zero); "0 of 400000".
  std::string Text() const;
};

// From a counter lookup (0 for a counter not written).
RecordLoss ComputeRecordLoss(const std::function<int64_t(std::string_view)>& counter);
RecordLoss ComputeRecordLoss(const std::map<std::string, int64_t>& counters);
RecordLoss ComputeRecordLoss(const std::vector<std::pair<std::string, int64_t>>& counters);

// "100%", "48%", "0.5%", "0.01%": two significant digits below 10%.
std::string LostPercentText(double share);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_LOSSES_H_
