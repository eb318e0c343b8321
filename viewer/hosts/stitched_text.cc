// Text and JSON of the cross-host views (stitched_views.h). Field names are
// documented in docs/viewer.md ("Several hosts"); order IDs are strings as in
// the single-run JSON (FormatOrderId), latencies ns, an unknown uncertainty
// null.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "viewer/format/text_table.h"
#include "viewer/format/format_units.h"
#include "viewer/hosts/stitched_views.h"

namespace ticktrace::view {
namespace {

using Json = nlohmann::ordered_json;

Json StitchUncertaintyJson(const std::optional<double>& v) {
  return v.has_value() ? Json(*v) : Json(nullptr);
}

Json StitchScopeJson(const CrossHostScope& scope) {
  return {{"store", scope.store_path},
          {"stitched", true},
          {"reference_run", {{"run", scope.reference.run_id}, {"host", scope.reference.host}}},
          {"hosts", scope.hosts},
          {"pipeline", scope.options.pipeline},
          {"window_ns", scope.options.window_ns}};
}

Json StitchStageJson(const StitchedStage& st) {
  return {{"stage", st.stage},
          {"from_host", st.from_host},
          {"to_host", st.to_host},
          {"latency_ns", st.latency_ns},
          {"cross_host", st.cross_host},
          {"uncertainty_ns", st.cross_host ? StitchUncertaintyJson(st.uncertainty_ns) : Json(nullptr)}};
}

// The header line every cross-host view starts with.
std::string StitchHeader(const CrossHostScope& scope) {
  std::string out = absl::StrCat(
      "stitched across hosts ", absl::StrJoin(scope.hosts, ", "), ": the orders of run ",
      scope.reference.run_id, " (host ", scope.reference.host, ") joined by order id within ",
      FormatDurationNs(static_cast<double>(scope.options.window_ns)));
  if (!scope.options.pipeline.empty()) {
    absl::StrAppend(&out, ", pipeline ", absl::StrJoin(scope.options.pipeline, ","));
  }
  if (!scope.filters.empty()) absl::StrAppend(&out, ", ", scope.filters);
  out += "\n";
  if (scope.hosts.size() < 2) {
    absl::StrAppend(&out, "(one host in scope: nothing to stitch, every stage is on ",
                    scope.reference.host, ")\n");
  }
  return out;
}

// One stitched order as a waterfall: stages end to end on the order's axis.
std::string StitchWaterfall(const std::vector<StitchedStage>& stages, int bar_width) {
  double span_ns = 0;
  double at = 0;
  for (const StitchedStage& st : stages) {
    at += st.latency_ns;
    span_ns = std::max(span_ns, at);
  }
  span_ns = std::max(span_ns, 1.0);
  const double per_char_ns = span_ns / bar_width;
  internal::TextTable table({"  stage", "hosts", "latency", "uncertainty",
                             absl::StrCat("0", std::string(bar_width - 1, ' '), " ",
                                          FormatDurationNs(span_ns))});
  table.SetLeftAligned(1);
  table.SetLeftAligned(3);
  table.SetLeftAligned(4);
  double offset_ns = 0;
  for (const StitchedStage& st : stages) {
    std::string bar(bar_width, ' ');
    const int begin = std::clamp(static_cast<int>(std::floor(std::max(0.0, offset_ns) / per_char_ns)),
                                 0, bar_width - 1);
    if (st.latency_ns < 0) {
      bar[begin] = '<';  // a negative difference: drawn as a marker
    } else {
      const int length = std::max(1, static_cast<int>(std::lround(st.latency_ns / per_char_ns)));
      for (int i = begin; i < std::min(bar_width, begin + length); ++i) bar[i] = '#';
    }
    table.AddRow({absl::StrCat("  ", st.stage), StageHosts(st.from_host, st.to_host),
                  FormatDurationNs(st.latency_ns), UncertaintyText(st.cross_host, st.uncertainty_ns),
                  absl::StrCat("|", bar, "|")});
    offset_ns += st.latency_ns;
  }
  return table.Render();
}

}  // namespace

std::string RenderCrossHostBreakdownText(const CrossHostBreakdown& b) {
  std::string out = StitchHeader(b.scope);
  absl::StrAppend(&out, b.orders, " orders, ", b.orders_across_hosts, " with stamps on more than one host");
  if (b.orders_incomplete > 0) {
    absl::StrAppend(&out, ", ", b.orders_incomplete, " missing a --pipeline stamp");
  }
  out += "\ncross-host stages are UTC differences; their uncertainty is the two hosts' clock "
         "error bounds\n\n";
  if (b.stages.empty()) return out + "(no stitched stages)\n";
  internal::TextTable table({"stage", "hosts", "count", "min", "p50", "p99", "max", "mean",
                             "cross_host", "uncertainty"});
  table.SetLeftAligned(1);
  table.SetLeftAligned(9);
  for (const StitchedStageStats& s : b.stages) {
    table.AddRow({s.stage, StageHosts(s.from_host, s.to_host), absl::StrCat(s.count),
                  FormatDurationNs(s.min_ns), FormatDurationNs(s.p50_ns),
                  FormatDurationNs(s.p99_ns), FormatDurationNs(s.max_ns),
                  FormatDurationNs(s.mean_ns), s.cross_host ? "yes" : "no",
                  UncertaintyText(s.cross_host, s.uncertainty_ns)});
  }
  return out + table.Render();
}

std::string RenderCrossHostBreakdownJson(const CrossHostBreakdown& b) {
  Json j = StitchScopeJson(b.scope);
  j["orders"] = b.orders;
  j["orders_across_hosts"] = b.orders_across_hosts;
  j["orders_incomplete"] = b.orders_incomplete;
  Json stages = Json::array();
  for (const StitchedStageStats& s : b.stages) {
    stages.push_back({{"stage", s.stage},
                      {"from_host", s.from_host},
                      {"to_host", s.to_host},
                      {"cross_host", s.cross_host},
                      {"uncertainty_ns",
                       s.cross_host ? StitchUncertaintyJson(s.uncertainty_ns) : Json(nullptr)},
                      {"count", s.count},
                      {"min_ns", s.min_ns},
                      {"p50_ns", s.p50_ns},
                      {"p99_ns", s.p99_ns},
                      {"max_ns", s.max_ns},
                      {"mean_ns", s.mean_ns}});
  }
  j["stages"] = std::move(stages);
  return j.dump(2) + "\n";
}

std::string RenderCrossHostSlowestText(const CrossHostSlowest& s, int bar_width) {
  std::string out = StitchHeader(s.scope);
  absl::StrAppend(&out, "the ", s.orders.size(), " slowest orders by ", s.stage,
                  " (bars: the stages end to end on each order's own axis)\n");
  if (s.orders.empty()) return out + "(no orders)\n";
  int rank = 0;
  for (const RankedStitchedOrder& r : s.orders) {
    absl::StrAppend(&out, "\n#", ++rank, "  order ", FormatOrderId(r.order.order_id), "  ",
                    s.stage, " ", FormatDurationNs(r.latency_ns), "  hosts ",
                    absl::StrJoin(r.order.hosts, ", "));
    if (!r.order.stamps.empty()) {
      absl::StrAppend(&out, "  at ", FormatUtcNs(r.order.stamps.front().stamp.utc_ns));
    }
    if (r.total && r.total->cross_host) {
      absl::StrAppend(&out, "  total ", UncertaintyText(true, r.total->uncertainty_ns));
    }
    absl::StrAppend(&out, r.order.complete ? "" : "  incomplete", "\n");
    out += StitchWaterfall(r.order.stages, bar_width);
  }
  return out;
}

std::string RenderCrossHostSlowestJson(const CrossHostSlowest& s) {
  Json j = StitchScopeJson(s.scope);
  j["stage"] = s.stage;
  Json orders = Json::array();
  for (const RankedStitchedOrder& r : s.orders) {
    Json stages = Json::array();
    for (const StitchedStage& st : r.order.stages) stages.push_back(StitchStageJson(st));
    orders.push_back({{"order_id", FormatOrderId(r.order.order_id)},
                      {"latency_ns", r.latency_ns},
                      {"hosts", r.order.hosts},
                      {"complete", r.order.complete},
                      {"total", r.total ? StitchStageJson(*r.total) : Json(nullptr)},
                      {"stages", std::move(stages)}});
  }
  j["orders"] = std::move(orders);
  return j.dump(2) + "\n";
}

std::string RenderCrossHostOrderText(const CrossHostOrder& o) {
  std::string out = StitchHeader(o.scope);
  absl::StrAppend(&out, "order ", FormatOrderId(o.order.order_id), ": hosts ",
                  absl::StrJoin(o.order.hosts, ", "),
                  o.order.complete ? "" : ", incomplete (a --pipeline stamp is missing)", "\n\n");
  internal::TextTable stamps({"utc", "host", "run", "tag", "kind", "process", "tid", "cpu"});
  for (size_t c = 1; c < 5; ++c) stamps.SetLeftAligned(c);
  for (const HostStamp& hs : o.order.stamps) {
    stamps.AddRow({FormatUtcNs(hs.stamp.utc_ns), hs.host, absl::StrCat(hs.run_id), hs.stamp.tag,
                   hs.stamp.kind, absl::StrCat(hs.stamp.process_id), absl::StrCat(hs.stamp.tid),
                   hs.stamp.cpu ? absl::StrCat(*hs.stamp.cpu) : "-"});
  }
  out += stamps.Render();
  out += "\n";
  out += StitchWaterfall(o.order.stages, 40);
  if (o.total) {
    absl::StrAppend(&out, "  total ", FormatDurationNs(o.total->latency_ns), "  ",
                    StageHosts(o.total->from_host, o.total->to_host),
                    o.total->cross_host
                        ? absl::StrCat("  ", UncertaintyText(true, o.total->uncertainty_ns))
                        : "",
                    "\n");
  }
  return out;
}

std::string RenderCrossHostOrderJson(const CrossHostOrder& o) {
  Json j = StitchScopeJson(o.scope);
  j["order_id"] = FormatOrderId(o.order.order_id);
  j["order_hosts"] = o.order.hosts;
  j["complete"] = o.order.complete;
  Json stamps = Json::array();
  for (const HostStamp& hs : o.order.stamps) {
    stamps.push_back({{"host", hs.host},
                      {"run", hs.run_id},
                      {"instance", hs.stamp.instance},
                      {"tag", hs.stamp.tag},
                      {"kind", hs.stamp.kind},
                      {"process_id", hs.stamp.process_id},
                      {"tid", hs.stamp.tid},
                      {"cpu", hs.stamp.cpu ? Json(*hs.stamp.cpu) : Json(nullptr)},
                      {"utc_ns", hs.stamp.utc_ns}});
  }
  j["stamps"] = std::move(stamps);
  Json stages = Json::array();
  for (const StitchedStage& st : o.order.stages) stages.push_back(StitchStageJson(st));
  j["stages"] = std::move(stages);
  j["total"] = o.total ? StitchStageJson(*o.total) : Json(nullptr);
  return j.dump(2) + "\n";
}

}  // namespace ticktrace::view
