// Small building blocks for the HTML report's inline SVG plots: escaping,
// axis ticks that do not overlap (log latency axes, HdrHistogram's
// 1/(1-p) axis, linear time axes) and tick labels with units.
//
// Everything here is pure (no I/O, no store); report_html.cc draws with it
// and tests/report/ checks it.
#ifndef TICKTRACE_VIEW_SVG_H_
#define TICKTRACE_VIEW_SVG_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ticktrace::view {

// `text` safe inside HTML/SVG text and inside a quoted attribute value:
// & < > " ' become entities. Every string that comes from a store goes
// through this (tag names come from the traced processes).
std::string EscapeHtml(absl::string_view text);

// A tick on an axis at `value` (in the axis's data units). Ticks without a
// label draw a grid line only.
struct AxisTick {
  double value = 0;
  std::string label;  // empty: unlabelled
  // ThinLabels keeps the labels of lower numbers first (0: decades, 1: the
  // 2x and 5x ticks of a log axis, ...).
  int priority = 0;
};

// The width in pixels of `label` drawn at `font_px` (an estimate that errs
// wide, so labels spaced by it do not touch).
double LabelWidthPx(absl::string_view label, double font_px);

// Keeps labels on ticks so that no two labels (centred on their ticks) come
// closer than `min_gap_px`: labels are kept by priority, then from the left,
// and a label that would crowd one already kept is cleared (the tick stays,
// as a grid line). `position_px` maps a tick value to its pixel position
// along the axis.
void ThinLabels(std::vector<AxisTick>& ticks, double font_px, double min_gap_px,
                const std::function<double(double)>& position_px);

// A latency tick label: "0", "500 ns", "1 µs", "2.5 µs", "10 ms", "1 s"
// (at most 3 significant digits, no trailing zeros).
std::string FormatTickNs(double ns);

// Ticks for a log latency axis over [lo_ns, hi_ns] (REQUIRES 0 < lo_ns <=
// hi_ns): every decade labelled (1 ns, 10 ns, ...), and 2x and 5x ticks,
// labelled (at a lower priority) when `label_minor` is true or the axis spans
// at most two decades, else grid only. Under one decade, every 1..9 x 10^k.
std::vector<AxisTick> LogLatencyTicks(double lo_ns, double hi_ns, bool label_minor = false);

// Ticks for a log count axis over [1, hi]: 1, 10, 100, ... ("1k", "10k", "1M").
std::vector<AxisTick> LogCountTicks(double hi);

// The HdrHistogram percentile axis, x = 1/(1-p) on a log scale from 1 to
// `x_max` (a power of ten): ticks at 2 (50%), 10 (90%), 100 (99%), 1000
// (99.9%), ... up to x_max.
std::vector<AxisTick> PercentileAxisTicks(double x_max);

// The percentile of x = 1/(1-p) as a label: 2 -> "50%", 1000 -> "99.9%".
std::string FormatPercentileOfX(double x);

// A linear latency axis: [lo, hi] widened to multiples of a 1-2-5 step so
// that there are at most `max_ticks` intervals; every tick labelled with
// FormatTickNs.
struct LinearAxis {
  double lo_ns = 0;
  double hi_ns = 1;
  std::vector<AxisTick> ticks;
};
// REQUIRES: lo_ns <= hi_ns, max_ticks >= 1.
LinearAxis NiceLinearAxis(double lo_ns, double hi_ns, int max_ticks);

// The upper end of a log axis: the smallest power of ten >= v (1 for v <= 1).
double CeilPowerOfTen(double v);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_SVG_H_
