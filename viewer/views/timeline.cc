#include "viewer/views/timeline.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "viewer/format/format_units.h"
#include "common/status_macros.h"
#include "viewer/format/text_table.h"

namespace ticktrace::view {
namespace {

// Links deeper than this are reported as they are, not followed further.
constexpr int kMaxChainDepth = 64;

}  // namespace

absl::StatusOr<Timeline> BuildTimeline(store::StoreReader& store, int64_t order_id,
                                       std::optional<int64_t> run_id) {
  Timeline timeline;
  if (run_id.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(timeline.run, store.GetRun(run_id));
  } else {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<int64_t> runs, store.RunsWithOrder(order_id));
    if (runs.empty()) {
      return absl::NotFoundError(absl::StrCat("order ", FormatOrderId(order_id), " not found in any run of ",
                                              store.path()));
    }
    TICKTRACE_ASSIGN_OR_RETURN(timeline.run, store.GetRun(runs.back()));
  }
  const int64_t run = timeline.run.run_id;
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<store::OrderRow> order, store.FindOrder(run, order_id));
  if (!order.has_value()) {
    return absl::NotFoundError(absl::StrCat("order ", FormatOrderId(order_id), " not found in run ", run));
  }

  // The parent chain, walked upwards, guarded against cycles.
  std::set<int64_t> seen = {order_id};
  timeline.chain.push_back(*order);
  while (timeline.chain.back().parent_order_id.has_value() &&
         static_cast<int>(timeline.chain.size()) < kMaxChainDepth) {
    const int64_t parent_id = *timeline.chain.back().parent_order_id;
    if (!seen.insert(parent_id).second) break;
    TICKTRACE_ASSIGN_OR_RETURN(std::optional<store::OrderRow> parent, store.FindOrder(run, parent_id));
    if (!parent.has_value()) break;
    timeline.chain.push_back(*parent);
  }
  std::reverse(timeline.chain.begin(), timeline.chain.end());
  TICKTRACE_ASSIGN_OR_RETURN(timeline.children, store.ChildOrders(run, order_id));

  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ProcessRow> processes, store.Processes(run));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ThreadRow> threads, store.Threads(run));
  std::map<int64_t, std::string> process_names;
  for (const store::ProcessRow& p : processes) {
    process_names[p.process_id] = absl::StrCat(p.name, "[", p.pid, "]");
  }
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  for (const store::ThreadRow& t : threads) {
    if (!t.name.empty()) thread_names[{t.process_id, t.tid}] = t.name;
  }

  std::vector<store::StampRow> stamps;
  for (const store::OrderRow& o : timeline.chain) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::StampRow> own, store.Stamps(run, o.order_id));
    for (store::StampRow& s : own) stamps.push_back(std::move(s));
  }
  // Chain orders first by TSC; stable, so equal TSCs keep the chain's order.
  std::stable_sort(stamps.begin(), stamps.end(),
                   [](const store::StampRow& a, const store::StampRow& b) { return a.tsc < b.tsc; });
  const store::StampRow* previous = nullptr;
  for (const store::StampRow& s : stamps) {
    TimelineEntry e;
    e.stamp = s;
    const auto p = process_names.find(s.process_id);
    e.process = p != process_names.end() ? p->second : absl::StrCat("process ", s.process_id);
    const auto t = thread_names.find({s.process_id, s.tid});
    e.thread = t != thread_names.end() ? absl::StrCat(s.tid, " ", t->second) : absl::StrCat(s.tid);
    if (previous != nullptr && timeline.run.tsc_hz > 0) {
      e.delta_ns = static_cast<double>(s.tsc - previous->tsc) * 1e9 / timeline.run.tsc_hz;
    }
    previous = &s;
    timeline.entries.push_back(std::move(e));
  }
  return timeline;
}

std::string RenderTimeline(const Timeline& timeline) {
  const store::OrderRow& order = timeline.chain.back();
  std::string out = absl::StrCat("order ", FormatOrderId(order.order_id), "  run ", timeline.run.run_id, "  ",
                                 order.complete ? "complete" : "incomplete");
  if (!order.missing.empty()) absl::StrAppend(&out, " (missing ", order.missing, ")");
  if (order.total_ns.has_value()) {
    absl::StrAppend(&out, "  total ", FormatDurationNs(*order.total_ns));
  }
  out += "\n";
  if (timeline.chain.size() > 1) {
    std::vector<std::string> ids;
    for (const store::OrderRow& o : timeline.chain) ids.push_back(FormatOrderId(o.order_id));
    absl::StrAppend(&out, "linked: ", absl::StrJoin(ids, " -> "),
                    " (stamps of the whole chain below)\n");
  }
  if (!timeline.children.empty()) {
    std::vector<std::string> ids;
    for (int64_t id : timeline.children) ids.push_back(FormatOrderId(id));
    absl::StrAppend(&out, "linked from: ", absl::StrJoin(ids, ", "), "\n");
  }
  out += "\n";
  internal::TextTable table({"#", "utc", "delta", "order", "tag", "kind", "process", "thread",
                             "core", "duration", "flags"});
  table.SetLeftAligned(1);
  for (size_t c = 4; c <= 7; ++c) table.SetLeftAligned(c);
  table.SetLeftAligned(10);
  int index = 0;
  for (const TimelineEntry& e : timeline.entries) {
    const store::StampRow& s = e.stamp;
    std::string core = s.cpu.has_value() ? absl::StrCat(*s.cpu) : "-";
    if (s.cpu_end.has_value() && s.cpu_end != s.cpu) absl::StrAppend(&core, "->", *s.cpu_end);
    std::string delta = e.delta_ns.has_value() ? FormatDurationNs(*e.delta_ns) : "";
    if (e.delta_ns.has_value() && *e.delta_ns >= 0) delta = "+" + delta;
    table.AddRow({absl::StrCat(++index), FormatUtcNs(s.utc_ns), delta, FormatOrderId(s.order_id),
                  s.tag, s.kind, e.process, e.thread, core,
                  s.duration_ns.has_value() ? FormatDurationNs(*s.duration_ns) : "",
                  FlagWords(s.flags)});
  }
  out += table.Render();
  if (timeline.entries.empty()) out += "(no stamps stored for this order)\n";
  return out;
}

}  // namespace ticktrace::view
