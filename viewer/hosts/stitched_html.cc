// The report's cross-host sections (stitched_views.h; report_html.cc places
// them after the run's own breakdown and after its slowest orders). Tables
// and inline SVG only, like the rest of the page (no script).

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "viewer/format/format_units.h"
#include "viewer/hosts/stitched_views.h"
#include "viewer/html/svg.h"

namespace ticktrace::view {
namespace {

std::string StitchScopeNote(const CrossHostScope& scope) {
  std::string out = absl::StrCat(
      "<p class=\"note\">The orders of run ", scope.reference.run_id, " (host ",
      EscapeHtml(scope.reference.host), ") joined by order id with their instances on hosts ",
      EscapeHtml(absl::StrJoin(scope.hosts, ", ")), " whose first stamp is within ",
      EscapeHtml(FormatDurationNs(static_cast<double>(scope.options.window_ns))));
  if (!scope.options.pipeline.empty()) {
    absl::StrAppend(&out, "; pipeline ", EscapeHtml(absl::StrJoin(scope.options.pipeline, ",")));
  }
  if (!scope.filters.empty()) absl::StrAppend(&out, "; ", EscapeHtml(scope.filters));
  out +=
      ". A stage within a host is that host's TSC difference; a stage across hosts is a UTC "
      "difference, flagged cross_host, with an uncertainty: the sum of the two hosts' clock "
      "error bounds (unknown when either is).</p>\n";
  return out;
}

std::string StitchHostCell(const std::string& from, const std::string& to) {
  return absl::StrCat("<td class=\"hosts\">", EscapeHtml(StageHosts(from, to)), "</td>");
}

// One stitched order's stages end to end, one bar per stage.
std::string StitchWaterfallSvg(const RankedStitchedOrder& r, int rank) {
  constexpr double kLabel = 300, kBarWidth = 460, kRow = 20;
  double span_ns = 0, at = 0;
  for (const StitchedStage& st : r.order.stages) {
    at += st.latency_ns;
    span_ns = std::max(span_ns, at);
  }
  span_ns = std::max(span_ns, 1.0);
  const double height = kRow * static_cast<double>(r.order.stages.size()) + 8;
  std::string out = absl::StrFormat(
      "<svg id=\"cross-host-waterfall-%d\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" role=\"img\" aria-label=\"%s\">\n",
      rank, kLabel + kBarWidth + 120, height,
      EscapeHtml(absl::StrCat("order ", FormatOrderId(r.order.order_id), " across hosts")));
  double offset = 0;
  for (size_t i = 0; i < r.order.stages.size(); ++i) {
    const StitchedStage& st = r.order.stages[i];
    const double y = 4 + kRow * static_cast<double>(i);
    const double x = kLabel + kBarWidth * std::max(0.0, offset) / span_ns;
    const double w = std::max(1.0, kBarWidth * std::max(0.0, st.latency_ns) / span_ns);
    absl::StrAppend(
        &out,
        absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s</text>",
                        kLabel - 8, y + 13,
                        EscapeHtml(absl::StrCat(st.stage, " (", StageHosts(st.from_host, st.to_host),
                                                ")"))),
        absl::StrFormat("<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" "
                        "fill=\"%s\"><title>%s</title></rect>",
                        st.cross_host ? "cross-host" : "same-host", x, y + 2, w,
                        st.cross_host ? "#d1495b" : "#2e86ab",
                        EscapeHtml(absl::StrCat(st.stage, ": ", FormatDurationNs(st.latency_ns),
                                                " ", UncertaintyText(st.cross_host,
                                                                     st.uncertainty_ns)))),
        absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n",
                        std::min(x + w + 6, kLabel + kBarWidth + 6), y + 13,
                        EscapeHtml(FormatDurationNs(st.latency_ns))));
    offset += st.latency_ns;
  }
  return out + "</svg>\n";
}

}  // namespace

std::string RenderCrossHostBreakdownHtml(const CrossHostReport& report) {
  const CrossHostBreakdown& b = report.breakdown;
  std::string out =
      "<section id=\"cross-host-breakdown\">\n<h2>Per-stage breakdown across hosts</h2>\n";
  out += StitchScopeNote(b.scope);
  absl::StrAppend(&out, "<p class=\"note\" id=\"cross-host-orders\">", b.orders,
                  " orders stitched, ", b.orders_across_hosts,
                  " with stamps on more than one host",
                  b.orders_incomplete > 0
                      ? absl::StrCat(", ", b.orders_incomplete, " missing a pipeline stamp")
                      : "",
                  ".</p>\n");
  out +=
      "<table><tr><th>stage</th><th>hosts</th><th>count</th><th>min</th><th>p50</th>"
      "<th>p99</th><th>max</th><th>mean</th><th>cross_host</th><th>uncertainty</th></tr>\n";
  for (const StitchedStageStats& s : b.stages) {
    absl::StrAppend(&out, s.stage == "total" ? "<tr class=\"total\">" : "<tr>",
                    "<td class=\"stage\">", EscapeHtml(s.stage), "</td>",
                    StitchHostCell(s.from_host, s.to_host), "<td class=\"num\">", s.count, "</td>");
    for (double v : {s.min_ns, s.p50_ns, s.p99_ns, s.max_ns, s.mean_ns}) {
      absl::StrAppend(&out, "<td class=\"num\">", EscapeHtml(FormatDurationNs(v)), "</td>");
    }
    absl::StrAppend(&out, s.cross_host ? "<td class=\"flagged\">yes</td>" : "<td>no</td>",
                    "<td class=\"num\">", EscapeHtml(UncertaintyText(s.cross_host, s.uncertainty_ns)),
                    "</td></tr>\n");
  }
  out += "</table>\n";
  if (b.stages.empty()) out += "<p class=\"note\">No stitched stages.</p>\n";
  return out + "</section>\n";
}

std::string RenderCrossHostSlowestHtml(const CrossHostReport& report) {
  const CrossHostSlowest& s = report.slowest;
  std::string out = absl::StrCat("<section id=\"cross-host-slowest\">\n<h2>The ", s.orders.size(),
                                 " slowest orders across hosts by total</h2>\n");
  out +=
      "<p class=\"note\">Each order's stages end to end; each row names the host the stage ran "
      "on (from -&gt; to when it crosses hosts). Red: a cross-host stage.</p>\n";
  int rank = 0;
  for (const RankedStitchedOrder& r : s.orders) {
    ++rank;
    absl::StrAppend(&out, "<h3>#", rank, " order ", EscapeHtml(FormatOrderId(r.order.order_id)),
                    ": total ", EscapeHtml(FormatDurationNs(r.latency_ns)));
    if (r.total && r.total->cross_host) {
      absl::StrAppend(&out, " ", EscapeHtml(UncertaintyText(true, r.total->uncertainty_ns)));
    }
    absl::StrAppend(&out, ", hosts ", EscapeHtml(absl::StrJoin(r.order.hosts, ", ")),
                    r.order.complete ? "" : " (incomplete)", "</h3>\n");
    out += StitchWaterfallSvg(r, rank);
    out +=
        "<table><tr><th>stage</th><th>hosts</th><th>latency</th><th>cross_host</th>"
        "<th>uncertainty</th></tr>\n";
    for (const StitchedStage& st : r.order.stages) {
      absl::StrAppend(&out, "<tr><td class=\"stage\">", EscapeHtml(st.stage), "</td>",
                      StitchHostCell(st.from_host, st.to_host), "<td class=\"num\">",
                      EscapeHtml(FormatDurationNs(st.latency_ns)), "</td>",
                      st.cross_host ? "<td class=\"flagged\">yes</td>" : "<td>no</td>",
                      "<td class=\"num\">",
                      EscapeHtml(UncertaintyText(st.cross_host, st.uncertainty_ns)),
                      "</td></tr>\n");
    }
    out += "</table>\n";
  }
  if (s.orders.empty()) out += "<p class=\"note\">No stitched orders.</p>\n";
  return out + "</section>\n";
}

}  // namespace ticktrace::view
