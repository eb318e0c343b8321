// UTC for the stamps of one order: TimeBase::UtcNs looks up the anchor
// segment of every value it converts (a binary search once later anchors
// exist); an order's stamps lie within a few microseconds of each other, so
// one lookup per order finds the segment, and every value inside it is mapped
// with the very arithmetic TimeBase::UtcNs uses there (identical to the ns).
// A value outside the segment (an order that straddles an anchor) goes
// through TimeBase::UtcNs itself. Analysis thread; valid while `time` is
// unchanged.

#ifndef TICKTRACE_COLLECTOR_UTC_SEGMENT_H_
#define TICKTRACE_COLLECTOR_UTC_SEGMENT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "collector/time/time_base.h"

namespace ticktrace::collect {

class UtcSegment {
 public:
  // The segment of `time`'s anchors that holds `tsc`.
  UtcSegment(const TimeBase& time, uint64_t tsc) : time_(&time) {
    const std::vector<UtcAnchor>& later = time.later_anchors;
    if (later.empty()) {  // one anchor: the calibrated rate everywhere
      lo_ = UtcAnchor{time.anchor_tsc, time.anchor_utc_ns};
      return;
    }
    if (tsc <= time.anchor_tsc) {  // before the first: the rate from it
      lo_ = UtcAnchor{time.anchor_tsc, time.anchor_utc_ns};
      first_tsc_ = 0;
      last_tsc_ = time.anchor_tsc;
      return;
    }
    if (tsc >= later.back().tsc) {  // after the last: the rate from it
      lo_ = later.back();
      first_tsc_ = lo_.tsc;
      return;
    }
    // Between two anchors: linear between them (TimeBase::UtcNs).
    const auto hi = std::upper_bound(later.begin(), later.end(), tsc,
                                     [](uint64_t t, const UtcAnchor& a) { return t < a.tsc; });
    lo_ = hi == later.begin() ? UtcAnchor{time.anchor_tsc, time.anchor_utc_ns} : *(hi - 1);
    hi_ = *hi;
    between_ = true;
    first_tsc_ = lo_.tsc;
    last_tsc_ = hi_.tsc - 1;
  }

  // TimeBase::UtcNs(tsc), to the ns.
  int64_t UtcNs(uint64_t tsc) const {
    if (tsc < first_tsc_ || tsc > last_tsc_) return time_->UtcNs(tsc);
    if (!between_) return lo_.utc_ns + std::llround(time_->DiffNs(tsc, lo_.tsc));
    const double fraction =
        static_cast<double>(tsc - lo_.tsc) / static_cast<double>(hi_.tsc - lo_.tsc);
    return lo_.utc_ns + std::llround(fraction * static_cast<double>(hi_.utc_ns - lo_.utc_ns));
  }

  // The TSC values this segment maps itself.
  uint64_t first_tsc() const { return first_tsc_; }
  uint64_t last_tsc() const { return last_tsc_; }

  struct TscRange {
    uint64_t first_tsc, last_tsc;  // inclusive
  };
  // The TSC values within `reach_ticks` of `tsc` and inside this segment
  // whose UTC is in [from_utc_ns, to_utc_ns); `tsc` must be one of them.
  // A binary search at each end: UTC does not decrease over the segment's
  // values (the reach keeps the search from wrapping).
  TscRange TscRangeAround(uint64_t tsc, uint64_t reach_ticks, int64_t from_utc_ns,
                          int64_t to_utc_ns) const {
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    const uint64_t from = std::max(first_tsc_, tsc > reach_ticks ? tsc - reach_ticks : 0);
    const uint64_t to =
        std::min(last_tsc_, tsc < kMax - 1 - reach_ticks ? tsc + reach_ticks : kMax - 1);
    return {FirstAtOrAfter(from, tsc, from_utc_ns), FirstAtOrAfter(tsc, to, to_utc_ns) - 1};
  }

 private:
  // The first t in [from, to] whose UTC is at least `utc_ns`, else to + 1.
  uint64_t FirstAtOrAfter(uint64_t from, uint64_t to, int64_t utc_ns) const {
    uint64_t lo = from, hi = to + 1;  // the answer is in [lo, hi]
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (UtcNs(mid) >= utc_ns) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  const TimeBase* time_;
  UtcAnchor lo_, hi_;  // hi_: only between two anchors
  bool between_ = false;
  // The TSC values this segment maps; others go through TimeBase::UtcNs.
  uint64_t first_tsc_ = 0;
  uint64_t last_tsc_ = std::numeric_limits<uint64_t>::max();
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_UTC_SEGMENT_H_
