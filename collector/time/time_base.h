// Conversion of TSC ticks to nanoseconds and to UTC, from one calibration.
// Doubles throughout (ticks × ns_per_tick), never ticks * 1e9 / hz in integers.
//
// UTC is piecewise (docs/calibration.md#ticks-to-utc-the-anchor): the run's first (TSC, CLOCK_REALTIME) anchor,
// then one more every --anchor-interval (the collector's drain thread reads
// them; they travel in the stream, so replay maps as the live run did).
// Between two anchors a TSC value maps linearly between them, so UTC columns
// follow NTP/PTP steering of CLOCK_REALTIME; before the first or after the
// last anchor it maps with the calibrated frequency from the nearest one.
//
// A value type; any thread may use its own copy. The analysis thread adds
// anchors to its copy (Stitcher) in stream order.

#ifndef TICKTRACE_COLLECTOR_TIME_BASE_H_
#define TICKTRACE_COLLECTOR_TIME_BASE_H_

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace ticktrace::collect {

// CLOCK_REALTIME now, in ns since the Unix epoch (cold paths: process
// discovery, run start and end).
inline int64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A TSC value read back to back with a CLOCK_REALTIME value.
struct UtcAnchor {
  uint64_t tsc = 0;
  int64_t utc_ns = 0;
};

struct TimeBase {
  double tsc_hz = 0;
  double ns_per_tick = 0;
  uint64_t anchor_tsc = 0;      // a TSC value read back to back with ...
  int64_t anchor_utc_ns = 0;    // ... this CLOCK_REALTIME value
  // Later anchors, ascending in tsc, all above anchor_tsc.
  std::vector<UtcAnchor> later_anchors;

  static TimeBase FromHz(double tsc_hz, uint64_t anchor_tsc, int64_t anchor_utc_ns) {
    return TimeBase{tsc_hz, 1e9 / tsc_hz, anchor_tsc, anchor_utc_ns, {}};
  }
  // A signed tick difference in ns.
  double TicksToNs(int64_t ticks) const { return static_cast<double>(ticks) * ns_per_tick; }
  // The difference later - earlier in ns; negative when `later` is below `earlier`.
  double DiffNs(uint64_t later, uint64_t earlier) const {
    return TicksToNs(static_cast<int64_t>(later - earlier));
  }
  // Adds an anchor read after every earlier one. An anchor whose tsc is not
  // above the last one's (a replayed or reordered update) is ignored: false.
  bool AddAnchor(uint64_t tsc, int64_t utc_ns) {
    const uint64_t last = later_anchors.empty() ? anchor_tsc : later_anchors.back().tsc;
    if (tsc <= last) return false;
    later_anchors.push_back(UtcAnchor{tsc, utc_ns});
    return true;
  }
  // UTC ns of a TSC value, through the anchors (piecewise linear between two,
  // the calibrated rate outside them).
  int64_t UtcNs(uint64_t tsc) const {
    if (later_anchors.empty() || tsc <= anchor_tsc) {
      return anchor_utc_ns + std::llround(DiffNs(tsc, anchor_tsc));
    }
    const UtcAnchor& last = later_anchors.back();
    if (tsc >= last.tsc) return last.utc_ns + std::llround(DiffNs(tsc, last.tsc));
    // The first later anchor above tsc, and the one before it.
    const auto hi = std::upper_bound(
        later_anchors.begin(), later_anchors.end(), tsc,
        [](uint64_t t, const UtcAnchor& a) { return t < a.tsc; });
    const UtcAnchor lo = hi == later_anchors.begin() ? UtcAnchor{anchor_tsc, anchor_utc_ns}
                                                     : *(hi - 1);
    const double fraction =
        static_cast<double>(tsc - lo.tsc) / static_cast<double>(hi->tsc - lo.tsc);
    return lo.utc_ns + std::llround(fraction * static_cast<double>(hi->utc_ns - lo.utc_ns));
  }
  // The TSC position whose UtcNs is `utc_ns`: UtcNs's inverse over the same
  // pieces (linear between the two anchors around it, the calibrated rate
  // before the first or after the last), rounded to the tick. For a time read
  // by another clock (an external stamp: collector/time/external_clock.h).
  // A CLOCK_REALTIME step between two anchors (UTC going backwards) leaves
  // that piece's UTC range empty or reversed: the first piece that holds
  // `utc_ns` is taken.
  uint64_t TscAtUtc(int64_t utc_ns) const {
    const auto from = [&](const UtcAnchor& a) {
      return a.tsc + static_cast<uint64_t>(
                         std::llround(static_cast<double>(utc_ns - a.utc_ns) / ns_per_tick));
    };
    const UtcAnchor first{anchor_tsc, anchor_utc_ns};
    if (later_anchors.empty() || utc_ns <= anchor_utc_ns) return from(first);
    const UtcAnchor& last = later_anchors.back();
    if (utc_ns >= last.utc_ns) return from(last);
    const auto between = [&](const UtcAnchor& lo, const UtcAnchor& hi) {
      const double fraction =
          static_cast<double>(utc_ns - lo.utc_ns) / static_cast<double>(hi.utc_ns - lo.utc_ns);
      return lo.tsc +
             static_cast<uint64_t>(std::llround(fraction * static_cast<double>(hi.tsc - lo.tsc)));
    };
    // UTC rises with the anchors unless the clock stepped back: a binary
    // search, checked, and a walk when the check fails.
    const auto hi = std::upper_bound(
        later_anchors.begin(), later_anchors.end(), utc_ns,
        [](int64_t u, const UtcAnchor& a) { return u < a.utc_ns; });
    if (hi != later_anchors.end()) {
      const UtcAnchor lo = hi == later_anchors.begin() ? first : *(hi - 1);
      if (utc_ns >= lo.utc_ns && utc_ns < hi->utc_ns) return between(lo, *hi);
    }
    UtcAnchor lo = first;
    for (const UtcAnchor& a : later_anchors) {
      if (utc_ns >= lo.utc_ns && utc_ns < a.utc_ns) return between(lo, a);
      lo = a;
    }
    return from(last);  // no piece holds it (a step back around it)
  }
  // How far `utc_ns` lies outside the anchors' UTC range, in ns (0 inside it):
  // a time mapped there uses the calibrated rate, not CLOCK_REALTIME's own.
  int64_t NsOutsideAnchors(int64_t utc_ns) const {
    const int64_t last_utc = later_anchors.empty() ? anchor_utc_ns : later_anchors.back().utc_ns;
    if (utc_ns < anchor_utc_ns) return anchor_utc_ns - utc_ns;
    if (utc_ns > last_utc) return utc_ns - last_utc;
    return 0;
  }
  // The last piece's length in ns (calibrated); unset with one anchor.
  std::optional<double> LastPieceNs() const {
    if (later_anchors.empty()) return std::nullopt;
    const uint64_t lo = later_anchors.size() == 1 ? anchor_tsc
                                                  : later_anchors[later_anchors.size() - 2].tsc;
    return DiffNs(later_anchors.back().tsc, lo);
  }
  // CLOCK_REALTIME's rate against the calibrated TSC over the last piece
  // between two anchors, in ppm (DriftPpm's measure, over the newest piece
  // only). Unset with one anchor.
  std::optional<double> LastPieceDriftPpm() const {
    if (later_anchors.empty()) return std::nullopt;
    const UtcAnchor lo = later_anchors.size() == 1 ? UtcAnchor{anchor_tsc, anchor_utc_ns}
                                                   : later_anchors[later_anchors.size() - 2];
    const UtcAnchor& hi = later_anchors.back();
    const double tsc_ns = DiffNs(hi.tsc, lo.tsc);
    if (tsc_ns <= 0) return std::nullopt;
    return (static_cast<double>(hi.utc_ns - lo.utc_ns) / tsc_ns - 1.0) * 1e6;
  }
  // How far CLOCK_REALTIME ran from the calibrated TSC between the first and
  // the last anchor, in ppm (positive: the realtime clock ran faster). Unset
  // with one anchor.
  std::optional<double> DriftPpm() const {
    if (later_anchors.empty()) return std::nullopt;
    const UtcAnchor& last = later_anchors.back();
    const double tsc_ns = DiffNs(last.tsc, anchor_tsc);
    if (tsc_ns <= 0) return std::nullopt;
    return (static_cast<double>(last.utc_ns - anchor_utc_ns) / tsc_ns - 1.0) * 1e6;
  }
  // Ticks in `ms` milliseconds (rounded up).
  uint64_t MsToTicks(double ms) const {
    return static_cast<uint64_t>(std::ceil(ms * 1e-3 * tsc_hz));
  }
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_TIME_BASE_H_
