// Where a time read by another clock (a kExternal record: stamp_at) lies on
// the TSC timeline, and how far to trust it (docs/calibration.md, "Other
// clocks").
//
// The time is placed through the run's UTC anchors (TimeBase::TscAtUtc: the
// inverse of the piecewise TSC -> CLOCK_REALTIME mapping). Its uncertainty is
// the sum of
//   - the anchors' own error: half the tightest (TSC, CLOCK_REALTIME, TSC)
//     sandwich, plus CLOCK_REALTIME's resolution (measured at the run's
//     start, ExternalClockErrors::anchor_error_ns);
//   - for a time outside the anchors (one newer than the last anchor, the
//     usual case live), how far the calibrated rate may be from
//     CLOCK_REALTIME's over that distance: the newest piece's drift plus what
//     the two anchors' errors make of it (2 x anchor error / the piece's
//     length), or the kernel's largest frequency adjustment (500 ppm) while
//     there is only one anchor (the collector takes its second 100 ms in);
//   - the clock's own error: CLOCK_REALTIME's resolution for kRealtime (it is
//     the anchors' clock); the PHC's sync error for kPhc (--clock-error-ns,
//     or ptp4l's offset); --exchange-clock-error-ns for kExchange. A clock
//     whose error is not known makes the uncertainty unknown, never 0.
//
// Analysis thread; pure functions of their arguments.

#ifndef TICKTRACE_COLLECTOR_EXTERNAL_CLOCK_H_
#define TICKTRACE_COLLECTOR_EXTERNAL_CLOCK_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "collector/time/time_base.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect {

// CLOCK_REALTIME may be slewed by at most this much (the kernel's MAXFREQ).
inline constexpr double kMaxRealtimeSlewPpm = 500;

struct ExternalClockErrors {
  double anchor_error_ns = 0;       // see above; 0 in runs recorded before it was measured
  double realtime_error_ns = 1;     // clock_getres(CLOCK_REALTIME)
  std::optional<double> phc_error_ns;       // unset: unknown
  std::optional<double> exchange_error_ns;  // unset: unknown

  // The clock's own error; unset when unknown (or an unknown clock).
  std::optional<double> ClockErrorNs(uint32_t clock) const {
    switch (clock) {
      case abi::kClockRealtime: return realtime_error_ns;
      case abi::kClockPhc: return phc_error_ns;
      case abi::kClockExchange: return exchange_error_ns;
      default: return std::nullopt;
    }
  }
};

// "realtime", "phc", "exchange" or "unknown".
inline std::string_view ExternalClockName(uint32_t clock) {
  switch (clock) {
    case abi::kClockRealtime: return "realtime";
    case abi::kClockPhc: return "phc";
    case abi::kClockExchange: return "exchange";
    default: return "unknown";
  }
}

// The clocks that read a sample's ends, in one byte
// (StitchedSample::external_clocks): bit c of the low four bits for clock c
// at the begin, of the high four at the end. 0 for a value that is no clock
// (the analyzer counts such records malformed).
static_assert(abi::kExternalClockMax < 4, "a sample keeps each end's clocks in four bits");
inline constexpr int kExternalEndShift = 4;
inline uint8_t ExternalClockBits(uint32_t clock, bool at_end) {
  if (clock < 1 || clock > abi::kExternalClockMax) return 0;
  return static_cast<uint8_t>((1u << clock) << (at_end ? kExternalEndShift : 0));
}

// The names of the clocks that read one end (at_end: the end, else the
// begin) in `bits` (ExternalClockBits), lowest first.
inline std::vector<std::string_view> ExternalClockNames(uint8_t bits, bool at_end) {
  std::vector<std::string_view> out;
  for (uint32_t c = 1; c <= abi::kExternalClockMax; ++c) {
    if (bits & ExternalClockBits(c, at_end)) out.push_back(ExternalClockName(c));
  }
  return out;
}

struct ExternalPlacement {
  uint64_t tsc = 0;                     // TimeBase::TscAtUtc(utc_ns)
  std::optional<double> uncertainty_ns; // unset: unknown
};

// An uncertainty in the 32 bits a stitcher event keeps for it (its
// duration_ticks): ns rounded up, saturated at kUncertaintyMaxNs (4.3 s),
// kUncertaintyUnknown when unknown.
inline constexpr uint32_t kUncertaintyUnknown = 0xffffffffu;
inline constexpr uint32_t kUncertaintyMaxNs = 0xfffffffeu;
inline uint32_t PackUncertaintyNs(std::optional<double> ns) {
  if (!ns.has_value() || !(*ns >= 0)) return kUncertaintyUnknown;
  if (*ns >= static_cast<double>(kUncertaintyMaxNs)) return kUncertaintyMaxNs;
  return static_cast<uint32_t>(std::ceil(*ns));
}
inline std::optional<double> UnpackUncertaintyNs(uint32_t packed) {
  if (packed == kUncertaintyUnknown) return std::nullopt;
  return static_cast<double>(packed);
}

// Places `utc_ns`, read by `clock`, through `time`'s anchors as of now.
inline ExternalPlacement PlaceExternal(const TimeBase& time, int64_t utc_ns, uint32_t clock,
                                       const ExternalClockErrors& errors) {
  ExternalPlacement p;
  p.tsc = time.TscAtUtc(utc_ns);
  const std::optional<double> own = errors.ClockErrorNs(clock);
  if (!own.has_value()) return p;
  const int64_t outside_ns = time.NsOutsideAnchors(utc_ns);
  double rate_ppm = 0;
  if (outside_ns > 0) {
    const std::optional<double> drift = time.LastPieceDriftPpm();
    const std::optional<double> piece_ns = time.LastPieceNs();
    // The drift as measured, plus how far the two anchors' errors can move
    // it over that piece.
    rate_ppm = drift.has_value() && piece_ns.has_value() && *piece_ns > 0
                   ? std::fabs(*drift) + 2 * errors.anchor_error_ns / *piece_ns * 1e6
                   : kMaxRealtimeSlewPpm;
  }
  p.uncertainty_ns =
      errors.anchor_error_ns + *own + rate_ppm * 1e-6 * static_cast<double>(outside_ns);
  return p;
}

// Measures ExternalClockErrors::anchor_error_ns and realtime_error_ns on this
// host: the tightest of `tries` (TSC, CLOCK_REALTIME, TSC) sandwiches, half
// its width in ns at `ns_per_tick`, plus clock_getres(CLOCK_REALTIME).
// Cold path (run start): system calls.
ExternalClockErrors MeasureAnchorError(double ns_per_tick, int tries = 64);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_EXTERNAL_CLOCK_H_
