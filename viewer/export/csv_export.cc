#include "viewer/export/csv_export.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

std::string Cell(const std::optional<int64_t>& v) {
  return v.has_value() ? absl::StrCat(*v) : std::string();
}

void WriteRow(int64_t run_id, const store::SampleRow& s, std::ostream& out) {
  // %.17g round-trips every double.
  out << run_id << ',' << static_cast<uint64_t>(s.order_id) << ',' << CsvField(s.stage) << ',' << s.start_utc_ns << ','
      << absl::StrFormat("%.17g", s.latency_ns) << ',' << Cell(s.process_begin) << ','
      << Cell(s.process_end) << ',' << Cell(s.cpu_begin) << ',' << Cell(s.cpu_end) << ','
      << s.flags << '\n';
}

}  // namespace

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  return absl::StrCat("\"", absl::StrReplaceAll(field, {{"\"", "\"\""}}), "\"");
}

absl::StatusOr<ExportResult> ExportCsv(store::StoreReader& store, const ExportOptions& options,
                                       std::ostream& out) {
  TICKTRACE_ASSIGN_OR_RETURN(store::RunRow run, store.GetRun(options.run_id));
  ExportResult result;
  result.run_id = run.run_id;
  out << kCsvHeader << '\n';
  if (options.limit.has_value() || options.window.since_utc_ns.has_value() ||
      options.window.until_utc_ns.has_value() || options.slowest.has_value() ||
      options.flagged || options.order_id.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::OrderRow> orders,
                               OrdersToExport(store, run.run_id, options));
    for (const store::OrderRow& order : orders) {
      TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::SampleRow> samples,
                                 store.SamplesOfOrder(run.run_id, order.order_id));
      // SamplesOfOrder holds every instance; this row is one of them.
      for (const store::SampleRow& s : samples) {
        if (s.instance != order.instance) continue;
        WriteRow(run.run_id, s, out);
        ++result.rows;
      }
      ++result.orders;
    }
    return result;
  }
  std::optional<int64_t> last_order;
  TICKTRACE_RETURN_IF_ERROR(store.ForEachSample(
      run.run_id, store::SampleFilter(), /*ordered=*/true, [&](const store::SampleRow& s) {
        WriteRow(run.run_id, s, out);
        ++result.rows;
        if (last_order != s.order_id) ++result.orders;
        last_order = s.order_id;
      }));
  return result;
}

}  // namespace ticktrace::view
