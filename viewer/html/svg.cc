#include "viewer/html/svg.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ticktrace::view {
namespace {

// Mantissas of the ticks of a log axis, and the priority of their labels.
constexpr std::pair<int, int> kCoarseMantissas[] = {{1, 0}, {2, 1}, {5, 1}};
constexpr std::pair<int, int> kFineMantissas[] = {{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 1},
                                                  {6, 2}, {7, 2}, {8, 2}, {9, 2}};

// `v` with at most three significant digits and no trailing zeros.
std::string ThreeDigits(double v) {
  std::string s = absl::StrFormat("%.3g", v);
  if (s.find('e') != std::string::npos) s = absl::StrFormat("%.0f", v);
  return s;
}

}  // namespace

std::string EscapeHtml(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double LabelWidthPx(absl::string_view label, double font_px) {
  // Code points, not bytes ("µ" is two bytes); 0.62 em errs wide for digits.
  int chars = 0;
  for (const char c : label) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++chars;
  }
  return chars * 0.62 * font_px;
}

void ThinLabels(std::vector<AxisTick>& ticks, double font_px, double min_gap_px,
                const std::function<double(double)>& position_px) {
  std::vector<size_t> order(ticks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ticks[a].priority < ticks[b].priority; });
  std::vector<std::pair<double, double>> kept;  // [left, right] in px
  for (const size_t i : order) {
    AxisTick& tick = ticks[i];
    if (tick.label.empty()) continue;
    const double centre = position_px(tick.value);
    const double half = LabelWidthPx(tick.label, font_px) / 2;
    const double left = centre - half;
    const double right = centre + half;
    const bool crowds = std::any_of(kept.begin(), kept.end(), [&](const auto& k) {
      return left < k.second + min_gap_px && right + min_gap_px > k.first;
    });
    if (crowds) {
      tick.label.clear();
    } else {
      kept.emplace_back(left, right);
    }
  }
}

std::string FormatTickNs(double ns) {
  if (ns == 0) return "0";
  const char* sign = ns < 0 ? "-" : "";
  const double a = std::fabs(ns);
  // Round to three significant digits first, so 999.7 ns becomes "1 µs".
  const double digits = std::floor(std::log10(a));
  const double scale = std::pow(10.0, digits - 2);
  const double r = std::round(a / scale) * scale;
  if (r < 1e3) return absl::StrCat(sign, ThreeDigits(r), " ns");
  if (r < 1e6) return absl::StrCat(sign, ThreeDigits(r / 1e3), " µs");
  if (r < 1e9) return absl::StrCat(sign, ThreeDigits(r / 1e6), " ms");
  return absl::StrCat(sign, ThreeDigits(r / 1e9), " s");
}

std::vector<AxisTick> LogLatencyTicks(double lo_ns, double hi_ns, bool label_minor) {
  std::vector<AxisTick> ticks;
  const int d0 = static_cast<int>(std::floor(std::log10(lo_ns)));
  const int d1 = static_cast<int>(std::ceil(std::log10(hi_ns)));
  const bool narrow = std::log10(hi_ns / lo_ns) < 1.0;
  label_minor = label_minor || d1 - d0 <= 2;
  for (int d = d0; d <= d1; ++d) {
    const double decade = std::pow(10.0, d);
    const auto add = [&](int mantissa, int priority) {
      const double v = mantissa * decade;
      if (v < lo_ns * (1 - 1e-9) || v > hi_ns * (1 + 1e-9)) return;
      const bool labelled = priority == 0 || label_minor || narrow;
      ticks.push_back({v, labelled ? FormatTickNs(v) : std::string(), priority});
    };
    if (narrow) {
      for (const auto& [m, p] : kFineMantissas) add(m, p);
    } else {
      for (const auto& [m, p] : kCoarseMantissas) add(m, p);
    }
  }
  return ticks;
}

std::vector<AxisTick> LogCountTicks(double hi) {
  std::vector<AxisTick> ticks;
  for (double v = 1; v <= hi * (1 + 1e-9); v *= 10) {
    std::string label;
    if (v < 1e3) {
      label = absl::StrFormat("%.0f", v);
    } else if (v < 1e6) {
      label = absl::StrFormat("%.0fk", v / 1e3);
    } else if (v < 1e9) {
      label = absl::StrFormat("%.0fM", v / 1e6);
    } else {
      label = absl::StrFormat("%.0fG", v / 1e9);
    }
    ticks.push_back({v, label, 0});
  }
  return ticks;
}

std::string FormatPercentileOfX(double x) {
  const double percent = 100.0 * (1.0 - 1.0 / x);
  const int decimals = std::max(0, static_cast<int>(std::lround(std::log10(x))) - 2);
  return absl::StrFormat("%.*f%%", decimals, percent);
}

std::vector<AxisTick> PercentileAxisTicks(double x_max) {
  std::vector<AxisTick> ticks;
  if (x_max >= 2) ticks.push_back({2, FormatPercentileOfX(2), 1});
  for (double x = 10; x <= x_max * (1 + 1e-9); x *= 10) {
    ticks.push_back({x, FormatPercentileOfX(x), 0});
  }
  return ticks;
}

LinearAxis NiceLinearAxis(double lo_ns, double hi_ns, int max_ticks) {
  LinearAxis axis;
  if (hi_ns <= lo_ns) hi_ns = lo_ns + std::max(1.0, std::fabs(lo_ns) * 0.1);
  const double span = hi_ns - lo_ns;
  double step = std::pow(10.0, std::floor(std::log10(span / max_ticks)));
  for (int i = 0; i < 40; ++i) {
    const double intervals = std::ceil(hi_ns / step - 1e-9) - std::floor(lo_ns / step + 1e-9);
    if (intervals <= max_ticks) break;
    // 1 -> 2 -> 5 -> 10 times the power of ten.
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    step *= (mantissa < 1.5 || mantissa > 4) ? 2.0 : 2.5;
  }
  const double k0 = std::floor(lo_ns / step + 1e-9);
  const double k1 = std::ceil(hi_ns / step - 1e-9);
  axis.lo_ns = k0 * step;
  axis.hi_ns = k1 * step;
  for (double k = k0; k <= k1; ++k) {
    const double v = k * step;
    axis.ticks.push_back({v, FormatTickNs(v), 0});
  }
  return axis;
}

double CeilPowerOfTen(double v) {
  if (v <= 1) return 1;
  double p = std::pow(10.0, std::ceil(std::log10(v) - 1e-12));
  if (p < v) p *= 10;
  return p;
}

}  // namespace ticktrace::view
