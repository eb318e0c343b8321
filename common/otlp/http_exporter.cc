#include "common/otlp/http_exporter.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/curl_once.h"

namespace ticktrace::otlp {
namespace {

// The first line of a receiver's error body, trimmed, at most 200 chars.
std::string FirstLine(absl::string_view body) {
  absl::string_view line = body.substr(0, body.find('\n'));
  line = absl::StripAsciiWhitespace(line);
  if (line.size() > 200) line = line.substr(0, 200);
  std::string out(line);
  // A protobuf Status body is binary: keep the line printable.
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

bool Retryable(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<std::string> TracesUrl(std::string_view endpoint_text) {
  const absl::string_view endpoint(endpoint_text.data(), endpoint_text.size());
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint '", endpoint, "': ", why,
                     " (expected http://HOST:PORT or https://HOST:PORT[/PATH])"));
  };
  absl::string_view rest = endpoint;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return bad("not an http:// or https:// URL");
  }
  const absl::string_view authority = rest.substr(0, rest.find('/'));
  if (authority.empty() || authority.front() == ':') return bad("no host");
  for (const char c : endpoint) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == '?' || c == '#' || c == '@') {
      return bad("a space, query, fragment or credentials in the URL");
    }
  }
  if (const size_t colon = authority.rfind(':');
      colon != absl::string_view::npos && authority.find(']') == absl::string_view::npos) {
    int port = 0;
    if (!absl::SimpleAtoi(authority.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      return bad("a bad port");
    }
  }
  std::string url(endpoint);
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!absl::EndsWith(url, "/v1/traces")) url += "/v1/traces";
  return url;
}

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Create(ExporterOptions options) {
  absl::StatusOr<std::string> url = TracesUrl(options.endpoint);
  if (!url.ok()) return url.status();
  return std::unique_ptr<HttpExporter>(new HttpExporter(std::move(options), *std::move(url)));
}

HttpExporter::HttpExporter(ExporterOptions options, std::string url)
    : options_(std::move(options)), url_(std::move(url)) {
  InitCurlOnce();
  curl_ = curl_easy_init();
}

HttpExporter::~HttpExporter() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

bool HttpExporter::stopping() const {
  // Relaxed: a request to stop soon, not a handover of data.
  return options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed);
}

int HttpExporter::OnProgress(void* self, int64_t, int64_t, int64_t, int64_t) {
  return static_cast<HttpExporter*>(self)->stopping() ? 1 : 0;  // non-zero aborts
}

// "Retry-After: <seconds>" (the HTTP-date form is not honoured: backoff then).
size_t HttpExporter::OnHeader(char* data, size_t size, size_t n, void* out) {
  const absl::string_view line(data, size * n);
  Answer* answer = static_cast<Answer*>(out);
  if (line.size() > 12 && absl::EqualsIgnoreCase(line.substr(0, 12), "retry-after:")) {
    int64_t seconds = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(12)), &seconds) && seconds >= 0) {
      answer->retry_after_ms = seconds * 1000;
    }
  }
  return size * n;
}

bool HttpExporter::Wait(int64_t ms) const {
  const int64_t until = NowMs() + ms;
  while (NowMs() < until) {
    if (stopping()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(10, until - NowMs())));
  }
  return !stopping();
}

absl::StatusOr<HttpExporter::Answer> HttpExporter::PostOnce(std::string_view body) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return absl::InternalError(absl::StrCat("otlp ", url_, ": curl_easy_init failed"));
  Answer answer;
  curl_easy_reset(curl);  // keeps the connection cache
  curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");  // never through an environment's proxy
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendCurlBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
  // No "Expect: 100-continue" round trip before large bodies.
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");
  headers = curl_slist_append(headers, "Content-Type: application/x-protobuf");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (rc == CURLE_ABORTED_BY_CALLBACK) {
    return absl::CancelledError(absl::StrCat("otlp ", url_, ": stopped"));
  }
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
    return absl::FailedPreconditionError(
        absl::StrCat("otlp ", url_, ": ", curl_easy_strerror(rc)));
  }
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat("otlp ", url_, ": ", curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

absl::Status HttpExporter::Send(const EncodedBatch& batch) {
  const int64_t deadline_ms = NowMs() + options_.max_retry_total_ms;
  int64_t backoff_ms = options_.first_backoff_ms;
  while (true) {
    if (stopping()) return absl::CancelledError(absl::StrCat("otlp ", url_, ": stopped"));
    absl::StatusOr<Answer> a = PostOnce(batch.body);
    if (a.ok() && a->status >= 200 && a->status < 300) {
      ++stats_.batches;
      stats_.spans += static_cast<int64_t>(batch.spans);
      stats_.bytes += static_cast<int64_t>(batch.body.size());
      return absl::OkStatus();
    }
    if (!a.ok() && absl::IsCancelled(a.status())) return a.status();
    if (!a.ok() && absl::IsFailedPrecondition(a.status()) && !options_.retry_unreachable) {
      return absl::UnavailableError(a.status().message());
    }
    absl::Status failure =
        a.ok() ? absl::Status(absl::StatusCode::kUnavailable,
                              absl::StrCat("otlp ", url_, ": HTTP ", a->status,
                                           a->body.empty() ? "" : ": ", FirstLine(absl::string_view(a->body))))
               : a.status();
    if (a.ok() && !Retryable(a->status)) {
      const absl::StatusCode code = a->status == 401 || a->status == 403
                                        ? absl::StatusCode::kPermissionDenied
                                    : a->status >= 400 && a->status < 500
                                        ? absl::StatusCode::kInvalidArgument
                                        : absl::StatusCode::kFailedPrecondition;
      return absl::Status(code, failure.message());
    }
    // Retryable: the server's Retry-After when given, else the backoff.
    const int64_t wait_ms = a.ok() && a->retry_after_ms >= 0 ? a->retry_after_ms : backoff_ms;
    if (NowMs() + wait_ms > deadline_ms) {
      return absl::UnavailableError(absl::StrCat(failure.message(), " (gave up after ",
                                                 options_.max_retry_total_ms, " ms of retries)"));
    }
    if (!Wait(wait_ms)) return absl::CancelledError(absl::StrCat("otlp ", url_, ": stopped"));
    backoff_ms = std::min(options_.max_backoff_ms, backoff_ms * 2);
    ++stats_.retries;
  }
}

absl::Status HttpExporter::Export(const ExportRequest& request) {
  for (const EncodedBatch& b : EncodeBatches(request, options_.max_body_bytes)) {
    if (absl::Status s = Send(b); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::otlp
