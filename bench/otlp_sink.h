// A loopback OTLP/HTTP receiver for the benches: accepts the collector's
// POSTs to /v1/traces and answers 200 at once, counting requests and body
// bytes. It runs on its own thread in the bench's process, so its CPU is not
// the collector's: what a bench measures with it is the collector's cost of
// pushing, not a receiver's. One connection at a time (the collector's
// exporter keeps one alive), HTTP/1.1 with Content-Length bodies only.

#ifndef TICKTRACE_BENCH_OTLP_SINK_H_
#define TICKTRACE_BENCH_OTLP_SINK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

namespace ticktrace::bench {

class OtlpSink {
 public:
  OtlpSink() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        listen(listen_fd_, 4) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~OtlpSink() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  OtlpSink(const OtlpSink&) = delete;
  OtlpSink& operator=(const OtlpSink&) = delete;

  // 0 when it could not listen.
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint64_t requests() const { return requests_.load(); }
  uint64_t body_bytes() const { return body_bytes_.load(); }

 private:
  // Waits up to 100 ms for `fd` to be readable; false on stop.
  bool Readable(int fd) {
    while (!stop_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) return true;
    }
    return false;
  }
  void Loop() {
    while (Readable(listen_fd_)) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Serve(fd);
      close(fd);
    }
  }
  // Requests on one connection until it closes: headers, then Content-Length
  // bytes of body, then "200 OK".
  void Serve(int fd) {
    std::string in;
    char buf[65536];
    while (true) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        if (!Readable(fd)) return;
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      size_t length = 0;
      const size_t at = in.find("Content-Length:");
      if (at != std::string::npos && at < end) length = std::strtoull(in.c_str() + at + 15, nullptr, 10);
      const size_t whole = end + 4 + length;
      while (in.size() < whole) {
        if (!Readable(fd)) return;
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      in.erase(0, whole);
      requests_.fetch_add(1);
      body_bytes_.fetch_add(length);
      static const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      if (write(fd, kOk, sizeof(kOk) - 1) != static_cast<ssize_t>(sizeof(kOk) - 1)) return;
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> body_bytes_{0};
  std::thread thread_;
};

}  // namespace ticktrace::bench

#endif  // TICKTRACE_BENCH_OTLP_SINK_H_
