#include "viewer/export/otlp_export.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/otlp/http_exporter.h"
#include "common/otlp/json_encoder.h"
#include "common/otlp/order_spans.h"
#include "common/status_macros.h"
#include "ticktrace/store/flags.h"

namespace ticktrace::view {
namespace {

struct OtlpTraces {
  ExportResult result;
  otlp::ExportRequest request;
};

absl::StatusOr<otlp::TraceContext> ContextOf(store::StoreReader& store, const store::RunRow& run,
                                             uint32_t excluded_flags) {
  otlp::TraceContext c;
  c.run = otlp::RunKey{run.host, run.started_utc_ns, run.run_id};
  c.session = run.session;
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::ProcessRow> processes,
                             store.Processes(run.run_id));
  for (const store::ProcessRow& p : processes) {
    c.processes[p.process_id] = otlp::ProcessName{p.name, p.pid};
  }
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::ThreadRow> threads, store.Threads(run.run_id));
  for (const store::ThreadRow& t : threads) c.threads[{t.process_id, t.tid}] = t.name;
  for (const store::FlagName& f : store::kAllFlagNames) c.flag_names.push_back({f.bit, f.name});
  c.error_flags = excluded_flags;
  return c;
}

// Each stage's other clocks by end (store::StageClockRow): (begin, end),
// "+"-joined.
using StageClocks = std::map<std::string, std::pair<std::string, std::string>>;

absl::StatusOr<StageClocks> StageClocksOf(store::StoreReader& store, int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::StageClockRow> rows,
                             store.StageClocks(run_id));
  StageClocks out;
  for (const store::StageClockRow& r : rows) {
    std::string& names = r.side == "begin" ? out[r.stage].first : out[r.stage].second;
    absl::StrAppend(&names, names.empty() ? "" : "+", r.clock);
  }
  return out;
}

// One order instance as the OTLP mapping takes it, from the store's rows.
otlp::OrderTrace TraceOf(const store::OrderRow& order, const std::vector<store::SampleRow>& samples,
                         const std::vector<store::StampRow>& stamps,
                         const std::map<int64_t, double>& bound_ns, const StageClocks& clocks) {
  otlp::OrderTrace t;
  t.order_id = static_cast<uint64_t>(order.order_id);
  t.instance = static_cast<uint32_t>(order.instance);
  if (order.parent_order_id.has_value()) {
    t.parent_order_id = static_cast<uint64_t>(*order.parent_order_id);
  }
  t.first_utc_ns = order.first_utc_ns;
  for (const store::SampleRow& s : samples) {
    if (s.instance != order.instance) continue;
    otlp::OrderSample o;
    o.stage = s.stage;
    o.start_utc_ns = s.start_utc_ns;
    o.end_utc_ns = s.start_utc_ns + otlp::RoundLatencyNs(s.latency_ns);
    o.process_begin = s.process_begin.value_or(-1);
    o.process_end = s.process_end.value_or(-1);
    o.cpu_begin = s.cpu_begin.value_or(-1);
    o.cpu_end = s.cpu_end.value_or(-1);
    o.flags = s.flags;
    if (s.flags & store::kFlagExternal) {
      if (const auto it = clocks.find(s.stage); it != clocks.end()) {
        o.begin_clock = it->second.first;
        o.end_clock = it->second.second;
      }
    }
    // A cross-core sample is known within its two cores' offset bounds.
    if (o.cpu_begin >= 0 && o.cpu_end >= 0 && o.cpu_begin != o.cpu_end) {
      const auto b = bound_ns.find(o.cpu_begin), e = bound_ns.find(o.cpu_end);
      if (b != bound_ns.end() && e != bound_ns.end() && b->second + e->second > 0) {
        o.uncertainty_ns = b->second + e->second;
      }
    }
    t.samples.push_back(std::move(o));
  }
  for (const store::StampRow& s : stamps) t.stamps.push_back({s.process_id, s.tid, s.utc_ns});
  return t;
}

absl::StatusOr<OtlpTraces> BuildTraces(store::StoreReader& store, const ExportOptions& options) {
  TICKTRACE_ASSIGN_OR_RETURN(const store::RunRow run, store.GetRun(options.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::OrderRow> orders,
                             OrdersToExport(store, run.run_id, options));
  TICKTRACE_ASSIGN_OR_RETURN(const otlp::TraceContext context,
                             ContextOf(store, run, options.excluded_flags));
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::CoreRow> cores, store.Cores(run.run_id));
  std::map<int64_t, double> bound_ns;
  for (const store::CoreRow& c : cores) bound_ns[c.cpu] = c.bound_ns;
  TICKTRACE_ASSIGN_OR_RETURN(const StageClocks clocks, StageClocksOf(store, run.run_id));
  otlp::TraceBuilder builder(&context);
  OtlpTraces out;
  out.result.run_id = run.run_id;
  for (const store::OrderRow& order : orders) {
    TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::SampleRow> samples,
                               store.SamplesOfOrder(run.run_id, order.order_id));
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::vector<store::StampRow> stamps,
        store.StampsOfInstance(run.run_id, order.order_id, order.instance));
    out.result.spans +=
        static_cast<int64_t>(builder.Add(TraceOf(order, samples, stamps, bound_ns, clocks)));
    out.result.links += order.parent_order_id.has_value() ? 1 : 0;
    ++out.result.orders;
  }
  out.request = builder.Take();
  return out;
}

}  // namespace

absl::StatusOr<ExportResult> ExportOtlpJson(store::StoreReader& store, const ExportOptions& options,
                                            std::ostream& out) {
  TICKTRACE_ASSIGN_OR_RETURN(OtlpTraces traces, BuildTraces(store, options));
  out << otlp::EncodeJson(traces.request) << "\n";
  return traces.result;
}

absl::StatusOr<ExportResult> ExportOtlpHttp(store::StoreReader& store, const ExportOptions& options,
                                            const std::string& endpoint) {
  otlp::ExporterOptions eo;
  eo.endpoint = endpoint;
  eo.retry_unreachable = false;  // nothing listening: say so now, not after 30 s
  // A malformed URL is refused before the store is read.
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<otlp::HttpExporter> exporter,
                             otlp::HttpExporter::Create(eo));
  TICKTRACE_ASSIGN_OR_RETURN(OtlpTraces traces, BuildTraces(store, options));
  const absl::Status sent = exporter->Export(traces.request);
  traces.result.batches = exporter->stats().batches;
  traces.result.retries = exporter->stats().retries;
  if (!sent.ok()) return sent;
  return traces.result;
}

}  // namespace ticktrace::view
