#include "viewer/views/losses_view.h"

#include "absl/strings/str_cat.h"

namespace ticktrace::view {

std::string RecordsLostLine(const store::RecordLoss& loss) {
  return absl::StrCat("records lost: ", loss.Text(),
                      loss.lost > 0 ? "; not in any figure below\n" : "\n");
}

nlohmann::ordered_json RecordsLostJson(const store::RecordLoss& loss) {
  nlohmann::ordered_json by_cause = nlohmann::ordered_json::object();
  for (size_t i = 0; i < store::kLossCauses.size(); ++i) {
    by_cause[std::string(store::kLossCauses[i].cause)] = loss.by_cause[i];
  }
  return {{"lost", loss.lost},
          {"written", loss.written},
          {"share", loss.LostShare()},
          {"by_cause", std::move(by_cause)}};
}

}  // namespace ticktrace::view
