#include "ticktrace/store/losses.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ticktrace::store {

double RecordLoss::LostShare() const {
  return written > 0 ? std::min(1.0, static_cast<double>(lost) / static_cast<double>(written))
                     : 0.0;
}

std::string LostPercentText(double share) {
  const double percent = share * 100;
  if (percent >= 10 || percent == 0) return absl::StrFormat("%.0f%%", percent);
  if (percent >= 1) return absl::StrFormat("%.1f%%", percent);
  return absl::StrFormat("%.2g%%", percent);
}

std::string RecordLoss::Text() const {
  std::string out = absl::StrCat(lost, " of ", written);
  if (lost == 0) return out;
  absl::StrAppend(&out, " (", LostPercentText(LostShare()), "):");
  const char* sep = " ";
  for (size_t i = 0; i < kLossCauses.size(); ++i) {
    if (by_cause[i] == 0) continue;
    const std::string_view cause = kLossCauses[i].cause;
    absl::StrAppend(&out, sep, absl::string_view(cause.data(), cause.size()), " ", by_cause[i]);
    sep = ", ";
  }
  return out;
}

RecordLoss ComputeRecordLoss(const std::function<int64_t(std::string_view)>& counter) {
  RecordLoss loss;
  for (size_t i = 0; i < kLossCauses.size(); ++i) {
    loss.by_cause[i] = std::max<int64_t>(0, counter(kLossCauses[i].counter));
    loss.lost += loss.by_cause[i];
  }
  // drained holds the last three causes already; the first four never reached it.
  loss.written = std::max<int64_t>(0, counter("drained")) + loss.by_cause[0] + loss.by_cause[1] +
                 loss.by_cause[2] + loss.by_cause[3];
  loss.written = std::max(loss.written, loss.lost);
  return loss;
}

RecordLoss ComputeRecordLoss(const std::map<std::string, int64_t>& counters) {
  return ComputeRecordLoss([&](std::string_view name) -> int64_t {
    const auto it = counters.find(std::string(name));
    return it == counters.end() ? 0 : it->second;
  });
}

RecordLoss ComputeRecordLoss(const std::vector<std::pair<std::string, int64_t>>& counters) {
  return ComputeRecordLoss([&](std::string_view name) -> int64_t {
    for (const auto& [n, v] : counters) {
      if (n == name) return v;
    }
    return 0;
  });
}

}  // namespace ticktrace::store
