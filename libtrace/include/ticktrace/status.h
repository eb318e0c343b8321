// How libtrace's cold-path calls (Init, Options, calibration, the timers)
// report an error: a Status (a code and a message with context), or a
// Result<T> holding either a value or a Status that is not ok.
//
// libtrace's own types, and the C++ standard library only: a traced program
// never compiles against ticktrace's Abseil (a firm pins its own; two copies in
// one binary are an ODR hazard). The codes keep the numbering of Abseil's
// StatusCode, so the collector side converts with a cast (ToAbslStatus in
// libtrace/reader/); the messages read as Abseil's would.
//
//   ticktrace::Status st = ticktrace::Init(options);
//   if (!st.ok()) std::fprintf(stderr, "%s\n", st.ToString().c_str());
//
//   ticktrace::Result<ticktrace::Options> o = ticktrace::Options::FromEnvironment();
//   if (!o.ok()) return o.status();
//   o->session = "mine";
//
// Neither type is used on a hot path. Any thread may use them.

#ifndef TICKTRACE_STATUS_H_
#define TICKTRACE_STATUS_H_

#include <iosfwd>
#include <optional>
#include <string>
#include <utility>

namespace ticktrace {

// What kind of error; the values are those of Abseil's StatusCode.
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

// "INVALID_ARGUMENT", ..., as Abseil spells them; "UNKNOWN" for other values.
const char* ErrorCodeName(ErrorCode code);

// Success, or an error code with a message. Default-constructed: success.
class Status {
 public:
  Status() = default;
  // REQUIRES: code != kOk (a Status with kOk and a message is still ok, and
  // drops the message).
  Status(ErrorCode code, std::string message)
      : code_(code), message_(code == ErrorCode::kOk ? std::string() : std::move(message)) {}

  bool ok() const noexcept { return code_ == ErrorCode::kOk; }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  // "OK", or "<CODE>: <message>", as Abseil prints a status.
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Writes status.ToString() (for logs and test failure messages).
std::ostream& operator<<(std::ostream& out, const Status& status);

// A value, or the error that prevented it.
template <typename T>
class Result {
 public:
  // A value (implicit, so that a function can `return value;`).
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // An error (implicit, so that a function can `return status;`).
  // REQUIRES: !status.ok(); an ok status becomes kInternal.
  Result(Status status)  // NOLINT(google-explicit-constructor)
      : status_(status.ok() ? Status(ErrorCode::kInternal, "Result made from an ok Status")
                            : std::move(status)) {}

  bool ok() const noexcept { return value_.has_value(); }
  // The error; an ok Status when there is a value.
  const Status& status() const noexcept { return status_; }

  // REQUIRES: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return *std::move(value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return *std::move(value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

  // The value, or `fallback` when there is none.
  template <typename U>
  T value_or(U&& fallback) const& {
    return value_.has_value() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace ticktrace

#endif  // TICKTRACE_STATUS_H_
