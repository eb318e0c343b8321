#include "store/clickhouse/http_client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/curl_once.h"

namespace ticktrace::store {
namespace {

// The first line of a server's error body, trimmed, at most 300 chars.
std::string FirstLine(std::string_view body) {
  std::string_view line = body.substr(0, body.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.size() > 300) line = line.substr(0, 300);
  return std::string(line);
}

std::string Escape(CURL* curl, std::string_view text) {
  char* e = curl_easy_escape(curl, text.data(), static_cast<int>(text.size()));
  std::string out = e != nullptr ? e : "";
  curl_free(e);
  return out;
}

}  // namespace

HttpClientOptions HttpClientOptions::FromEnvironment(std::string host, int port) {
  HttpClientOptions o;
  o.host = std::move(host);
  o.port = port;
  if (const char* u = std::getenv("TICKTRACE_CLICKHOUSE_USER"); u != nullptr) o.user = u;
  if (const char* p = std::getenv("TICKTRACE_CLICKHOUSE_PASSWORD"); p != nullptr) o.password = p;
  return o;
}

std::string ClickHouseQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)),
      where_(absl::StrCat("clickhouse ", options_.host, ":", options_.port)) {
  InitCurlOnce();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

int HttpClient::OnProgress(void* self, int64_t, int64_t, int64_t, int64_t) {
  auto* c = static_cast<HttpClient*>(self);
  return c->abortable_now_ && c->stop_requested() ? 1 : 0;  // non-zero aborts
}

absl::StatusOr<HttpResponse> HttpClient::Post(
    std::string_view query, std::string_view body, std::string_view database,
    const std::vector<std::pair<std::string, std::string>>& settings, bool abortable) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return absl::InternalError(absl::StrCat(where_, ": curl_easy_init failed"));
  if (abortable && stop_requested()) {
    return absl::UnavailableError(absl::StrCat(where_, ": stopped"));
  }
  // IPv6 literals need brackets in a URL.
  const bool v6 = options_.host.find(':') != std::string::npos;
  std::string url = absl::StrCat("http://", v6 ? "[" : "", options_.host, v6 ? "]" : "", ":",
                                 options_.port, "/?");
  bool first = true;
  auto param = [&](std::string_view k, std::string_view v) {
    url.append(first ? "" : "&").append(k).append("=").append(Escape(curl, v));
    first = false;
  };
  if (!query.empty()) param("query", query);
  if (!database.empty()) param("database", database);
  for (const auto& [k, v] : settings) param(k, v);

  HttpResponse response;
  curl_easy_reset(curl);  // keeps the connection cache
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");  // never through an environment's proxy
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendCurlBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
  // No "Expect: 100-continue" round trip before large bodies.
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");
  headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!options_.user.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, options_.password.c_str());
  }
  // libcurl silently sends a request again when a re-used connection closes
  // without an answer: for an INSERT that duplicates what the server may
  // have applied. Non-abortable requests (INSERTs) take a new connection,
  // so a lost answer is an error the caller sees (and checks).
  if (!abortable) curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
  abortable_now_ = abortable;
  const CURLcode rc = curl_easy_perform(curl);
  abortable_now_ = false;
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
      return absl::UnavailableError(absl::StrCat(where_, ": stopped"));
    }
    return absl::UnavailableError(absl::StrCat(where_, ": ", curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

namespace {

absl::Status StatusOf(const std::string& where, const HttpResponse& r) {
  if (r.status == 200) return absl::OkStatus();
  const std::string what = absl::StrCat(where, ": HTTP ", r.status, ": ", FirstLine(r.body));
  if (r.status == 401 || r.status == 403) return absl::PermissionDeniedError(what);
  // ClickHouse says 516 (authentication failed) in its body code; older
  // servers answer 500 for everything, so a refused statement is told by
  // its exception text.
  if (r.body.find("Code: 516") != std::string::npos ||
      r.body.find("Code: 192") != std::string::npos ||  // unknown user
      r.body.find("Code: 193") != std::string::npos) {  // wrong password
    return absl::PermissionDeniedError(what);
  }
  if (r.status >= 500 && r.body.find("DB::Exception") == std::string::npos) {
    return absl::UnavailableError(what);
  }
  // A statement the server parsed and refused: retrying will not help,
  // except when it says it is shutting down or overloaded.
  if (r.body.find("Code: 210") != std::string::npos ||  // network error
      r.body.find("Code: 209") != std::string::npos ||  // socket timeout
      r.body.find("Code: 202") != std::string::npos ||  // too many simultaneous queries
      r.body.find("Code: 252") != std::string::npos ||  // too many parts
      r.body.find("Code: 159") != std::string::npos) {  // timeout exceeded
    return absl::UnavailableError(what);
  }
  return absl::InvalidArgumentError(what);
}

}  // namespace

absl::StatusOr<std::string> HttpClient::Query(std::string_view sql, std::string_view database) {
  absl::StatusOr<HttpResponse> r = Post("", sql, database, {}, /*abortable=*/true);
  if (!r.ok()) return r.status();
  if (absl::Status s = StatusOf(where_, *r); !s.ok()) return s;
  return std::move(r->body);
}

absl::Status HttpClient::Insert(std::string_view insert, std::string_view rows,
                                std::string_view database) {
  absl::StatusOr<HttpResponse> r = Post(insert, rows, database, {}, /*abortable=*/false);
  if (!r.ok()) return r.status();
  return StatusOf(where_, *r);
}

}  // namespace ticktrace::store
