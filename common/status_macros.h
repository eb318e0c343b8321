// Early-return helpers for absl::Status / absl::StatusOr. Private to the
// viewer library.
#ifndef TICKTRACE_VIEW_SRC_STATUS_MACROS_H_
#define TICKTRACE_VIEW_SRC_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TICKTRACE_CONCAT_INNER_(a, b) a##b
#define TICKTRACE_CONCAT_(a, b) TICKTRACE_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define TICKTRACE_RETURN_IF_ERROR(expr)          \
  do {                                           \
    const absl::Status ticktrace_status_ = (expr); \
    if (!ticktrace_status_.ok()) return ticktrace_status_; \
  } while (false)

// `lhs = *expr`, or returns expr's status when it is not OK.
#define TICKTRACE_ASSIGN_OR_RETURN(lhs, expr) \
  TICKTRACE_ASSIGN_OR_RETURN_IMPL_(TICKTRACE_CONCAT_(ticktrace_statusor_, __LINE__), lhs, expr)
#define TICKTRACE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  if (!tmp.ok()) return std::move(tmp).status();          \
  lhs = std::move(tmp).value()

#endif  // TICKTRACE_VIEW_SRC_STATUS_MACROS_H_
