// OTLP/HTTP trace export over libcurl: an ExportRequest POSTed as
// application/x-protobuf to ENDPOINT/v1/traces, in bodies under a size
// limit (batches.h).
//
// Retries follow the OTLP/HTTP spec: 429, 502, 503 and 504 are retryable
// (the server's Retry-After, in seconds, when given; otherwise exponential
// backoff from first_backoff_ms, doubling up to max_backoff_ms), all within
// max_retry_total_ms per body; a transport failure (refused, timed out) is
// retried the same way. Any other status is final. Errors are one line
// naming the endpoint and what it said:
//   "otlp http://127.0.0.1:4318/v1/traces: HTTP 400: <first line of the body>"
//
// The stop flag (set from any thread) aborts a request in flight and any
// wait between retries within about 10 ms: the collector's exit never waits
// for a receiver.
//
// Thread model: one thread at a time per exporter (one curl handle, its
// connection kept alive across requests).

#ifndef TICKTRACE_COMMON_OTLP_HTTP_EXPORTER_H_
#define TICKTRACE_COMMON_OTLP_HTTP_EXPORTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/otlp/batches.h"
#include "common/otlp/span_model.h"

namespace ticktrace::otlp {

// The traces URL of an OTLP/HTTP endpoint: "http(s)://HOST[:PORT][/PATH]"
// with "/v1/traces" appended unless it already ends so. InvalidArgument,
// naming the text, for anything else.
absl::StatusOr<std::string> TracesUrl(std::string_view endpoint);

struct ExporterOptions {
  std::string endpoint;  // as given; TracesUrl() makes the URL
  size_t max_body_bytes = kDefaultMaxBodyBytes;
  int64_t connect_timeout_ms = 2000;
  int64_t request_timeout_ms = 10000;
  int64_t first_backoff_ms = 100;
  int64_t max_backoff_ms = 5000;
  int64_t max_retry_total_ms = 30000;
  // A receiver that refuses the connection (nothing listens) is retried like
  // a busy one; false: that is final at once (a one-off export by hand).
  bool retry_unreachable = true;
  // Set from any thread: stop now (Export returns Cancelled). May be null.
  const std::atomic<bool>* stop = nullptr;
};

// What an exporter has sent (cumulative over its calls).
struct ExportStats {
  int64_t batches = 0;  // bodies the receiver accepted
  int64_t spans = 0;    // in them
  int64_t bytes = 0;
  int64_t retries = 0;  // requests sent again after a retryable answer or failure
};

class HttpExporter {
 public:
  // InvalidArgument for a malformed endpoint (one line).
  static absl::StatusOr<std::unique_ptr<HttpExporter>> Create(ExporterOptions options);
  ~HttpExporter();
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // Sends every span of `request`, body after body; stops at the first
  // body that fails (Unavailable: retries ran out or no answer;
  // InvalidArgument / PermissionDenied / FailedPrecondition: the receiver
  // refused it; Cancelled: stopped). stats() counts what was accepted.
  absl::Status Export(const ExportRequest& request);
  // One body already encoded, holding `spans` spans.
  absl::Status Send(const EncodedBatch& batch);

  const ExportStats& stats() const { return stats_; }
  const std::string& url() const { return url_; }

 private:
  struct Answer {
    long status = 0;
    std::string body;
    int64_t retry_after_ms = -1;  // -1: not given
  };
  HttpExporter(ExporterOptions options, std::string url);
  bool stopping() const;
  // One POST; Unavailable when there was no answer.
  absl::StatusOr<Answer> PostOnce(std::string_view body);
  // Sleeps in small steps; false when stopped meanwhile.
  bool Wait(int64_t ms) const;
  static int OnProgress(void* self, int64_t, int64_t, int64_t, int64_t);
  static size_t OnHeader(char* data, size_t size, size_t n, void* answer);

  ExporterOptions options_;
  std::string url_;
  void* curl_ = nullptr;
  ExportStats stats_;
};

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_HTTP_EXPORTER_H_
