#include "viewer/views/waterfall.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "viewer/format/format_units.h"
#include "viewer/cli/query.h"
#include "common/status_macros.h"
#include "viewer/format/text_table.h"

namespace ticktrace::view {

absl::StatusOr<SlowestReport> FindSlowestOrders(store::StoreReader& store, std::optional<int64_t> run_id,
                                                std::optional<std::string> stage, int64_t n,
                                                const std::optional<TimeArg>& since,
                                                const std::optional<TimeArg>& until) {
  QueryOptions options;
  options.run_id = run_id;
  options.stage = stage.value_or(std::string(store::kTotalStage));
  options.since = since;
  options.until = until;
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveQuery(store, options));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<std::string> stage_order, OrderedStages(store, q.run));
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < stage_order.size(); ++i) position[stage_order[i]] = i;

  SlowestReport report;
  report.run = q.run;
  report.stage = *options.stage;
  if (q.filter.since_utc_ns.has_value()) {
    report.filters = absl::StrCat("since ", FormatUtcNs(*q.filter.since_utc_ns));
  }
  if (q.filter.until_utc_ns.has_value()) {
    absl::StrAppend(&report.filters, report.filters.empty() ? "" : ", ", "until ",
                    FormatUtcNs(*q.filter.until_utc_ns));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::RankedOrder> ranked,
                             store.FindSlowest(q.run.run_id, report.stage, n, q.window));
  for (const store::RankedOrder& r : ranked) {
    SlowOrder slow;
    slow.latency_ns = r.latency_ns;
    slow.flags = r.flags;
    TICKTRACE_ASSIGN_OR_RETURN(slow.samples, store.SamplesOfOrder(q.run.run_id, r.order_id));
    TICKTRACE_ASSIGN_OR_RETURN(std::optional<store::OrderRow> order,
                               store.FindOrder(q.run.run_id, r.order_id));
    if (order.has_value()) {
      slow.order = *order;
    } else {  // samples without an orders row: describe the order from them
      slow.order.order_id = r.order_id;
      slow.order.first_utc_ns = slow.samples.empty() ? 0 : slow.samples.front().start_utc_ns;
    }
    // A linked order's chain starts at its parent's stamp: the parent's
    // stages are part of its total (a fanned-out tick's hops), so they are
    // drawn too (without them a tick's hop, often the slowest, is missing).
    if (slow.order.parent_order_id.has_value()) {
      TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::SampleRow> parent,
                                 store.SamplesOfOrder(q.run.run_id, *slow.order.parent_order_id));
      for (store::SampleRow& s : parent) {
        if (s.stage != store::kTotalStage) slow.parent_samples.push_back(std::move(s));
      }
    }
    const auto by_pipeline = [&](const store::SampleRow& a, const store::SampleRow& b) {
      const size_t pa = position.count(a.stage) ? position[a.stage] : SIZE_MAX;
      const size_t pb = position.count(b.stage) ? position[b.stage] : SIZE_MAX;
      return pa < pb;
    };
    std::stable_sort(slow.samples.begin(), slow.samples.end(), by_pipeline);
    std::stable_sort(slow.parent_samples.begin(), slow.parent_samples.end(), by_pipeline);
    report.orders.push_back(std::move(slow));
  }
  return report;
}

std::string RenderWaterfall(const SlowestReport& report, int bar_width) {
  std::string out = absl::StrCat("the ", report.orders.size(), " slowest orders by ", report.stage,
                                 " in run ", report.run.run_id,
                                 report.filters.empty() ? "" : absl::StrCat(", ", report.filters),
                                 " (bars on each order's own time axis; flags: M migrated, "
                                 "N negative, X cross-core)\n");
  if (report.orders.empty()) return out + "(no samples)\n";
  int rank = 0;
  for (const SlowOrder& slow : report.orders) {
    const store::OrderRow& order = slow.order;
    absl::StrAppend(&out, "\n#", ++rank, "  order ", FormatOrderId(order.order_id), "  ", report.stage, " ",
                    FormatDurationNs(slow.latency_ns), "  at ", FormatUtcNs(order.first_utc_ns));
    if (order.parent_order_id.has_value()) {
      absl::StrAppend(&out, "  linked to ", FormatOrderId(*order.parent_order_id));
    }
    absl::StrAppend(&out, order.complete ? "  complete" : "  incomplete");
    if (!order.missing.empty()) absl::StrAppend(&out, " (missing ", order.missing, ")");
    out += "\n";

    // The rows: the parent's stages (marked ^), then the order's own.
    std::vector<std::pair<const store::SampleRow*, bool>> rows;  // sample, the parent's
    for (const store::SampleRow& s : slow.parent_samples) rows.emplace_back(&s, true);
    for (const store::SampleRow& s : slow.samples) rows.emplace_back(&s, false);
    // The axis: from the order's first instant to the end of its last sample.
    int64_t t0 = order.first_utc_ns;
    for (const auto& [s, parent] : rows) t0 = std::min(t0, s->start_utc_ns);
    double span_ns = 0;
    for (const auto& [s, parent] : rows) {
      span_ns = std::max(span_ns,
                         static_cast<double>(s->start_utc_ns - t0) + std::max(0.0, s->latency_ns));
    }
    span_ns = std::max(span_ns, 1.0);
    const double per_char_ns = span_ns / bar_width;

    internal::TextTable table({"  stage", "latency", "flags",
                               absl::StrCat("0", std::string(bar_width - 1, ' '), " ",
                                            FormatDurationNs(span_ns))});
    table.SetLeftAligned(2);
    table.SetLeftAligned(3);
    for (const auto& [sample, parent] : rows) {
      const store::SampleRow& s = *sample;
      std::string bar(bar_width, ' ');
      const double offset_ns = static_cast<double>(s.start_utc_ns - t0);
      const int begin = std::clamp(static_cast<int>(std::floor(offset_ns / per_char_ns)), 0,
                                   bar_width - 1);
      if (s.latency_ns < 0) {
        bar[begin] = '<';  // a negative difference: drawn as a marker
      } else {
        const int length = std::max(1, static_cast<int>(std::lround(s.latency_ns / per_char_ns)));
        for (int i = begin; i < std::min(bar_width, begin + length); ++i) bar[i] = '#';
      }
      table.AddRow({absl::StrCat(parent ? "^ " : "  ", s.stage), FormatDurationNs(s.latency_ns),
                    FlagLetters(s.flags), absl::StrCat("|", bar, "|")});
    }
    out += table.Render();
    if (!slow.parent_samples.empty()) {
      absl::StrAppend(&out, "  ^ a stage of the parent order ",
                      FormatOrderId(*order.parent_order_id), ", where this order's chain starts\n");
    }
  }
  return out;
}

}  // namespace ticktrace::view
