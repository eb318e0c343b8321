// RenderReportHtml: the report page drawn from a ReportModel. Pure string
// building: inline CSS, inline SVG, no script. Every string from the store
// goes through EscapeHtml.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "viewer/format/format_units.h"
#include "viewer/html/report_model.h"
#include "viewer/html/svg.h"
#include "viewer/views/losses_view.h"
#include "viewer/views/flag_words.h"

namespace ticktrace::view {
namespace {

constexpr double kTickFontPx = 11;
constexpr double kLabelGapPx = 8;
constexpr double kPlotWidth = 536;
constexpr double kPlotHeight = 300;
constexpr double kWideWidth = 1084;

constexpr char kCss[] = R"css(
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f4f5f7; color: #1f2328;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
    "Liberation Sans", sans-serif; }
main { max-width: 1360px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 10px; }
h3 { font-size: 15px; margin: 0 0 6px; }
section, header.card { background: #fff; border: 1px solid #d8dce1; border-radius: 8px;
  padding: 16px 20px; margin: 16px 0; }
.sub { color: #57606a; }
.mono, td.num, .num { font-variant-numeric: tabular-nums; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 10px 0; }
dl.facts dt { color: #57606a; }
dl.facts dd { margin: 0; }
.banner { border-radius: 6px; padding: 10px 14px; margin: 10px 0; }
.banner.loss { background: #ffebe9; border: 2px solid #cf222e; color: #82071e; font-weight: 600; }
.banner.loss ul { margin: 4px 0 0; font-weight: 400; }
.banner.ok { background: #dafbe1; border: 1px solid #4ac26b; color: #116329; }
.banner.warn { background: #fff8c5; border: 1px solid #d4a72c; color: #4d2d00; }
.banner.warn ul { margin: 4px 0 0; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 4px 6px; border-bottom: 1px solid #eaeef2; text-align: right;
  white-space: nowrap; }
th { background: #f6f8fa; font-weight: 600; }
th:first-child, td:first-child { text-align: left; }
td.stage { white-space: nowrap; }
td.confidence { white-space: normal; text-align: left; min-width: 12em; }
tr.total td { font-weight: 600; border-top: 2px solid #d8dce1; }
td.flagged { color: #9a6700; font-weight: 600; }
td.hosts { text-align: left; white-space: nowrap; }  /* report --hosts (stitched_html.cc) */
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px;
  margin-right: 6px; vertical-align: -1px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.stage-block { border-top: 1px solid #eaeef2; padding-top: 12px; margin-top: 12px; }
.stage-block:first-of-type { border-top: 0; margin-top: 0; padding-top: 0; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 18px; margin-top: 6px; }
.order { margin-top: 14px; }
.note { color: #57606a; font-size: 13px; margin: 4px 0; }
svg { display: block; background: #fff; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  fill: #1f2328; }
svg .tick { font-size: 11px; fill: #57606a; }
svg .axis-title { font-size: 12px; fill: #1f2328; }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .axis { stroke: #8c959f; stroke-width: 1; }
details summary { cursor: pointer; color: #0969da; }
footer { color: #57606a; font-size: 12px; margin-top: 24px; }
svg a rect.bucket:hover { fill: rgba(9, 105, 218, 0.08); }
svg a { cursor: pointer; }
tr:target { background: #fff8c5; }
)css";

// Why the stage medians do not add up to the total's (readers ask, and the
// answer is not obvious from the numbers), shown under
// the median stack and under the bands over time.
constexpr char kWhyMediansDoNotAdd[] =
    "<p class=\"note\"><b>Why the stage medians do not add up to the total's median.</b> A "
    "stage's median is the middle of that stage's own distribution, and the orders in the "
    "middle of one stage are not those in the middle of the next: an order slow in one hop is "
    "usually ordinary in the others. So a tail that a few orders take in one stage moves the "
    "total's median and not the stage's, and the sum of the stage medians can be far below (or "
    "above) the total's median. Means do add up: the mean of a sum is the sum of the means, so "
    "for orders that pass every stage the stacked means reach the total's mean. Read the "
    "medians for the typical order and the means for where the time goes in sum.</p>\n";

std::string F(double v) { return absl::StrFormat("%.1f", v); }

// The plot area of a chart, in SVG pixels.
struct Frame {
  double x = 0;
  double y = 0;
  double w = 0;
  double h = 0;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
};

// A mapping of data values onto pixels, linear or log10.
struct Scale {
  double lo = 0;
  double hi = 1;
  double px0 = 0;  // pixel of lo
  double px1 = 1;  // pixel of hi
  bool log = false;
  double operator()(double v) const {
    double t;
    if (log) {
      t = (std::log10(std::max(v, 1e-300)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    } else {
      t = (v - lo) / (hi - lo);
    }
    return px0 + std::clamp(t, -0.02, 1.02) * (px1 - px0);
  }
};

std::string SvgOpen(const std::string& id, double width, double height, const std::string& label) {
  return absl::StrCat("<svg id=\"", id, "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"",
                      F(width), "\" height=\"", F(height), "\" viewBox=\"0 0 ", F(width), " ",
                      F(height), "\" role=\"img\" aria-label=\"", EscapeHtml(label), "\">\n");
}

std::string Text(double x, double y, const std::string& escaped, const char* anchor,
                 const char* cls, const std::string& extra = "") {
  return absl::StrCat("<text x=\"", F(x), "\" y=\"", F(y), "\" text-anchor=\"", anchor,
                      "\" class=\"", cls, "\"", extra, ">", escaped, "</text>\n");
}

// A horizontal axis at the bottom of `frame` with grid lines, thinned tick
// labels and a title.
std::string XAxis(const Frame& frame, const Scale& scale, std::vector<AxisTick> ticks,
                  const std::string& title, double svg_width) {
  ThinLabels(ticks, kTickFontPx, kLabelGapPx, [&](double v) { return scale(v); });
  std::string out;
  for (const AxisTick& t : ticks) {
    const double x = scale(t.value);
    absl::StrAppend(&out, "<line class=\"grid\" x1=\"", F(x), "\" y1=\"", F(frame.y), "\" x2=\"",
                    F(x), "\" y2=\"", F(frame.bottom()), "\"/>\n");
    absl::StrAppend(&out, "<line class=\"axis\" x1=\"", F(x), "\" y1=\"", F(frame.bottom()),
                    "\" x2=\"", F(x), "\" y2=\"", F(frame.bottom() + 4), "\"/>\n");
    if (!t.label.empty()) {
      // A label that would run off the drawing is anchored at its tick's side.
      const double half = LabelWidthPx(t.label, kTickFontPx) / 2;
      const char* anchor = x + half > svg_width - 2 ? "end" : x - half < 2 ? "start" : "middle";
      const double at = anchor[0] == 'e'   ? std::min(x + 3, svg_width - 2)
                        : anchor[0] == 's' ? std::max(x - 3, 2.0)
                                           : x;
      out += Text(at, frame.bottom() + 17, EscapeHtml(t.label), anchor, "tick");
    }
  }
  absl::StrAppend(&out, "<line class=\"axis\" x1=\"", F(frame.x), "\" y1=\"", F(frame.bottom()),
                  "\" x2=\"", F(frame.right()), "\" y2=\"", F(frame.bottom()), "\"/>\n");
  out +=
      Text(frame.x + frame.w / 2, frame.bottom() + 36, EscapeHtml(title), "middle", "axis-title");
  return out;
}

// A vertical axis on the left of `frame`.
std::string YAxis(const Frame& frame, const Scale& scale, std::vector<AxisTick> ticks,
                  const std::string& title) {
  // Vertical labels crowd by their height, not their width.
  std::string out;
  std::stable_sort(ticks.begin(), ticks.end(),
                   [](const AxisTick& a, const AxisTick& b) { return a.priority < b.priority; });
  std::vector<double> kept;
  for (AxisTick& t : ticks) {
    const double y = scale(t.value);
    const bool crowds = std::any_of(kept.begin(), kept.end(),
                                    [&](double k) { return std::fabs(k - y) < 2.4 * kTickFontPx; });
    if (crowds) t.label.clear();
    if (!t.label.empty()) kept.push_back(y);
  }
  for (const AxisTick& t : ticks) {
    const double y = scale(t.value);
    absl::StrAppend(&out, "<line class=\"grid\" x1=\"", F(frame.x), "\" y1=\"", F(y), "\" x2=\"",
                    F(frame.right()), "\" y2=\"", F(y), "\"/>\n");
    if (!t.label.empty()) {
      out += Text(frame.x - 6, y + 4, EscapeHtml(t.label), "end", "tick");
    }
  }
  absl::StrAppend(&out, "<line class=\"axis\" x1=\"", F(frame.x), "\" y1=\"", F(frame.y),
                  "\" x2=\"", F(frame.x), "\" y2=\"", F(frame.bottom()), "\"/>\n");
  const double cx = 14;
  const double cy = frame.y + frame.h / 2;
  out += Text(cx, cy, EscapeHtml(title), "middle", "axis-title",
              absl::StrCat(" transform=\"rotate(-90 ", F(cx), " ", F(cy), ")\""));
  return out;
}

// A latency axis over [lo, hi] for values that may be <= 0: log when all
// are positive and they span more than `log_ratio`, else linear.
struct LatencyAxis {
  Scale scale;
  std::vector<AxisTick> ticks;
};
LatencyAxis MakeLatencyAxis(double lo, double hi, double px0, double px1, double log_ratio,
                            int max_linear_ticks) {
  LatencyAxis axis;
  if (lo > 0 && hi / lo > log_ratio) {
    axis.scale = {lo, hi, px0, px1, true};
    axis.ticks = LogLatencyTicks(lo, hi, /*label_minor=*/true);  // thinned by YAxis
  } else {
    const LinearAxis lin = NiceLinearAxis(std::min(0.0, lo), hi, max_linear_ticks);
    axis.scale = {lin.lo_ns, lin.hi_ns, px0, px1, false};
    axis.ticks = lin.ticks;
  }
  return axis;
}

// A log latency range at least `min_decades` wide around [lo, hi], so that
// it holds at least one tick.
std::pair<double, double> WidenLogRange(double lo, double hi, double min_decades) {
  const double decades = std::log10(hi / lo);
  if (decades >= min_decades) return {lo, hi};
  const double pad = std::pow(10.0, (min_decades - decades) / 2);
  return {lo / pad, hi * pad};
}

// [lo, hi] widened out to the nearest 1-2-5 ticks, so that both ends of a
// log axis carry a tick (and, likely, a label).
std::pair<double, double> SnapLogRange(double lo, double hi) {
  const auto down = [](double v) {
    const double decade = std::pow(10.0, std::floor(std::log10(v)));
    for (const double m : {5.0, 2.0, 1.0}) {
      if (m * decade <= v * (1 + 1e-9)) return m * decade;
    }
    return decade;
  };
  const auto up = [](double v) {
    const double decade = std::pow(10.0, std::floor(std::log10(v)));
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
      if (m * decade >= v * (1 - 1e-9)) return m * decade;
    }
    return 10 * decade;
  };
  return {down(lo), up(hi)};
}

// The <svg> opening of one of a stage's two plots ("stage-<slug>-<what>",
// `label` for screen readers).
std::string StagePlotOpen(const StagePlots& stage, const char* what, const std::string& label) {
  return SvgOpen(absl::StrCat("stage-", stage.slug, "-", what), kPlotWidth, kPlotHeight, label);
}

// A stage plot's frame, `left_px` wide for the y axis's labels.
Frame StagePlotFrame(double left_px) {
  return Frame{left_px, 14, kPlotWidth - left_px - 22, kPlotHeight - 14 - 52};
}

// The rest of a plot that has nothing to draw: `message` in the frame's middle.
std::string EmptyPlot(const Frame& frame, const char* message) {
  return Text(frame.x + frame.w / 2, frame.y + frame.h / 2, message, "middle", "axis-title") +
         "</svg>\n";
}

std::string HistogramSvg(const StagePlots& stage) {
  const LogHistogram& h = stage.histogram;
  std::string out =
      StagePlotOpen(stage, "histogram", absl::StrCat("latency histogram of ", stage.stage));
  const Frame frame = StagePlotFrame(64);
  if (h.bins.empty()) {
    return out + EmptyPlot(frame, h.total == 0 ? "no stored samples"
                                               : "no positive latencies to draw on a log axis");
  }
  const auto [wide_lo, wide_hi] = WidenLogRange(h.bins.front().lo_ns, h.bins.back().hi_ns, 0.6);
  const auto [lo, hi] = SnapLogRange(wide_lo, wide_hi);
  const Scale x{lo, hi, frame.x, frame.right(), true};
  int64_t peak = 1;
  for (const HistogramBin& b : h.bins) peak = std::max(peak, b.count);
  const double y_hi = std::max(10.0, CeilPowerOfTen(static_cast<double>(peak)));
  const Scale y{0.5, y_hi, frame.bottom(), frame.y, true};
  out += YAxis(frame, y, LogCountTicks(y_hi), "samples per bin (log scale)");
  out += XAxis(frame, x, LogLatencyTicks(lo, hi), "latency (log scale)", kPlotWidth);
  for (const HistogramBin& b : h.bins) {
    if (b.count == 0) continue;
    const double x0 = x(b.lo_ns);
    const double x1 = x(b.hi_ns);
    const double top = y(static_cast<double>(b.count));
    absl::StrAppend(
        &out, "<rect x=\"", F(x0), "\" y=\"", F(top), "\" width=\"",
        F(std::max(1.0, x1 - x0 - 0.5)), "\" height=\"", F(frame.bottom() - top), "\" fill=\"",
        stage.colour, "\" fill-opacity=\"0.85\"><title>",
        EscapeHtml(absl::StrCat(FormatDurationNs(b.lo_ns), " to ", FormatDurationNs(b.hi_ns), ": ",
                                b.count, b.count == 1 ? " sample" : " samples")),
        "</title></rect>\n");
  }
  return out + "</svg>\n";
}

std::string PercentileSvg(const StagePlots& stage) {
  const PercentileCurve& c = stage.percentiles;
  std::string out =
      StagePlotOpen(stage, "percentiles", absl::StrCat("latency by percentile of ", stage.stage));
  const Frame frame = StagePlotFrame(72);
  if (c.points.empty()) return out + EmptyPlot(frame, "no stored samples");
  double lo = c.points.front().value_ns;
  double hi = std::max(c.max_ns, c.points.back().value_ns);
  LatencyAxis y_axis;
  if (lo > 0 && hi / lo > 20) {
    std::tie(lo, hi) = SnapLogRange(lo, hi);
  }
  y_axis = MakeLatencyAxis(lo, hi, frame.bottom(), frame.y, 20, 6);
  const Scale x{1, c.x_max, frame.x, frame.right(), true};
  out += YAxis(frame, y_axis.scale, y_axis.ticks,
               y_axis.scale.log ? "latency (log scale)" : "latency");
  out +=
      XAxis(frame, x, PercentileAxisTicks(c.x_max), "percentile (1/(1−p) log scale)", kPlotWidth);
  // The maximum: a dashed line with its value.
  const double y_max = y_axis.scale(c.max_ns);
  absl::StrAppend(&out, "<line x1=\"", F(frame.x), "\" y1=\"", F(y_max), "\" x2=\"",
                  F(frame.right()), "\" y2=\"", F(y_max),
                  "\" stroke=\"#cf222e\" stroke-width=\"1\" stroke-dasharray=\"4 3\"/>\n");
  out += Text(frame.right() - 4, y_max - 5,
              EscapeHtml(absl::StrCat("max ", FormatDurationNs(c.max_ns), " (", c.count,
                                      c.count == 1 ? " sample)" : " samples)")),
              "end", "tick", " style=\"fill:#cf222e\"");
  std::string points;
  for (const PercentilePoint& p : c.points) {
    absl::StrAppend(&points, F(x(p.x)), ",", F(y_axis.scale(p.value_ns)), " ");
  }
  absl::StrAppend(&out, "<polyline fill=\"none\" stroke=\"", stage.colour,
                  "\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"", points, "\"/>\n");
  for (const PercentilePoint& p : c.points) {
    absl::StrAppend(
        &out, "<circle cx=\"", F(x(p.x)), "\" cy=\"", F(y_axis.scale(p.value_ns)),
        "\" r=\"2.2\" fill=\"", stage.colour, "\"><title>",
        EscapeHtml(absl::StrFormat("p%.6g: %s", p.percentile * 100, FormatDurationNs(p.value_ns))),
        "</title></circle>\n");
  }
  return out + "</svg>\n";
}

std::map<std::string, std::string> ColourOf(const ReportModel& model) {
  std::map<std::string, std::string> colours;
  for (const StagePlots& s : model.stages) colours[s.stage] = s.colour;
  return colours;
}

std::string Swatch(const std::string& colour) {
  return absl::StrCat("<span class=\"swatch\" style=\"background:", colour, "\"></span>");
}

// The run's facts: session, host, time, calibration, pipeline, counters,
// how the statistics were made, whether the detail is sampled.
std::string RunFacts(const ReportModel& model) {
  const Summary& s = model.summary;
  const store::RunRow& run = s.run;
  std::string out;
  out += "<dl class=\"facts\">\n";
  const auto fact = [&](const std::string& name, const std::string& escaped_value) {
    absl::StrAppend(&out, "<dt>", name, "</dt><dd>", escaped_value, "</dd>\n");
  };
  fact("session", EscapeHtml(run.session));
  fact("host", EscapeHtml(run.host));
  std::string span = FormatUtcNs(run.started_utc_ns);
  if (run.ended_utc_ns.has_value()) {
    absl::StrAppend(&span, " .. ", FormatUtcNs(*run.ended_utc_ns), " (",
                    FormatDurationNs(static_cast<double>(*run.ended_utc_ns - run.started_utc_ns)),
                    ")");
  } else {
    absl::StrAppend(&span, " .. (still running, or the collector did not finish)");
  }
  fact("time", EscapeHtml(span));
  fact("calibration",
       EscapeHtml(absl::StrCat(
           FormatHz(run.tsc_hz), " (", run.calibration_source, "), spread ",
           run.spread_ppm.has_value() ? absl::StrFormat("%.2f ppm", *run.spread_ppm) : "-",
           ", TSC step ", FormatDurationNs(run.tsc_step_ns), ", kernel ",
           run.kernel_tsc_hz.has_value() ? FormatHz(*run.kernel_tsc_hz) : "-")));
  fact("pipeline", EscapeHtml(absl::StrCat(run.pipeline.empty() ? "-" : run.pipeline,
                                           run.pipeline_learned ? " (learned)" : " (declared)")));
  fact("counters", EscapeHtml(absl::StrCat(
                       "drained ", CounterValue(s, "drained"), ", dropped ",
                       CounterValue(s, "dropped"), ", malformed ", CounterValue(s, "malformed"),
                       ", orders complete ", CounterValue(s, "orders_complete"), ", incomplete ",
                       CounterValue(s, "orders_incomplete"), ", samples not stored ",
                       CounterValue(s, "samples_not_stored"))));
  std::vector<std::string> others;
  for (const auto& [name, value] : s.counters) {
    if (value == 0) continue;
    if (name == "drained" || name == "dropped" || name == "malformed" ||
        name == "orders_complete" || name == "orders_incomplete" || name == "samples_not_stored") {
      continue;
    }
    others.push_back(absl::StrCat(name, " ", value));
  }
  if (!others.empty()) fact("other counters", EscapeHtml(absl::StrJoin(others, ", ")));
  const std::string flagged = FlagRuleWords(s.include_flagged);
  fact(
      "statistics",
      EscapeHtml(s.from_intervals
                     ? absl::StrCat("interval histograms merged over the whole run (", flagged,
                                    "); plots from ", model.samples_stored, " stored samples")
                     : absl::StrCat("exact, from ", s.samples_read, " stored samples; ", flagged)));
  if (s.detail_sampled) {
    // The plots and waterfalls come from the detail: never shown as complete.
    fact("detail", EscapeHtml(absl::StrCat(
                       "detail sampled: ", s.detail.orders_kept, " of ", s.detail.orders,
                       " orders have detail (--detail ", s.detail.policy,
                       s.detail.intervals_deleted > 0 ? ", some deleted by retention" : "",
                       "); the plots and slowest orders show only those")));
  }
  out += "</dl>\n";
  return out;
}

// Lost data first and loud; otherwise a line saying nothing was lost.
std::string LossBanner(const ReportModel& model) {
  std::string out;
  if (!model.losses.empty()) {
    out +=
        "<div class=\"banner loss\" id=\"loss-banner\">Data was lost in this run: the "
        "numbers below do not cover everything the programs traced.\n<ul>\n";
    for (const LossCounter& l : model.losses) {
      absl::StrAppend(&out, "<li><b>", EscapeHtml(l.name), " ", l.value,
                      "</b>: ", EscapeHtml(l.meaning), "</li>\n");
    }
    out += "</ul></div>\n";
  } else {
    out +=
        "<div class=\"banner ok\" id=\"no-loss\">Nothing lost: no records dropped or "
        "malformed, every sample stored.</div>\n";
  }
  return out;
}

// What the collector said about the run (an empty session, unseen tags, a
// reversed pipeline: run_diagnostics.h), as it said it.
std::string NotesBanner(const ReportModel& model) {
  if (model.summary.notes.empty()) return "";
  std::string out =
      "<div class=\"banner warn\" id=\"run-notes\">The collector said about this run\n<ul>\n";
  for (const store::RunNote& n : model.summary.notes) {
    absl::StrAppend(&out, "<li>", EscapeHtml(n.text), "</li>\n");
  }
  return out + "</ul></div>\n";
}

// The environment's warnings as a banner, then every fact in a table.
std::string EnvironmentSection(const ReportModel& model) {
  std::string out;
  std::vector<const EnvironmentFact*> warnings;
  for (const EnvironmentFact& f : model.environment) {
    if (f.warning) warnings.push_back(&f);
  }
  if (!warnings.empty()) {
    out +=
        "<div class=\"banner warn\" id=\"environment-warnings\">Environment warnings "
        "(these can distort latencies)\n<ul>\n";
    for (const EnvironmentFact* f : warnings) {
      absl::StrAppend(&out, "<li><b>", EscapeHtml(f->name), "</b> = ", EscapeHtml(f->value),
                      f->meaning.empty() ? "" : ": ", EscapeHtml(f->meaning), "</li>\n");
    }
    out += "</ul></div>\n";
  }
  if (!model.environment.empty()) {
    absl::StrAppend(&out, "<details id=\"environment\"><summary>environment (",
                    model.environment.size(), " facts, ", warnings.size(),
                    warnings.size() == 1 ? " warning" : " warnings",
                    ")</summary>\n<table><tr><th>name</th><th>value</th><th "
                    "style=\"text-align:left\">meaning</th></tr>\n");
    for (const EnvironmentFact& f : model.environment) {
      absl::StrAppend(&out, "<tr><td>", f.warning ? "&#9888; " : "", EscapeHtml(f.name),
                      "</td><td>", EscapeHtml(f.value),
                      "</td><td style=\"text-align:left;white-space:normal\">",
                      EscapeHtml(f.meaning), "</td></tr>\n");
    }
    out += "</table></details>\n";
  }
  return out;
}

// The records-lost figure, the header's first fact (views/losses_view.h).
std::string RecordsLostHtml(const ReportModel& model) {
  const store::RecordLoss loss = store::ComputeRecordLoss(model.summary.counters);
  std::string text = RecordsLostLine(loss);
  text.pop_back();  // its newline
  return absl::StrCat("<div class=\"banner ", loss.lost > 0 ? "loss" : "ok",
                      "\" id=\"records-lost\">", EscapeHtml(text), "</div>\n");
}

std::string RunHeader(const ReportModel& model) {
  const store::RunRow& run = model.summary.run;
  std::string out = "<header class=\"card\" id=\"run-header\">\n";
  absl::StrAppend(&out, "<h1>ticktrace report: run ", run.run_id, "</h1>\n");
  absl::StrAppend(&out, "<div class=\"sub\">store ", EscapeHtml(model.store_path), "</div>\n");
  out += RecordsLostHtml(model);
  out += RunFacts(model);
  out += LossBanner(model);
  out += NotesBanner(model);
  out += EnvironmentSection(model);
  out += "</header>\n";
  return out;
}

std::string StackSvg(const ReportModel& model, const std::map<std::string, std::string>& colours) {
  const MedianStack& stack = model.stack;
  const double end = std::max(stack.sum_ns, stack.total_p50_ns.value_or(0));
  constexpr double kBar = 26;
  const double height = 8 + 2 * (kBar + 8) + 46;
  std::string out = SvgOpen("median-stack", kWideWidth, height,
                            "median time per stage, stacked, against the total's median");
  const Frame frame{150, 8, kWideWidth - 150 - 24, 2 * (kBar + 8)};
  const LinearAxis lin = NiceLinearAxis(0, std::max(end, 1.0), 10);
  const Scale x{lin.lo_ns, lin.hi_ns, frame.x, frame.right(), false};
  out += XAxis(frame, x, lin.ticks, "time", kWideWidth);
  const double stack_top = frame.y + 4;
  const double total_top = stack_top + kBar + 8;
  out += Text(frame.x - 8, stack_top + kBar / 2 + 4, "sum of stage p50s", "end", "axis-title");
  out += Text(frame.x - 8, total_top + kBar / 2 + 4, "total p50", "end", "axis-title");
  for (const StackSegment& seg : stack.segments) {
    const double x0 = x(seg.offset_ns);
    const double x1 = x(seg.offset_ns + seg.width_ns);
    const auto it = colours.find(seg.stage);
    absl::StrAppend(&out, "<rect x=\"", F(x0), "\" y=\"", F(stack_top), "\" width=\"",
                    F(std::max(0.0, x1 - x0)), "\" height=\"", F(kBar), "\" fill=\"",
                    it == colours.end() ? "#999" : it->second,
                    "\" stroke=\"#fff\" stroke-width=\"1\"><title>",
                    EscapeHtml(absl::StrCat(seg.stage, ": p50 ", FormatDurationNs(seg.width_ns))),
                    "</title></rect>\n");
    const std::string label = FormatDurationNs(seg.width_ns);
    if (LabelWidthPx(label, 12) + 8 < x1 - x0) {
      out += Text((x0 + x1) / 2, stack_top + kBar / 2 + 4, EscapeHtml(label), "middle",
                  "axis-title", " style=\"fill:#fff;font-weight:600\"");
    }
  }
  const double sum_end = x(stack.sum_ns);
  out += Text(sum_end + 6, stack_top + kBar / 2 + 4, EscapeHtml(FormatDurationNs(stack.sum_ns)),
              "start", "axis-title");
  if (stack.total_p50_ns.has_value()) {
    const double xt = x(std::max(0.0, *stack.total_p50_ns));
    const auto it = colours.find(std::string(store::kTotalStage));
    absl::StrAppend(&out, "<rect x=\"", F(frame.x), "\" y=\"", F(total_top), "\" width=\"",
                    F(std::max(1.0, xt - frame.x)), "\" height=\"", F(kBar), "\" fill=\"",
                    it == colours.end() ? "#5f6368" : it->second, "\"/>\n");
    const std::string label = FormatDurationNs(*stack.total_p50_ns);
    const bool inside = xt - frame.x > LabelWidthPx(label, 12) + 12;
    out += Text(inside ? xt - 6 : xt + 6, total_top + kBar / 2 + 4, EscapeHtml(label),
                inside ? "end" : "start", "axis-title",
                inside ? " style=\"fill:#fff;font-weight:600\"" : "");
  }
  return out + "</svg>\n";
}

// One row per stage: count, percentiles, flag counts, confidence.
std::string BreakdownTable(const ReportModel& model,
                           const std::map<std::string, std::string>& colours) {
  std::string out;
  out +=
      "<table><tr><th>stage</th><th>count</th><th>min</th><th>p50</th><th>p90</th>"
      "<th>p99</th><th>p99.9</th><th>max</th><th>mean</th><th>flagged</th>"
      "<th>cross-core</th><th style=\"text-align:left\">confidence</th></tr>\n";
  for (size_t i = 0; i < model.summary.stages.size(); ++i) {
    const SummaryStage& s = model.summary.stages[i];
    const std::string& slug = model.stages[i].slug;
    const auto it = colours.find(s.stage);
    const auto flag_cell = [](int64_t n) {
      return absl::StrCat(n > 0 ? "<td class=\"num flagged\">" : "<td class=\"num\">", n, "</td>");
    };
    absl::StrAppend(&out, s.stage == store::kTotalStage ? "<tr class=\"total\">" : "<tr>",
                    "<td class=\"stage\">", Swatch(it == colours.end() ? "#999" : it->second),
                    "<a href=\"#stage-", slug, "\">", EscapeHtml(s.stage),
                    "</a></td><td class=\"num\">", s.stats.count, "</td>");
    absl::StrAppend(&out, "<td class=\"num\">", EscapeHtml(FormatDurationNs(s.stats.min_ns)),
                    "</td><td class=\"num\">", EscapeHtml(FormatDurationNs(s.stats.p50_ns)));
    if (s.cross_core > 0 && s.uncertainty_ns > 0) {
      absl::StrAppend(&out, absl::StrFormat(" &plusmn;%.0f&nbsp;ns", s.uncertainty_ns));
    }
    out += "</td>";
    for (const auto& v : {s.stats.p90_ns, s.stats.p99_ns, s.stats.p999_ns, s.stats.max_ns,
                          s.stats.mean_ns}) {
      absl::StrAppend(&out, "<td class=\"num\">", EscapeHtml(FormatDurationNs(v)), "</td>");
    }
    // Flagged (flag_words.h) and the one marking flag most hops carry; the
    // Flagged samples section has each flag's count.
    absl::StrAppend(&out, flag_cell(FlaggedSamples(s)), "<td class=\"num\">", s.cross_core,
                    "</td>");
    absl::StrAppend(&out, s.confidence.empty() ? "<td class=\"confidence\">ok"
                                               : "<td class=\"confidence flagged\">",
                    EscapeHtml(absl::StrJoin(s.confidence, "; ")), "</td></tr>\n");
  }
  out += "</table>\n";
  if (model.summary.stages.empty()) out += "<p class=\"note\">No samples in this run.</p>\n";
  if (const std::string clocks = OtherClocksLine(model.summary); !clocks.empty()) {
    absl::StrAppend(&out, "<p class=\"note\">", EscapeHtml(clocks), "</p>\n");
  }

  return out;
}

// The stage medians stacked against the total's, with the means beside them
// (they add up where medians do not).
std::string MedianStackSection(const ReportModel& model,
                               const std::map<std::string, std::string>& colours) {
  std::string out;
  out += "<h3 style=\"margin-top:18px\">Median time per stage, stacked</h3>\n";
  out +=
      "<p class=\"note\">Each pipeline stage's median laid end to end, above the total's own "
      "median. Medians do not add: the total's median need not equal the sum of the stages' "
      "medians, and a wide gap between the two bars points to long tails spread over "
      "different orders.</p>\n";
  out += StackSvg(model, colours);
  // Means beside the medians: they add up where medians do not.
  std::map<std::string, std::optional<double>> mean_of;
  for (const SummaryStage& st : model.summary.stages) mean_of[st.stage] = st.stats.mean_ns;
  double mean_sum = 0;
  out += "<div class=\"legend\">\n";
  for (const StackSegment& seg : model.stack.segments) {
    const auto it = colours.find(seg.stage);
    const double share = model.stack.sum_ns > 0 ? 100.0 * seg.width_ns / model.stack.sum_ns : 0;
    const std::optional<double> mean = mean_of[seg.stage];
    mean_sum += std::max(0.0, mean.value_or(0));
    absl::StrAppend(&out, "<span>", Swatch(it == colours.end() ? "#999" : it->second),
                    EscapeHtml(seg.stage), " <span class=\"num\">p50 ",
                    EscapeHtml(FormatDurationNs(seg.width_ns)), absl::StrFormat(" (%.0f%%)", share),
                    ", mean ", EscapeHtml(FormatDurationNs(mean)), "</span></span>\n");
  }
  out += "</div>\n";
  if (!model.stack.segments.empty()) {
    absl::StrAppend(&out, "<p class=\"note\" id=\"median-mean\">Sum of the stage medians ",
                    EscapeHtml(FormatDurationNs(model.stack.sum_ns)), " against the total's median ",
                    EscapeHtml(FormatDurationNs(model.stack.total_p50_ns)),
                    "; sum of the stage means ", EscapeHtml(FormatDurationNs(mean_sum)),
                    " against the total's mean ",
                    EscapeHtml(FormatDurationNs(mean_of[std::string(store::kTotalStage)])), ".</p>\n");
    out += kWhyMediansDoNotAdd;
  }
  if (!model.stack.left_out.empty()) {
    std::vector<std::string> names;
    for (const std::string& n : model.stack.left_out) names.push_back(EscapeHtml(n));
    absl::StrAppend(&out, "<p class=\"note\">Not stacked (spans inside a stage, or no median): ",
                    absl::StrJoin(names, ", "), ".</p>\n");
  }
  return out;
}

std::string Breakdown(const ReportModel& model, const std::map<std::string, std::string>& colours) {
  std::string out = "<section id=\"breakdown\">\n<h2>Per-stage breakdown";
  if (model.cross_host) {
    // Beside the stitched breakdown: say whose run this one is.
    absl::StrAppend(&out, " of run ", model.summary.run.run_id, " on host ",
                    EscapeHtml(model.summary.run.host));
  }
  out += "</h2>\n";
  out += BreakdownTable(model, colours);
  out += MedianStackSection(model, colours);
  out += "</section>\n";
  return out;
}

std::string StageSections(const ReportModel& model) {
  std::string out = "<section id=\"stages\">\n<h2>Latency distribution per stage</h2>\n";
  out +=
      "<p class=\"note\">Left: how many samples fell at each latency (both axes log scale). "
      "Right: latency at each percentile, HdrHistogram style; the x axis stretches the tail "
      "so that p99, p99.9 and p99.99 can be read.</p>\n";
  for (size_t i = 0; i < model.stages.size(); ++i) {
    const StagePlots& p = model.stages[i];
    const SummaryStage& s = model.summary.stages[i];
    absl::StrAppend(
        &out, "<div class=\"stage-block\" id=\"stage-", p.slug, "\">\n<h3>", Swatch(p.colour),
        EscapeHtml(p.stage), "</h3>\n<div class=\"note\">",
        EscapeHtml(absl::StrCat(
            p.histogram.total, " samples plotted; p50 ", FormatDurationNs(s.stats.p50_ns), ", p99 ",
            FormatDurationNs(s.stats.p99_ns), ", p99.9 ", FormatDurationNs(s.stats.p999_ns),
            ", max ", FormatDurationNs(s.stats.max_ns))));
    if (p.excluded_flagged > 0) {
      absl::StrAppend(&out, "; ", p.excluded_flagged, " flagged samples kept out");
    }
    if (p.histogram.nonpositive > 0) {
      absl::StrAppend(&out, "; <b>", p.histogram.nonpositive,
                      " samples at or below 0 ns are not in the histogram</b> (a log axis has no "
                      "place for them)");
    }
    out += "</div>\n<div class=\"plots\">\n";
    out += HistogramSvg(p);
    out += PercentileSvg(p);
    out += "</div>\n</div>\n";
  }
  out += "</section>\n";
  return out;
}

std::string WaterfallSvg(const OrderWaterfall& w, int rank,
                         const std::map<std::string, std::string>& colours) {
  constexpr double kRow = 24;
  constexpr double kFont = 12;
  double name_px = 80;
  for (const WaterfallBar& b : w.bars) name_px = std::max(name_px, LabelWidthPx(b.stage, kFont));
  name_px = std::min(name_px, 300.0);
  const double value_px = 230;
  const size_t rows = w.bars.size() + (w.total_ns.has_value() ? 1 : 0);
  const double height = 10 + rows * kRow + 50;
  std::string out = SvgOpen(absl::StrCat("slowest-", rank), kWideWidth, height,
                            absl::StrCat("waterfall of order ", static_cast<uint64_t>(w.order_id)));
  const Frame frame{name_px + 20, 6, kWideWidth - name_px - 20 - value_px - 10, rows * kRow + 4};
  const LinearAxis lin = NiceLinearAxis(0, w.span_ns, 10);
  const Scale x{lin.lo_ns, lin.hi_ns, frame.x, frame.right(), false};
  out += XAxis(frame, x, lin.ticks, "time since the order's first stamp", kWideWidth);
  const auto row = [&](size_t i, const std::string& stage, double offset, double latency,
                       uint32_t flags, bool linked, const std::string& colour) {
    const double top = frame.y + 4 + static_cast<double>(i) * kRow;
    // The stage name, cut to the column (the full name is the tooltip).
    std::string name = stage;
    while (name.size() > 4 && LabelWidthPx(name, kFont) > name_px) name.resize(name.size() - 4);
    if (name != stage) name += "…";
    absl::StrAppend(&out, "<text x=\"", F(frame.x - 8), "\" y=\"", F(top + 15),
                    "\" text-anchor=\"end\" class=\"axis-title\"><title>", EscapeHtml(stage),
                    "</title>", EscapeHtml(name), "</text>\n");
    const double x0 = x(offset);
    if (latency < 0) {
      // Negative: not a duration; a red diamond where the stage began.
      absl::StrAppend(&out, "<path d=\"M", F(x0), " ", F(top + 3), " l6 8 l-6 8 l-6 -8 z\" ",
                      "fill=\"#cf222e\"/>\n");
    } else {
      const double x1 = x(offset + latency);
      absl::StrAppend(&out, "<rect x=\"", F(x0), "\" y=\"", F(top + 3), "\" width=\"",
                      F(std::max(2.0, x1 - x0)), "\" height=\"16\" rx=\"2\" fill=\"", colour,
                      linked ? "\" fill-opacity=\"0.6" : "", "\"><title>",
                      EscapeHtml(absl::StrCat(stage, ": ", FormatDurationNs(latency),
                                              " starting at +", FormatDurationNs(offset))),
                      "</title></rect>\n");
    }
    std::string value = FormatDurationNs(latency);
    if (flags != 0) absl::StrAppend(&value, "  ", FlagWords(flags));
    if (linked && w.parent_order_id.has_value()) {
      absl::StrAppend(&value, "  (order ", static_cast<uint64_t>(*w.parent_order_id), ")");
    }
    out += Text(frame.right() + 10, top + 15, EscapeHtml(value), "start", "tick",
                flags != 0 ? " style=\"fill:#9a6700;font-weight:600\"" : "");
  };
  for (size_t i = 0; i < w.bars.size(); ++i) {
    const WaterfallBar& b = w.bars[i];
    const auto it = colours.find(b.stage);
    row(i, b.stage, b.offset_ns, b.latency_ns, b.flags, b.linked,
        it == colours.end() ? "#999" : it->second);
  }
  if (w.total_ns.has_value()) {
    const auto it = colours.find(std::string(store::kTotalStage));
    row(w.bars.size(), std::string(store::kTotalStage), w.total_offset_ns, *w.total_ns, 0, false,
        it == colours.end() ? "#5f6368" : it->second);
  }
  return out + "</svg>\n";
}

std::string Slowest(const ReportModel& model, const std::map<std::string, std::string>& colours) {
  std::string out = "<section id=\"slowest\">\n";
  absl::StrAppend(&out, "<h2>The ", model.slowest.size(), " slowest orders by ",
                  EscapeHtml(model.slowest_stage), "</h2>\n");
  out +=
      "<p class=\"note\">One bar per stage on the order's own time axis, from its first "
      "stamp; rows in stamp order. A linked order's total starts at the order it is linked "
      "to, so that order's stages are drawn too (marked with its id). Every sample counts "
      "here, flagged or not.</p>\n";
  if (model.slowest.empty()) out += "<p class=\"note\">No orders with a total in this run.</p>\n";
  int rank = 0;
  for (const OrderWaterfall& w : model.slowest) {
    ++rank;
    std::string head = absl::StrCat("#", rank, "  order ", static_cast<uint64_t>(w.order_id), ": ",
                                    model.slowest_stage, " ", FormatDurationNs(w.ranked_ns), " at ",
                                    FormatUtcNs(w.first_utc_ns));
    if (w.parent_order_id.has_value()) {
      absl::StrAppend(&head, ", linked to ", static_cast<uint64_t>(*w.parent_order_id));
    }
    absl::StrAppend(&head, w.complete ? ", complete" : ", incomplete");
    if (!w.missing.empty()) absl::StrAppend(&head, " (missing ", w.missing, ")");
    if (w.ranked_flags != 0) absl::StrAppend(&head, ", flagged ", FlagWords(w.ranked_flags));
    absl::StrAppend(&out, "<div class=\"order\"><h3>", EscapeHtml(head), "</h3>\n");
    out += WaterfallSvg(w, rank, colours);
    out += "</div>\n";
  }
  out += "</section>\n";
  return out;
}

std::string Flags(const ReportModel& model) {
  std::string out = "<section id=\"flags\">\n<h2>Flagged samples</h2>\n";
  absl::StrAppend(
      &out, "<p class=\"note\" id=\"flag-rule\">A sample is <b>flagged</b> when it is ",
      EscapeHtml(FlaggingNames()), ": flagged samples are ",
      model.summary.include_flagged ? "<b>included in</b>" : "<b>kept out of</b>",
      " the percentiles and plots above (as the collector counted them for this run). ",
      EscapeHtml(MarkingNames()),
      " only <b>mark</b> a sample: it stays in the percentiles. The waterfalls show every "
      "sample.</p>\n");
  out +=
      "<table style=\"width:auto;min-width:60%\"><tr><th>stage</th><th>flagged</th>"
      "<th>migrated</th><th>negative</th><th>out of order</th><th>marked: cross-core</th>"
      "<th>skew</th><th>late</th></tr>\n";
  int64_t flagged = 0;
  for (size_t i = 0; i < model.summary.stages.size(); ++i) {
    const SummaryStage& s = model.summary.stages[i];
    const auto cell = [](int64_t n) {
      return absl::StrCat(n > 0 ? "<td class=\"num flagged\">" : "<td class=\"num\">", n, "</td>");
    };
    const auto plain = [](int64_t n) { return absl::StrCat("<td class=\"num\">", n, "</td>"); };
    flagged += FlaggedSamples(s);
    absl::StrAppend(&out, "<tr><td class=\"stage\">", Swatch(model.stages[i].colour),
                    EscapeHtml(s.stage), "</td>", cell(FlaggedSamples(s)), cell(s.migrated),
                    cell(s.negative), cell(s.out_of_order), plain(s.cross_core), plain(s.skew),
                    plain(s.late), "</tr>\n");
  }
  out +=
      "</table>\n<dl class=\"facts\">\n"
      "<dt>out of order</dt><dd>the later stage was stamped first on one thread or core: "
      "the declared pipeline's order, or the code's, is not the order things happened.</dd>\n"
      "<dt>skew</dt><dd>cross-core and below zero within the cores' measured offsets: kept, "
      "with that uncertainty.</dd>\n"
      "<dt>late</dt><dd>arrived after its order was emitted: a real difference, kept.</dd>\n"
      "<dt>migrated</dt><dd>the stage's two ends were read on different cores by the same "
      "thread: it moved between cores mid-stage, so the time includes the move.</dd>\n"
      "<dt>negative</dt><dd>the end came out before the start: two cores' clocks (TSCs) "
      "disagree by more than the stage took, so the value is not a real latency.</dd>\n"
      "<dt>cross-core</dt><dd>the two ends were stamped on different cores (usual between "
      "processes): the value is right only as far as the cores' TSCs agree.</dd>\n</dl>\n";
  if (flagged == 0) out += "<p class=\"note\">No sample of this run is flagged.</p>\n";
  out += "</section>\n";
  return out;
}

// ---- Latency over time (model.time) -----------------------------------------

// Time ticks over [lo_ns, hi_ns] (UTC ns), labelled with the UTC time of day.
std::vector<AxisTick> TimeTicks(int64_t lo_ns, int64_t hi_ns) {
  static constexpr double kStepsS[] = {0.1,  0.2,  0.5,  1,     2,     5,     10,    15,
                                       30,   60,   120,  300,   600,   900,   1800,  3600,
                                       7200, 10800, 21600, 43200, 86400, 172800, 604800};
  const double span_s = static_cast<double>(hi_ns - lo_ns) / 1e9;
  double step_s = kStepsS[std::size(kStepsS) - 1];
  for (const double s : kStepsS) {
    if (span_s / s <= 8) {
      step_s = s;
      break;
    }
  }
  const auto step_ns = static_cast<int64_t>(step_s * 1e9);
  std::vector<AxisTick> ticks;
  for (int64_t t = (lo_ns + step_ns - 1) / step_ns * step_ns; t <= hi_ns; t += step_ns) {
    std::string label =
        absl::FormatTime("%H:%M:%S", absl::FromUnixNanos(t), absl::UTCTimeZone());
    if (step_s < 1) absl::StrAppend(&label, absl::StrFormat(".%d", (t / 100'000'000) % 10));
    ticks.push_back({static_cast<double>(t - lo_ns), label, 0});
  }
  return ticks;
}

// The x scale of every time plot: the buckets' extent, 0 at the first.
struct TimeFrame {
  Frame frame;
  Scale x;
  int64_t lo_ns = 0;
  int64_t hi_ns = 0;
  double Centre(int64_t start_utc_ns, int64_t bucket_ns) const {
    return x(static_cast<double>(start_utc_ns - lo_ns) + static_cast<double>(bucket_ns) / 2);
  }
};
TimeFrame MakeTimeFrame(const TimeAxis& axis, const Frame& frame) {
  TimeFrame t;
  t.frame = frame;
  t.lo_ns = axis.buckets.front().start_utc_ns;
  t.hi_ns = axis.buckets.back().start_utc_ns + axis.bucket_ns;
  t.x = {0, static_cast<double>(t.hi_ns - t.lo_ns), frame.x, frame.right(), false};
  return t;
}

std::string BucketTitle(const TimeAxis& axis, const TimeBucket& b) {
  std::string title = absl::StrCat(FormatUtcNs(b.start_utc_ns), " (", FormatTickNs(
      static_cast<double>(axis.bucket_ns)), "): ", b.orders, " orders");
  if (b.ranked_max_ns.has_value()) {
    absl::StrAppend(&title, ", ", axis.ranked_stage, " max ", FormatDurationNs(*b.ranked_max_ns));
  }
  if (b.flagged > 0) {
    absl::StrAppend(&title, ", ", b.flagged, " flagged samples (kept out of the percentiles)");
  }
  if (b.sampled()) {
    absl::StrAppend(&title, ", detail sampled (", b.orders_kept, " of ", b.orders, " kept)");
  }
  return title + "; click for its slowest orders";
}

// A column per bucket over the whole plot, linking to its slowest orders, and
// a marker above the plot for buckets with flagged samples or sampled detail.
std::string BucketLinksAndMarkers(const TimeAxis& axis, const TimeFrame& t) {
  std::string out;
  for (const TimeBucket& b : axis.buckets) {
    const double x0 = t.x(static_cast<double>(b.start_utc_ns - t.lo_ns));
    const double x1 = t.x(static_cast<double>(b.start_utc_ns - t.lo_ns + axis.bucket_ns));
    absl::StrAppend(&out, "<a href=\"#", b.anchor, "\"><rect class=\"bucket\" x=\"", F(x0),
                    "\" y=\"", F(t.frame.y), "\" width=\"", F(std::max(1.0, x1 - x0)),
                    "\" height=\"", F(t.frame.h), "\" fill=\"transparent\"><title>",
                    EscapeHtml(BucketTitle(axis, b)), "</title></rect></a>\n");
    const double cx = (x0 + x1) / 2;
    double y = t.frame.y - 3;
    const auto marker = [&](const char* cls, const char* colour, const std::string& what) {
      absl::StrAppend(&out, "<a href=\"#", b.anchor, "\"><path class=\"marker ", cls,
                      "\" d=\"M", F(cx - 4), " ", F(y - 7), " L", F(cx + 4), " ", F(y - 7),
                      " L", F(cx), " ", F(y), " Z\" fill=\"", colour, "\"><title>",
                      EscapeHtml(what), "</title></path></a>\n");
      y -= 9;
    };
    if (b.flagged > 0) {
      marker("flagged", "#d4a72c",
             absl::StrCat(b.flagged, " flagged samples (kept out of the percentiles)"));
    }
    if (b.sampled()) {
      marker("sampled", "#0969da",
             absl::StrCat("detail sampled: ", b.orders_kept, " of ", b.orders, " orders kept"));
    }
  }
  return out;
}

// The stacked band of the pipeline stages' medians (`mean` false) or means
// over time, with the total's own median or mean as a dashed line.
std::string TimeBandSvg(const ReportModel& model, bool mean) {
  const TimeAxis& axis = model.time;
  const std::string id = mean ? "time-mean-band" : "time-median-band";
  constexpr double kHeight = 260;
  std::string out = SvgOpen(id, kWideWidth, kHeight,
                            mean ? "stage means stacked over time, and the total's mean"
                                 : "stage medians stacked over time, and the total's median");
  const TimeFrame t = MakeTimeFrame(axis, Frame{72, 34, kWideWidth - 72 - 24, kHeight - 34 - 52});
  const auto value = [&](const TimePoint& p) { return mean ? p.mean_ns : p.p50_ns; };
  std::map<std::string, std::map<int64_t, double>> by_stage;  // stage -> start -> value
  for (const StageOverTime& s : axis.stages) {
    for (const TimePoint& p : s.points) {
      if (value(p).has_value()) by_stage[s.stage][p.start_utc_ns] = std::max(0.0, *value(p));
    }
  }
  double top = 1;
  std::map<int64_t, double> sum;
  for (const std::string& stage : axis.stacked) {
    for (const auto& [start, v] : by_stage[stage]) top = std::max(top, sum[start] += v);
  }
  for (const auto& [start, v] : by_stage[std::string(store::kTotalStage)]) top = std::max(top, v);
  const LinearAxis lin = NiceLinearAxis(0, top, 5);
  const Scale y{lin.lo_ns, lin.hi_ns, t.frame.bottom(), t.frame.y, false};
  out += YAxis(t.frame, y, lin.ticks, mean ? "mean latency" : "median latency");
  out += XAxis(t.frame, t.x, TimeTicks(t.lo_ns, t.hi_ns), "time (UTC)", kWideWidth);
  const std::map<std::string, std::string> colours = ColourOf(model);
  std::map<int64_t, double> base;
  for (const std::string& stage : axis.stacked) {
    std::string upper;
    std::string lower;
    for (const TimeBucket& b : axis.buckets) {
      const double v = by_stage[stage].count(b.start_utc_ns) ? by_stage[stage][b.start_utc_ns] : 0;
      const double x = t.Centre(b.start_utc_ns, axis.bucket_ns);
      const double y0 = base[b.start_utc_ns];
      absl::StrAppend(&upper, F(x), ",", F(y(y0 + v)), " ");
      lower = absl::StrCat(F(x), ",", F(y(y0)), " ", lower);
      base[b.start_utc_ns] = y0 + v;
    }
    const auto it = colours.find(stage);
    absl::StrAppend(&out, "<polygon class=\"band\" fill=\"",
                    it == colours.end() ? "#999" : it->second,
                    "\" fill-opacity=\"0.85\" stroke=\"#fff\" stroke-width=\"0.5\" points=\"",
                    upper, lower, "\"><title>", EscapeHtml(stage), "</title></polygon>\n");
  }
  const auto total = by_stage.find(std::string(store::kTotalStage));
  if (total != by_stage.end() && !total->second.empty()) {
    std::string points;
    for (const auto& [start, v] : total->second) {
      absl::StrAppend(&points, F(t.Centre(start, axis.bucket_ns)), ",", F(y(v)), " ");
    }
    absl::StrAppend(&out, "<polyline class=\"line total\" fill=\"none\" stroke=\"#1f2328\" "
                          "stroke-width=\"2\" stroke-dasharray=\"6 3\" points=\"",
                    points, "\"><title>", mean ? "total mean" : "total median",
                    "</title></polyline>\n");
  }
  out += BucketLinksAndMarkers(axis, t);
  return out + "</svg>\n";
}

// One stage over time: its p50, p99 and max per bucket; a max point links to
// the bucket's slowest orders.
std::string StageTimeSvg(const TimeAxis& axis, const StageOverTime& stage) {
  const std::string id = absl::StrCat("time-", stage.slug);
  std::string out = SvgOpen(id, kPlotWidth, kPlotHeight,
                            absl::StrCat("p50, p99 and max of ", stage.stage, " over time"));
  const TimeFrame t =
      MakeTimeFrame(axis, Frame{72, 30, kPlotWidth - 72 - 22, kPlotHeight - 30 - 52});
  double lo = 0;
  double hi = 0;
  bool any = false;
  for (const TimePoint& p : stage.points) {
    for (const auto& v : {p.p50_ns, p.p99_ns, p.max_ns}) {
      if (!v.has_value()) continue;
      lo = any ? std::min(lo, *v) : *v;
      hi = any ? std::max(hi, *v) : *v;
      any = true;
    }
  }
  if (!any) {
    out += Text(t.frame.x + t.frame.w / 2, t.frame.y + t.frame.h / 2, "no percentiles to draw",
                "middle", "axis-title");
    return out + "</svg>\n";
  }
  if (lo > 0 && hi / lo > 20) std::tie(lo, hi) = SnapLogRange(lo, hi);
  if (hi <= lo) hi = lo + 1;
  const LatencyAxis y_axis = MakeLatencyAxis(lo, hi, t.frame.bottom(), t.frame.y, 20, 6);
  out += YAxis(t.frame, y_axis.scale, y_axis.ticks,
               y_axis.scale.log ? "latency (log scale)" : "latency");
  out += XAxis(t.frame, t.x, TimeTicks(t.lo_ns, t.hi_ns), "time (UTC)", kPlotWidth);
  out += BucketLinksAndMarkers(axis, t);
  const auto line = [&](const char* cls, std::optional<double> TimePoint::*field,
                        const char* colour, const char* dash, double width) {
    std::string points;
    for (const TimePoint& p : stage.points) {
      if (!(p.*field).has_value()) continue;
      absl::StrAppend(&points, F(t.Centre(p.start_utc_ns, axis.bucket_ns)), ",",
                      F(y_axis.scale(*(p.*field))), " ");
    }
    absl::StrAppend(&out, "<polyline class=\"line ", cls, "\" fill=\"none\" stroke=\"", colour,
                    "\" stroke-width=\"", F(width), "\" stroke-linejoin=\"round\"", dash,
                    " points=\"", points, "\"/>\n");
  };
  line("p50", &TimePoint::p50_ns, stage.colour.c_str(), "", 2);
  line("p99", &TimePoint::p99_ns, stage.colour.c_str(), " stroke-dasharray=\"5 3\"", 1.5);
  line("max", &TimePoint::max_ns, "#cf222e", "", 1);
  std::map<int64_t, const TimeBucket*> bucket_at;
  for (const TimeBucket& b : axis.buckets) bucket_at[b.start_utc_ns] = &b;
  for (const TimePoint& p : stage.points) {
    if (!p.max_ns.has_value()) continue;
    const auto b = bucket_at.find(p.start_utc_ns);
    if (b == bucket_at.end()) continue;
    absl::StrAppend(&out, "<a href=\"#", b->second->anchor, "\"><circle class=\"spike\" cx=\"",
                    F(t.Centre(p.start_utc_ns, axis.bucket_ns)), "\" cy=\"",
                    F(y_axis.scale(*p.max_ns)), "\" r=\"3\" fill=\"#cf222e\"><title>",
                    EscapeHtml(absl::StrCat(FormatUtcNs(p.start_utc_ns), ": max ",
                                            FormatDurationNs(*p.max_ns), ", p99 ",
                                            FormatDurationNs(p.p99_ns), ", p50 ",
                                            FormatDurationNs(p.p50_ns), " (", p.count,
                                            " samples); click for the slowest orders")),
                    "</title></circle></a>\n");
  }
  return out + "</svg>\n";
}

std::string OverTime(const ReportModel& model, const std::map<std::string, std::string>& colours) {
  const TimeAxis& axis = model.time;
  std::string out = "<section id=\"over-time\">\n<h2>Latency over time</h2>\n";
  if (axis.buckets.empty()) {
    out += "<p class=\"note\">No interval statistics in this run (a store written before "
           "schema 2, or a run without samples).</p>\n</section>\n";
    return out;
  }
  absl::StrAppend(
      &out, "<p class=\"note\">From the interval statistics (every order, whatever detail the "
            "store kept), one point per ",
      EscapeHtml(FormatTickNs(static_cast<double>(axis.bucket_ns))), " bucket (",
      axis.buckets.size(),
      " buckets). Click a bucket, a red max point or a marker for the slowest orders of that "
      "bucket. Markers above a plot: <span style=\"color:#9a6700\">&#9660;</span> flagged "
      "samples in the bucket (those the Flagged samples section says are kept out of the "
      "percentiles; cross-core alone does not flag), <span style=\"color:#0969da\">&#9660;</span> detail sampled (not "
      "every order's stamps kept). Dropped records are counted per run, not per interval: "
      "the header's loss counters say whether any were lost.</p>\n");
  out += "<h3>Stage medians, stacked, against the total's median</h3>\n";
  out += TimeBandSvg(model, /*mean=*/false);
  out += "<h3 style=\"margin-top:14px\">Stage means, stacked, against the total's mean</h3>\n";
  out += TimeBandSvg(model, /*mean=*/true);
  out += "<div class=\"legend\">\n";
  for (const std::string& stage : axis.stacked) {
    const auto it = colours.find(stage);
    absl::StrAppend(&out, "<span>", Swatch(it == colours.end() ? "#999" : it->second),
                    EscapeHtml(stage), "</span>\n");
  }
  out += "<span>- - - total</span>\n</div>\n";
  out += kWhyMediansDoNotAdd;
  out += "<h3 style=\"margin-top:14px\">Per stage: p50 (solid), p99 (dashed), max (red)</h3>\n";
  out += "<div class=\"plots\">\n";
  for (const StageOverTime& s : axis.stages) {
    absl::StrAppend(&out, "<div><div class=\"note\">", Swatch(s.colour), EscapeHtml(s.stage),
                    "</div>", StageTimeSvg(axis, s), "</div>\n");
  }
  out += "</div>\n";

  // The slowest orders of every bucket, where the links above lead.
  absl::StrAppend(&out, "<h3 id=\"interval-slowest\" style=\"margin-top:14px\">Slowest orders "
                        "of each bucket (by ",
                  EscapeHtml(axis.ranked_stage), ")</h3>\n");
  out += "<table><tr><th>bucket (UTC)</th><th>orders</th><th>max</th><th>flagged</th>"
         "<th>detail</th><th>slowest orders (id: latency)</th></tr>\n";
  for (const TimeBucket& b : axis.buckets) {
    std::vector<std::string> orders;
    for (const store::RankedOrder& r : b.slowest) {
      orders.push_back(absl::StrCat("<span class=\"mono\">", EscapeHtml(FormatOrderId(r.order_id)),
                                    "</span>: ", EscapeHtml(FormatDurationNs(r.latency_ns))));
    }
    absl::StrAppend(
        &out, "<tr id=\"", b.anchor, "\"><td>", EscapeHtml(FormatUtcNs(b.start_utc_ns)),
        "</td><td class=\"num\">", b.orders, "</td><td class=\"num\">",
        EscapeHtml(FormatDurationNs(b.ranked_max_ns)), "</td>",
        b.flagged > 0 ? "<td class=\"num flagged\">" : "<td class=\"num\">", b.flagged,
        "</td><td>",
        b.sampled() ? absl::StrCat("sampled (", b.orders_kept, " of ", b.orders, ")") : "all",
        "</td><td style=\"text-align:left;white-space:normal\">",
        orders.empty() ? std::string("(no detail kept)") : absl::StrJoin(orders, ", "),
        "</td></tr>\n");
  }
  out += "</table>\n<p class=\"note\">An id is what <code>ticktrace-view order ID</code> takes "
         "for the order's full timeline.</p>\n</section>\n";
  return out;
}

}  // namespace

std::string RenderReportHtml(const ReportModel& model) {
  const std::map<std::string, std::string> colours = ColourOf(model);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // The page needs nothing from outside: forbid it, scripts included.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  absl::StrAppend(&out, "<title>",
                  EscapeHtml(absl::StrCat("ticktrace report: run ", model.summary.run.run_id,
                                          " on ", model.summary.run.host)),
                  "</title>\n<style>", kCss, "</style>\n</head>\n<body>\n<main>\n");
  out += RunHeader(model);
  out += Breakdown(model, colours);
  if (model.cross_host) out += RenderCrossHostBreakdownHtml(*model.cross_host);
  out += OverTime(model, colours);
  out += StageSections(model);
  out += Slowest(model, colours);
  if (model.cross_host) out += RenderCrossHostSlowestHtml(*model.cross_host);
  out += Flags(model);
  absl::StrAppend(&out, "<footer>Written by ticktrace-view report from ",
                  EscapeHtml(model.store_path),
                  ". Latencies are TSC differences converted with the run's calibration; "
                  "see docs/viewer.md.</footer>\n</main>\n</body>\n</html>\n");
  return out;
}

}  // namespace ticktrace::view
