#include "viewer/html/report.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "viewer/export/export_common.h"
#include "viewer/html/report_model.h"
#include "ticktrace/store/open.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

absl::Status WriteHtmlReport(const ReportRequest& request, std::ostream& log) {
  if (request.out_path.empty()) return absl::InvalidArgumentError("--out: empty path");
  // Refuse before reading anything: an existing report is someone's work.
  struct stat out_st;
  struct stat db_st;
  const std::optional<std::string> store_file = request.store_uri.local_file();
  if (request.out_path != "-" && store_file.has_value() &&
      ::stat(request.out_path.c_str(), &out_st) == 0 &&
      ::stat(store_file->c_str(), &db_st) == 0 && out_st.st_dev == db_st.st_dev &&
      out_st.st_ino == db_st.st_ino) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out ", request.out_path, " is the store itself; the viewer never writes it"));
  }
  if (request.out_path != "-" && !request.force && ::stat(request.out_path.c_str(), &out_st) == 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("--out ", request.out_path, " exists; add --force to replace it"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store,
                             store::OpenReader(request.store_uri));
  std::optional<int64_t> run_id = request.run_id;
  std::optional<CrossHostScope> scope;
  if (request.cross_host.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(scope, ResolveCrossHost(*store, *request.cross_host));
    run_id = scope->reference.run_id;
  }
  TICKTRACE_ASSIGN_OR_RETURN(ReportModel model,
                             BuildReportModel(*store, run_id, request.slowest,
                                              request.since, request.until));
  if (scope.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(model.cross_host,
                               BuildCrossHostReport(*store, *scope, request.slowest));
  }
  const std::string html = RenderReportHtml(model);
  TICKTRACE_RETURN_IF_ERROR(
      WriteOutput(request.out_path, store->path(), [&](std::ostream& file) -> absl::Status {
        file << html;
        return absl::OkStatus();
      },
      request.force));
  if (request.out_path != "-" && request.json) {
    nlohmann::ordered_json losses = nlohmann::ordered_json::array();
    for (const auto& loss : model.losses) losses.push_back(loss.name);
    nlohmann::ordered_json j{{"run", model.summary.run.run_id},
                             {"out", request.out_path},
                             {"stages", model.stages.size()},
                             {"slowest", model.slowest.size()},
                             {"losses", std::move(losses)}};
    if (model.cross_host) {
      const CrossHostBreakdown& b = model.cross_host->breakdown;
      j["stitched"] = {{"hosts", b.scope.hosts},
                       {"orders", b.orders},
                       {"orders_across_hosts", b.orders_across_hosts},
                       {"stages", b.stages.size()},
                       {"slowest", model.cross_host->slowest.orders.size()}};
    }
    log << j.dump(2) << "\n";
  } else if (request.out_path != "-") {
    log << "run " << model.summary.run.run_id << ": " << model.stages.size() << " stages, "
        << model.slowest.size() << " slowest orders";
    if (model.cross_host) {
      log << ", " << model.cross_host->breakdown.orders << " orders stitched across hosts "
          << absl::StrJoin(model.cross_host->breakdown.scope.hosts, ", ");
    }
    if (!model.losses.empty()) log << ", data lost (see the red banner)";
    log << " -> " << request.out_path << "\n";
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::view
