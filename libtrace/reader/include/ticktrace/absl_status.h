// libtrace's errors (ticktrace/status.h) as Abseil's, for the collector side,
// which returns absl::Status everywhere. The codes share absl::StatusCode's
// numbering, so the conversion keeps code and message. Not for traced
// programs: this header is why ticktrace::reader, not ticktrace::trace,
// depends on Abseil. Any thread may call these.

#ifndef TICKTRACE_ABSL_STATUS_H_
#define TICKTRACE_ABSL_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/status.h"

namespace ticktrace {

inline absl::Status ToAbslStatus(const Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.code()), status.message());
}

template <typename T>
absl::StatusOr<T> ToAbslStatusOr(Result<T> result) {
  if (!result.ok()) return ToAbslStatus(result.status());
  return *std::move(result);
}

}  // namespace ticktrace

#endif  // TICKTRACE_ABSL_STATUS_H_
