// The collector's metrics endpoint (--metrics-listen HOST:PORT): a small
// HTTP/1.1 server on a thread of its own, serving
//   GET /metrics   the Prometheus text format (prometheus_text.h)
//   GET /          a line pointing at /metrics
// and 404/405 for anything else. Every response closes its connection.
//
// Anyone local can connect, so no client may hold the others up: one poll()
// loop serves up to kMaxClients connections at once on non-blocking sockets,
// and each connection has one deadline for the whole exchange (request read
// and response written), kRequestDeadlineMs after it was accepted, that its
// bytes do not extend. A client sending a byte a second, or one that sends
// nothing, is closed at its deadline; meanwhile every other client is served
// as its bytes come. At the cap a new connection pushes out the oldest.
//
// Threads: main() calls Start() (before the collector runs) and Stop() (or
// the destructor); the analysis thread calls Publish() once per snapshot;
// the server thread answers scrapes. The latest rendered snapshot is shared
// under mu_.

#ifndef TICKTRACE_COLLECTOR_METRICS_METRICS_SERVER_H_
#define TICKTRACE_COLLECTOR_METRICS_METRICS_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "collector/metrics/metrics_snapshot.h"

namespace ticktrace::metrics {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "localhost", "" (every interface)
  uint16_t port = 0;
};

// "127.0.0.1:9464", "[::1]:9464", "localhost:9464", ":9464" (every
// interface). InvalidArgument, naming --metrics-listen, otherwise.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text);

class MetricsServer {
 public:
  static constexpr size_t kMaxClients = 64;         // connections served at once
  static constexpr int kRequestDeadlineMs = 5000;   // accept to last byte sent (Prometheus: 10 s)

  // `version`, `commit`: the build's, for ticktrace_collector_info
  // (<ticktrace/version.h>; passed in so this library need not rebuild per commit).
  MetricsServer(std::string version, std::string commit)
      : version_(std::move(version)), commit_(std::move(commit)) {}
  ~MetricsServer();  // Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and listens on `address`, then starts the server thread. An
  // error (address in use, no such host, permission) names the address.
  // REQUIRES: not started. main() only.
  absl::Status Start(const ListenAddress& address);
  // Stops the thread and closes the socket; idempotent. main() only.
  void Stop();
  // The port actually bound (the one asked for, or the kernel's pick for 0).
  uint16_t port() const { return port_; }

  // Replaces what /metrics serves. Renders the snapshot here, on the caller's
  // thread (about 1 ms for a dozen stages), so a scrape only copies a string.
  // Any thread; the collector's analysis thread once per snapshot.
  void Publish(const MetricsSnapshot& snapshot);

  // Scrapes answered so far (tests, logs). Any thread.
  uint64_t scrapes() const { return scrapes_.load(std::memory_order_relaxed); }

 private:
  // One connection of the server thread: its request so far, then its reply.
  struct Client {
    int fd;
    std::chrono::steady_clock::time_point deadline;
    std::string request;
    std::string reply;  // empty while the request is read
    size_t sent;        // bytes of reply written
  };

  void Serve();          // the server thread
  void AcceptClients();  // accepts every pending connection (server thread)
  // Reads or writes what `c` is ready for; false when its connection is done
  // (response written, peer gone). Server thread.
  bool Step(Client& c, short revents);
  // The response to one whole request.
  std::string Answer(const std::string& request);
  std::string MetricsBody();

  const std::string version_, commit_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop() writes it to end Serve()'s poll
  uint16_t port_ = 0;
  std::thread thread_;
  std::deque<Client> clients_;  // the server thread's only, oldest first
  // Relaxed: a statistic; nothing is published through it.
  std::atomic<uint64_t> scrapes_{0};

  absl::Mutex mu_;
  std::string rendered_ ABSL_GUARDED_BY(mu_);  // RenderSnapshot() of the latest Publish()
  int64_t analysed_until_utc_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ticktrace::metrics

#endif  // TICKTRACE_COLLECTOR_METRICS_METRICS_SERVER_H_
