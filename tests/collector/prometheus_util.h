// What the collector's tests that talk HTTP share: one request to a
// loopback port, a free port, and a real Prometheus server (Debian's
// `prometheus`) started on loopback with a temporary config and data dir,
// scraping a collector, and queried through its HTTP API.
#ifndef TICKTRACE_TESTS_COLLECTOR_PROMETHEUS_UTIL_H_
#define TICKTRACE_TESTS_COLLECTOR_PROMETHEUS_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"

namespace ticktrace::collect::testing {

struct HttpReply {
  int status = 0;  // 0: no connection or no reply
  std::string body;
};

// One HTTP/1.0 request to 127.0.0.1:`port` (the server closes after it).
inline HttpReply Http(uint16_t port, const std::string& method, const std::string& target) {
  HttpReply r;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return r;
  }
  const std::string req = method + " " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return r;
  }
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<size_t>(n));
  close(fd);
  std::smatch m;
  if (std::regex_search(all, m, std::regex("^HTTP/1\\.[01] ([0-9]{3})"))) {
    r.status = std::stoi(m[1]);
  }
  const size_t body = all.find("\r\n\r\n");
  if (body != std::string::npos) r.body = all.substr(body + 4);
  return r;
}

inline std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// A port nobody listens on right now (the kernel's pick, released again).
inline uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// The value of the one sample line `line_prefix` (e.g. `foo{a="b"} `) in `text`.
inline std::optional<double> SampleValue(const std::string& text,
                                         const std::string& line_prefix) {
  const size_t at = text.find("\n" + line_prefix);
  if (at == std::string::npos) return std::nullopt;
  const size_t v = at + 1 + line_prefix.size();
  return std::stod(text.substr(v, text.find('\n', v) - v));
}

// Starts a Prometheus server on 127.0.0.1:`prom_port` (a temporary config
// and data dir in `dir`) that scrapes the collector at `collector_port`
// every second. Its log: dir/prometheus.log.
inline pid_t StartPrometheus(const std::string& prometheus, const TempDir& dir,
                             uint16_t collector_port, uint16_t prom_port) {
  const std::string config = dir.File("prometheus.yml");
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                           "scrape_configs:\n  - job_name: ticktrace\n    static_configs:\n"
                           "      - targets: ['127.0.0.1:"
                        << collector_port << "']\n";
  return Spawn({prometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir.File("data"),
                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
               dir.File("prometheus.log"));
}

// The value of `promql` as the Prometheus at `prom_port` answers it;
// nullopt until it answers with exactly one series.
inline std::optional<double> PromQuery(uint16_t prom_port, const std::string& promql) {
  const HttpReply r = Http(prom_port, "GET", "/api/v1/query?query=" + UrlEncode(promql));
  if (r.status != 200) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return std::nullopt;
  const auto& result = j["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

// Waits until the collector whose output goes to `log_path` has started
// (its settings line, "order timeout ...") and said where its /metrics
// listens; that port, or 0 when it did not within `timeout`.
inline uint16_t WaitMetricsPort(const std::string& log_path,
                                std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  uint16_t port = 0;
  WaitFor(
      [&] {
        std::smatch m;
        const std::string log = ReadFile(log_path);
        if (log.find("order timeout") == std::string::npos) return false;
        if (!std::regex_search(log, m, std::regex("metrics at http://127\\.0\\.0\\.1:([0-9]+)/"))) {
          return false;
        }
        port = static_cast<uint16_t>(std::stoi(m[1]));
        return true;
      },
      timeout);
  return port;
}

inline std::string FindPrometheus() {
  for (const char* p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_PROMETHEUS_UTIL_H_
