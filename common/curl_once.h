// What the two libcurl clients (store/clickhouse/http_client.cc, the
// ClickHouse store's; common/otlp/http_exporter.cc, the OpenTelemetry
// exporter's) share: libcurl's process-wide initialisation, done once for
// both (curl_global_init is not thread-safe, and one process may run both
// clients), and the write callback that gathers a response body into a
// std::string. Header-only: only those two files include it, and they link
// libcurl; an inline function's static is one object in the whole program.

#ifndef TICKTRACE_COMMON_CURL_ONCE_H_
#define TICKTRACE_COMMON_CURL_ONCE_H_

#include <curl/curl.h>

#include <cstddef>
#include <mutex>
#include <string>

namespace ticktrace {

inline void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// CURLOPT_WRITEFUNCTION: appends to the std::string given as CURLOPT_WRITEDATA.
inline size_t AppendCurlBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_CURL_ONCE_H_
