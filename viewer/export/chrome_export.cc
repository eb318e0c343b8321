#include "viewer/export/chrome_export.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"
#include "viewer/format/format_units.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

using Json = nlohmann::ordered_json;

// A stamp is an instant, but drawn as a 1 ns complete event: a flow event
// binds to the slice that encloses its timestamp, and a slice of zero
// duration encloses nothing in every viewer.
constexpr double kStampDurationUs = 0.001;

// Chrome's pid for a process: its OS pid, unless two processes of the run
// share one (a reused pid), in which case the later ones get a number above
// any OS pid.
std::map<int64_t, int64_t> ChromePids(const std::vector<store::ProcessRow>& processes) {
  constexpr int64_t kFirstSyntheticPid = int64_t{1} << 32;
  std::map<int64_t, int64_t> out;
  std::set<int64_t> used;
  int64_t next_synthetic = kFirstSyntheticPid;
  for (const store::ProcessRow& p : processes) {
    out[p.process_id] = used.insert(p.pid).second ? p.pid : next_synthetic++;
  }
  return out;
}

// Order IDs are 64-bit unsigned (the store keeps 2^63 and above as negative
// INTEGERs). A JSON number is a double in JavaScript, where IDs above 2^53
// collapse (2^53 + 1 reads as 2^53), so IDs are written as strings: decimal
// in `args`, as everywhere else in the viewer, and "0x" + hex in a flow's
// "id", which is how Perfetto's importer reads a string id (base 16) and
// which chrome://tracing takes as an opaque key.
std::string OrderIdDecimal(int64_t stored_id) {
  return absl::StrCat(static_cast<uint64_t>(stored_id));
}
std::string OrderIdFlowId(int64_t stored_id) {
  return absl::StrCat("0x", absl::Hex(static_cast<uint64_t>(stored_id)));
}

// Streams the traceEvents array: one comma-separated event per call.
class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}
  void Add(const Json& event) {
    out_ << (first_ ? "\n" : ",\n") << event.dump();
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// The parent's stamp a linked child's chain starts at: the parent's latest
// stamp at or before the child's first own stamp, else (every parent stamp
// later: the cores' clocks disagree) its first; null when it has none.
const store::StampRow* LinkSource(const std::vector<store::StampRow>& parent,
                                  const store::StampRow& child_first) {
  const store::StampRow* from = nullptr;
  for (const store::StampRow& s : parent) {
    if (s.utc_ns <= child_first.utc_ns && (from == nullptr || s.utc_ns > from->utc_ns)) {
      from = &s;
    }
  }
  if (from == nullptr && !parent.empty()) from = &parent.front();
  return from;
}

// The clocks other than the TSC that stamped each tag, "+"-joined: the
// begin of a stage "a->b" names a's, its end b's (store::StageClockRow).
using TagClockMap = std::map<std::string, std::string>;

absl::StatusOr<TagClockMap> TagClocks(store::StoreReader& store, int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::StageClockRow> rows,
                             store.StageClocks(run_id));
  std::map<std::string, std::set<std::string>> by_tag;
  for (const store::StageClockRow& r : rows) {
    const auto tags = store::TransitionTags(r.stage);
    if (!tags.has_value()) continue;  // a span or total: no tag of its own
    by_tag[std::string(r.side == "begin" ? tags->first : tags->second)].insert(r.clock);
  }
  TagClockMap out;
  for (const auto& [tag, clocks] : by_tag) {
    for (const std::string& c : clocks) absl::StrAppend(&out[tag], out[tag].empty() ? "" : "+", c);
  }
  return out;
}

// One run's trace: the events of its processes, threads and orders, on
// Chrome's pids and in µs since the base time.
class ChromeTrace {
 public:
  ChromeTrace(std::ostream& out, const std::vector<store::ProcessRow>& processes,
              int64_t base_utc_ns)
      : events_(out), chrome_pid_(ChromePids(processes)), base_utc_ns_(base_utc_ns) {}

  // The clock of each tag stamped by another clock (TagClocks), said on its
  // external stamps.
  void set_tag_clocks(TagClockMap clocks) { tag_clocks_ = std::move(clocks); }

  void AddNames(const std::vector<store::ProcessRow>& processes,
                const std::vector<store::ThreadRow>& threads) {
    for (const store::ProcessRow& p : processes) {
      events_.Add({{"name", "process_name"}, {"ph", "M"}, {"pid", PidOf(p.process_id)},
                   {"args", {{"name", absl::StrCat(p.name, " [", p.pid, "]")}}}});
    }
    for (const store::ThreadRow& t : threads) {
      if (t.name.empty()) continue;
      events_.Add({{"name", "thread_name"}, {"ph", "M"}, {"pid", PidOf(t.process_id)},
                   {"tid", t.tid}, {"args", {{"name", t.name}}}});
    }
  }

  // Each stamp as a slice (a span with its duration).
  void AddStamps(const store::OrderRow& order, const std::vector<store::StampRow>& stamps) {
    for (const store::StampRow& s : stamps) {
      Json args = {{"order_id", OrderIdDecimal(s.order_id)},
                   {"utc", FormatUtcNs(s.utc_ns)},
                   {"tsc", s.tsc}};
      if (s.cpu.has_value()) args["core"] = *s.cpu;
      if (s.cpu_end.has_value()) args["core_end"] = *s.cpu_end;
      if (s.flags != 0) args["flags"] = FlagWords(s.flags);
      if (s.flags & store::kFlagExternal) {
        if (const auto it = tag_clocks_.find(s.tag); it != tag_clocks_.end()) {
          args["clock"] = it->second;
        }
      }
      if (order.parent_order_id.has_value()) {
        args["parent_order_id"] = OrderIdDecimal(*order.parent_order_id);
      }
      const bool span = s.kind == "span";
      events_.Add({{"name", s.tag},
                   {"cat", span ? "span" : "stamp"},
                   {"ph", "X"},
                   {"ts", TsUs(s.utc_ns)},
                   {"dur", span ? s.duration_ns.value_or(0) / 1e3 : kStampDurationUs},
                   {"pid", PidOf(s.process_id)},
                   {"tid", s.tid},
                   {"args", std::move(args)}});
    }
  }

  // Flow events join the order's stamps in time order; each binds to the
  // event at its timestamp on its thread.
  void AddOrderFlow(const store::OrderRow& order, const std::vector<store::StampRow>& stamps) {
    if (stamps.size() < 2) return;
    std::vector<const store::StampRow*> by_time;
    for (const store::StampRow& s : stamps) by_time.push_back(&s);
    std::stable_sort(by_time.begin(), by_time.end(),
                     [](const store::StampRow* a, const store::StampRow* b) {
                       return a->utc_ns < b->utc_ns;
                     });
    for (size_t k = 0; k < by_time.size(); ++k) {
      const store::StampRow& s = *by_time[k];
      const char* phase = k == 0 ? "s" : (k + 1 == by_time.size() ? "f" : "t");
      Json flow = {{"name", "order"}, {"cat", "order"}, {"ph", phase},
                   {"id", OrderIdFlowId(order.order_id)}, {"ts", TsUs(s.utc_ns)},
                   {"pid", PidOf(s.process_id)}, {"tid", s.tid}};
      if (k > 0) flow["bp"] = "e";
      events_.Add(flow);
    }
  }

  // A linked order (a child): a flow from the parent's stamp that starts its
  // chain to the child's first own stamp. False when there is no such stamp.
  // REQUIRES: stamps not empty.
  bool AddLinkFlow(const store::OrderRow& order, const std::vector<store::StampRow>& stamps,
                   const std::vector<store::StampRow>& parent) {
    const store::StampRow* child_first = &stamps.front();
    for (const store::StampRow& s : stamps) {
      if (s.utc_ns < child_first->utc_ns) child_first = &s;
    }
    const store::StampRow* from = LinkSource(parent, *child_first);
    if (from == nullptr) return false;
    // Flow ids are keyed by (cat, name, id): "link" flows never meet the
    // "order" flows, and each child has its own.
    const std::string id = OrderIdFlowId(order.order_id);
    events_.Add({{"name", "link"}, {"cat", "link"}, {"ph", "s"}, {"id", id},
                 {"ts", TsUs(from->utc_ns)}, {"pid", PidOf(from->process_id)},
                 {"tid", from->tid},
                 {"args", {{"parent_order_id", OrderIdDecimal(*order.parent_order_id)},
                           {"order_id", OrderIdDecimal(order.order_id)}}}});
    events_.Add({{"name", "link"}, {"cat", "link"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                 {"ts", TsUs(child_first->utc_ns)},
                 {"pid", PidOf(child_first->process_id)}, {"tid", child_first->tid}});
    return true;
  }

 private:
  int64_t PidOf(int64_t process_id) const {
    const auto it = chrome_pid_.find(process_id);
    // A stamp of a process the store does not list: a track of its own.
    return it != chrome_pid_.end() ? it->second : -process_id - 1;
  }
  double TsUs(int64_t utc_ns) const { return static_cast<double>(utc_ns - base_utc_ns_) / 1e3; }

  EventWriter events_;
  const std::map<int64_t, int64_t> chrome_pid_;
  const int64_t base_utc_ns_;
  TagClockMap tag_clocks_;
};

}  // namespace

absl::StatusOr<ExportResult> ExportChrome(store::StoreReader& store, const ExportOptions& options,
                                          std::ostream& out) {
  TICKTRACE_ASSIGN_OR_RETURN(store::RunRow run, store.GetRun(options.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::OrderRow> orders,
                             OrdersToExport(store, run.run_id, options));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ProcessRow> processes, store.Processes(run.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ThreadRow> threads, store.Threads(run.run_id));

  // The base time: the first exported order's first stamp (orders come by
  // first_utc_ns, the first stamp of each chain), or the run's start if
  // earlier. Stamps are then streamed order by order.
  int64_t base_utc_ns = run.started_utc_ns;
  if (!orders.empty()) base_utc_ns = std::min(base_utc_ns, orders.front().first_utc_ns);

  ExportResult result;
  result.run_id = run.run_id;
  out << "{\"traceEvents\":[";
  ChromeTrace trace(out, processes, base_utc_ns);
  trace.AddNames(processes, threads);
  TICKTRACE_ASSIGN_OR_RETURN(TagClockMap tag_clocks, TagClocks(store, run.run_id));
  trace.set_tag_clocks(std::move(tag_clocks));
  std::set<int64_t> exported;  // order ids written so far (a parent before its children)
  for (const store::OrderRow& order : orders) {
    // One instance per orders row (an id used again has a row per use).
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::vector<store::StampRow> stamps,
        store.StampsOfInstance(run.run_id, order.order_id, order.instance));
    trace.AddStamps(order, stamps);
    result.stamps += static_cast<int64_t>(stamps.size());
    trace.AddOrderFlow(order, stamps);
    // The parent's flow only when the parent is in the export.
    if (order.parent_order_id.has_value() && !stamps.empty() &&
        exported.count(*order.parent_order_id) > 0) {
      TICKTRACE_ASSIGN_OR_RETURN(
          const std::vector<store::StampRow> parent,
          store.StampsOfInstance(run.run_id, *order.parent_order_id, 0));
      if (trace.AddLinkFlow(order, stamps, parent)) ++result.links;
    }
    exported.insert(order.order_id);
    ++result.orders;
  }
  Json other = {{"tool", "ticktrace-view"},
                {"run", run.run_id},
                {"session", run.session},
                {"host", run.host},
                {"tsc_hz", run.tsc_hz},
                {"base_utc", FormatUtcNs(base_utc_ns)},
                {"base_utc_ns", base_utc_ns},
                {"orders", result.orders},
                {"links", result.links}};
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" << other.dump() << "}\n";
  return result;
}

}  // namespace ticktrace::view
