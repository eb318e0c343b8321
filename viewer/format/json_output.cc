#include "viewer/format/json_output.h"

#include <nlohmann/json.hpp>

#include <utility>
#include <vector>

#include "viewer/format/format_units.h"
#include "common/status_macros.h"
#include "viewer/views/run_notes_text.h"

namespace ticktrace::view {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json Optional(const std::optional<T>& v) {
  return v.has_value() ? Json(*v) : Json(nullptr);
}

Json OptionalOrderId(const std::optional<int64_t>& id) {
  return id.has_value() ? Json(FormatOrderId(*id)) : Json(nullptr);
}

Json FlagList(uint32_t flags) {
  Json list = Json::array();
  for (const store::FlagName& f : store::kAllFlagNames) {
    if ((flags & f.bit) != 0) list.push_back(std::string(f.name));
  }
  return list;
}

Json OrderJson(const store::OrderRow& o) {
  return {{"order_id", FormatOrderId(o.order_id)},
          {"instance", o.instance},
          {"parent_order_id", OptionalOrderId(o.parent_order_id)},
          {"first_utc_ns", o.first_utc_ns},
          {"total_ns", Optional(o.total_ns)},
          {"complete", o.complete},
          {"missing", o.missing},
          {"late", o.late}};
}

Json SampleJson(const store::SampleRow& s) {
  return {{"order_id", FormatOrderId(s.order_id)},
          {"instance", s.instance},
          {"stage", s.stage},
          {"start_utc_ns", s.start_utc_ns},
          {"latency_ns", s.latency_ns},
          {"process_begin", Optional(s.process_begin)},
          {"process_end", Optional(s.process_end)},
          {"cpu_begin", Optional(s.cpu_begin)},
          {"cpu_end", Optional(s.cpu_end)},
          {"flags", FlagList(s.flags)}};
}

std::string Dump(const Json& j) { return j.dump(2) + "\n"; }

}  // namespace

std::string RenderSlowestJson(const SlowestReport& report) {
  Json orders = Json::array();
  for (const SlowOrder& slow : report.orders) {
    Json o = OrderJson(slow.order);
    o["latency_ns"] = slow.latency_ns;
    o["flags"] = FlagList(slow.flags);
    Json samples = Json::array();
    for (const store::SampleRow& s : slow.samples) samples.push_back(SampleJson(s));
    o["samples"] = std::move(samples);
    orders.push_back(std::move(o));
  }
  return Dump({{"run", report.run.run_id},
               {"stage", report.stage},
               {"filters", report.filters},
               {"orders", std::move(orders)}});
}

std::string RenderTimelineJson(const Timeline& timeline) {
  Json chain = Json::array();
  for (const store::OrderRow& o : timeline.chain) chain.push_back(OrderJson(o));
  Json children = Json::array();
  for (int64_t id : timeline.children) children.push_back(FormatOrderId(id));
  Json stamps = Json::array();
  for (const TimelineEntry& e : timeline.entries) {
    const store::StampRow& s = e.stamp;
    stamps.push_back({{"order_id", FormatOrderId(s.order_id)},
                      {"instance", s.instance},
                      {"tag", s.tag},
                      {"kind", s.kind},
                      {"process", e.process},
                      {"thread", e.thread},
                      {"tid", s.tid},
                      {"cpu", Optional(s.cpu)},
                      {"cpu_end", Optional(s.cpu_end)},
                      {"tsc", s.tsc},
                      {"utc_ns", s.utc_ns},
                      {"delta_ns", Optional(e.delta_ns)},
                      {"duration_ns", Optional(s.duration_ns)},
                      {"flags", FlagList(s.flags)}});
  }
  return Dump({{"run", timeline.run.run_id},
               {"chain", std::move(chain)},
               {"children", std::move(children)},
               {"stamps", std::move(stamps)}});
}

std::string RenderPercentilesJson(const StageValues& values, const std::string& stage) {
  Json lines = Json::array();
  double sum = 0;
  for (double v : values.sorted_ns) sum += v;
  if (!values.sorted_ns.empty()) {
    for (const PercentileLine& l : PercentileDistribution(values.sorted_ns, 5)) {
      lines.push_back(
          {{"value_ns", l.value_ns}, {"percentile", l.percentile}, {"total_count", l.total_count}});
    }
  }
  const bool empty = values.sorted_ns.empty();
  return Dump({{"run", values.run.run_id},
               {"stage", stage},
               {"count", static_cast<int64_t>(values.sorted_ns.size())},
               {"excluded", values.excluded},
               {"include_flagged", values.include_flagged},
               {"detail_complete", values.detail.complete()},
               {"min_ns", empty ? Json(nullptr) : Json(values.sorted_ns.front())},
               {"max_ns", empty ? Json(nullptr) : Json(values.sorted_ns.back())},
               {"mean_ns", empty ? Json(nullptr)
                                 : Json(sum / static_cast<double>(values.sorted_ns.size()))},
               {"lines", std::move(lines)}});
}

absl::StatusOr<std::string> RenderRunsJson(store::StoreReader& store) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::RunRow> runs, store.ListRuns());
  Json list = Json::array();
  for (const store::RunRow& run : runs) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ProcessRow> processes, store.Processes(run.run_id));
    TICKTRACE_ASSIGN_OR_RETURN(auto counters, store.Counters(run.run_id));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::RunNote> notes, store.Notes(run.run_id));
    Json procs = Json::array();
    for (const store::ProcessRow& p : processes) {
      procs.push_back({{"process_id", p.process_id}, {"pid", p.pid}, {"name", p.name}});
    }
    Json counts = Json::object();
    for (const auto& [name, value] : counters) counts[name] = value;
    list.push_back({{"run", run.run_id},
                    {"session", run.session},
                    {"host", run.host},
                    {"started_utc_ns", run.started_utc_ns},
                    {"ended_utc_ns", Optional(run.ended_utc_ns)},
                    {"tsc_hz", run.tsc_hz},
                    {"calibration_source", run.calibration_source},
                    {"spread_ppm", Optional(run.spread_ppm)},
                    {"step_ns", Optional(run.tsc_step_ns)},
                    {"pipeline", run.pipeline},
                    {"pipeline_learned", run.pipeline_learned},
                    {"interval_ns", run.interval_ns},
                    {"processes", std::move(procs)},
                    {"counters", std::move(counts)},
                    {"notes", RunNotesJson(notes)}});
  }
  return Dump({{"store", store.path()},
               {"schema", store.schema_version()},
               {"runs", std::move(list)}});
}

std::string RenderExportJson(const ExportResult& result, const std::string& format,
                             const std::string& out_path) {
  return Dump({{"run", result.run_id},
               {"format", format},
               {"out", out_path},
               {"orders", result.orders},
               {"stamps", result.stamps},
               {"rows", result.rows},
               {"spans", result.spans},
               {"batches", result.batches},
               {"retries", result.retries}});
}

std::string CompactJson(const std::string& json) {
  return nlohmann::ordered_json::parse(json).dump() + "\n";
}

}  // namespace ticktrace::view
