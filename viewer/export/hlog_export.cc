#include "viewer/export/hlog_export.h"

#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ticktrace/store/histogram.h"
#include "viewer/export/hdr_encoding.h"
#include "common/status_macros.h"
#include "viewer/format/format_units.h"

namespace ticktrace::view {
namespace {

// The largest latency a line can hold: one hour in ns (larger values are
// counted at it). HdrHistogram's readers size their arrays by it: about
// 33 000 counters at 3 digits.
constexpr int64_t kHighestTrackableNs = int64_t{3600} * 1000 * 1000 * 1000;
constexpr int kSignificantDigits = 3;

// Tags end at a comma, and HdrHistogram's Java scanner also splits at
// white space: those become '_'.
std::string HlogTag(const std::string& stage) {
  std::string tag = stage;
  for (char& c : tag) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n') c = '_';
  }
  return tag;
}

std::string Seconds(int64_t ns) { return absl::StrFormat("%.3f", static_cast<double>(ns) / 1e9); }

}  // namespace

absl::StatusOr<ExportResult> ExportHlog(store::StoreReader& store, const ExportOptions& options,
                                        std::ostream& out) {
  TICKTRACE_ASSIGN_OR_RETURN(store::RunRow run, store.GetRun(options.run_id));
  if (run.interval_ns <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run.run_id, " has no interval length; the store has no intervals"));
  }
  // BaseTime: the run's start rounded down to its interval, so that line
  // timestamps are whole intervals.
  const int64_t base_ns = run.started_utc_ns - run.started_utc_ns % run.interval_ns;
  ExportResult result;
  result.run_id = run.run_id;
  out << "#[Histogram log format version 1.3]\n"
      << "#[ticktrace-view export --format hlog: run " << run.run_id << ", session "
      << run.session << ", host " << run.host << "]\n"
      << "#[One line per stage (Tag) per interval of " << Seconds(run.interval_ns)
      << " s; values are latencies in ns, Interval_Max in ms]\n"
      << "#[StartTime: " << Seconds(base_ns) << " (seconds since epoch), "
      << FormatUtcNs(base_ns) << "]\n"
      << "#[BaseTime: " << Seconds(base_ns) << " (seconds since epoch)]\n"
      << "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
         "\"Interval_Compressed_Histogram\"\n";
  std::map<std::string, uint64_t> negative_by_stage;
  TICKTRACE_RETURN_IF_ERROR(store.ForEachIntervalHistogram(
      run.run_id, options.window,
      [&](const std::string& stage, int64_t start_utc_ns, std::string_view encoded) {
        TICKTRACE_ASSIGN_OR_RETURN(const store::Histogram h, store::Histogram::Decode(encoded));
        if (h.count() == 0) return absl::OkStatus();
        internal::HdrCounts hdr(kHighestTrackableNs, kSignificantDigits);
        const auto record = [&](double value_ns, uint64_t count) {
          if (value_ns < 0) negative_by_stage[stage] += count;
          hdr.Record(static_cast<int64_t>(std::llround(std::max(0.0, value_ns))), count);
        };
        // The exact min and max are known: one value of the lowest bucket is
        // the min and one of the highest the max, so that HdrHistogram's
        // min and max are exact too (to its own precision).
        uint64_t seen = 0;  // values visited so far
        h.ForEachBucket([&](double value_ns, uint64_t count) {
          const bool first = seen == 0;
          seen += count;
          const bool last = seen == h.count();
          if (first) {
            record(h.min(), 1);
            --count;
          }
          if (last && count > 0) {
            record(h.max(), 1);
            --count;
          }
          record(value_ns, count);
        });
        TICKTRACE_ASSIGN_OR_RETURN(const std::string base64, hdr.EncodeCompressedBase64());
        out << "Tag=" << HlogTag(stage) << ',' << Seconds(start_utc_ns - base_ns) << ','
            << Seconds(run.interval_ns) << ','
            << absl::StrFormat("%.3f", std::max(0.0, h.max()) / 1e6) << ',' << base64 << '\n';
        ++result.rows;
        return absl::OkStatus();
      }));
  for (const auto& [stage, n] : negative_by_stage) {
    out << "#[Tag=" << HlogTag(stage) << ": " << n
        << " negative latencies (cross-core differences) are counted at 0]\n";
  }
  return result;
}

}  // namespace ticktrace::view
