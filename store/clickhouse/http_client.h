// A small HTTP client for ClickHouse's HTTP interface (libcurl), shared by
// the collector's ClickHouseWriter and the viewer's ClickHouse reader. It
// knows nothing of the schema: it POSTs a statement (and, for INSERTs, a body
// of rows) and returns what the server said.
//
//   HttpClient client(HttpClientOptions::FromEnvironment("127.0.0.1", 8123));
//   absl::StatusOr<std::string> tsv = client.Query("SELECT 1", "ticktrace");
//   absl::Status s = client.Insert("INSERT INTO t FORMAT RowBinary", rows, "ticktrace");
//
// Credentials come from the environment (TICKTRACE_CLICKHOUSE_USER and
// TICKTRACE_CLICKHOUSE_PASSWORD), never from argv, and travel as HTTP Basic
// authentication (never in the URL, so never in a server's access log).
//
// Errors (absl::Status codes the callers rely on):
//   Unavailable       the request may not have reached the server, or its
//                     answer did not reach us: connection refused or reset,
//                     timeout, a 5xx answer, or the stop flag. An INSERT that
//                     failed this way may or may not have been applied.
//   InvalidArgument   the server refused the statement (4xx or a ClickHouse
//                     exception): retrying the same request will not help.
//   PermissionDenied  401/403 (bad user or password).
// Messages are one line: "clickhouse 127.0.0.1:8123: <what>".
//
// Thread model: one thread at a time per HttpClient (one curl handle, kept
// alive across requests); RequestStop() from any thread.

#ifndef TICKTRACE_STORE_HTTP_CLIENT_H_
#define TICKTRACE_STORE_HTTP_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::store {

struct HttpClientOptions {
  std::string host = "127.0.0.1";
  int port = 8123;
  std::string user;      // empty: the server's default user
  std::string password;  // only with a user
  int64_t connect_timeout_ms = 2000;
  // A whole request (a large INSERT on a loaded server takes seconds).
  int64_t request_timeout_ms = 60000;

  // host/port as given, user and password from TICKTRACE_CLICKHOUSE_USER /
  // TICKTRACE_CLICKHOUSE_PASSWORD (unset: empty).
  static HttpClientOptions FromEnvironment(std::string host, int port);
};

struct HttpResponse {
  long status = 0;  // HTTP status
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `body` to /?query=<query>&database=<database>&<settings...>.
  // Returns the response whatever its status; Unavailable when there is
  // none (transport failure, timeout, stop). `abortable`: the stop flag
  // aborts the request in flight (never set it for an INSERT whose outcome
  // must be known: an aborted INSERT may have been applied).
  absl::StatusOr<HttpResponse> Post(std::string_view query, std::string_view body,
                                    std::string_view database,
                                    const std::vector<std::pair<std::string, std::string>>&
                                        settings = {},
                                    bool abortable = false);

  // Runs a statement sent as the body (any length) and returns the answer
  // (TSV unless the statement says FORMAT). Errors as above. Abortable by
  // the stop flag: use it for reads and idempotent statements.
  absl::StatusOr<std::string> Query(std::string_view sql, std::string_view database);

  // Runs `insert` ("INSERT INTO t FORMAT RowBinary") with `rows` as its
  // data. Not abortable: it returns when the server answered or the
  // request timed out. Sent on a new connection (never re-sent by libcurl:
  // a lost answer is Unavailable, and the caller checks what was applied).
  absl::Status Insert(std::string_view insert, std::string_view rows, std::string_view database);

  // Makes abortable requests in flight return Unavailable promptly, and
  // every later one until ClearStop(). Any thread.
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }
  void ClearStop() { stop_.store(false, std::memory_order_relaxed); }
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }

  // "clickhouse HOST:PORT", for messages.
  const std::string& where() const { return where_; }

 private:
  HttpClientOptions options_;
  std::string where_;
  void* curl_ = nullptr;  // CURL*
  // Relaxed: a flag polled by curl's progress callback; it publishes no data.
  std::atomic<bool> stop_{false};
  bool abortable_now_ = false;  // the request in flight may be aborted

  static int OnProgress(void* self, int64_t, int64_t, int64_t, int64_t);
};

// Quotes `text` as a ClickHouse string literal ('...' with \ and ' escaped).
std::string ClickHouseQuote(std::string_view text);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_HTTP_CLIENT_H_
