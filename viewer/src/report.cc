#include "ticktrace/view/report.h"

namespace ticktrace::view {

absl::Status WriteHtmlReport(const ReportRequest&, std::ostream&) {
  return absl::UnimplementedError("report: not yet");
}

}  // namespace ticktrace::view
