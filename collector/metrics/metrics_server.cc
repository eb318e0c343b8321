#include "collector/metrics/metrics_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collector/metrics/prometheus_text.h"

namespace ticktrace::metrics {
namespace {

constexpr size_t kMaxRequestBytes = 8192;  // a scrape's request is a few hundred bytes

int64_t ScrapeRealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

double ScrapeProcessCpuSeconds() {
  rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return seconds(ru.ru_utime) + seconds(ru.ru_stime);
}

std::string HttpResponse(absl::string_view status, absl::string_view content_type,
                     absl::string_view body, bool head_only) {
  std::string out = absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                                 "\r\nContent-Length: ", body.size(),
                                 "\r\nConnection: close\r\n");
  if (status.substr(0, 3) == "405") out += "Allow: GET, HEAD\r\n";
  out += "\r\n";
  if (!head_only) absl::StrAppend(&out, body);
  return out;
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-listen '", text, "': ", why,
                                                   " (e.g. 127.0.0.1:9464, [::1]:9464)"));
  };
  ListenAddress a;
  absl::string_view port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad("not [IPv6]:PORT");
    }
    a.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) return bad("no port");
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) return bad("an IPv6 address needs brackets");
    port = text.substr(colon + 1);
  }
  uint32_t p = 0;
  if (port.empty() || port.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(port, &p) || p > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  a.port = static_cast<uint16_t>(p);
  return a;
}

MetricsServer::~MetricsServer() { Stop(); }

absl::Status MetricsServer::Start(const ListenAddress& address) {
  const std::string where = absl::StrCat(
      "--metrics-listen ",
      address.host.find(':') != std::string::npos ? absl::StrCat("[", address.host, "]")
                                                  : address.host,
      ":", address.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = absl::StrCat(address.port);
  const int gai = getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(),
                              service.c_str(), &hints, &res);
  if (gai != 0) return absl::InvalidArgumentError(absl::StrCat(where, ": ", gai_strerror(gai)));
  int err = 0;
  for (addrinfo* ai = res; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    // Non-blocking: AcceptClients() accepts until none is left.
    const int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      err = errno;
      close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) {
    return absl::UnavailableError(absl::StrCat(where, ": ", std::strerror(err)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    port_ = ntohs(bound.ss_family == AF_INET6
                      ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    const int e = errno;
    close(listen_fd_);
    listen_fd_ = -1;
    return absl::InternalError(absl::StrCat(where, ": eventfd: ", std::strerror(e)));
  }
  thread_ = std::thread([this] { Serve(); });
  return absl::OkStatus();
}

void MetricsServer::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void MetricsServer::Publish(const MetricsSnapshot& snapshot) {
  std::string text = RenderSnapshot(snapshot, version_, commit_);
  absl::MutexLock lock(&mu_);
  rendered_.swap(text);
  analysed_until_utc_ns_ = snapshot.analysed_until_utc_ns;
}

std::string MetricsServer::MetricsBody() {
  std::string body;
  int64_t until = 0;
  {
    absl::MutexLock lock(&mu_);
    body = rendered_;
    until = analysed_until_utc_ns_;
  }
  absl::StrAppend(&body,
                  RenderScrapeTime(until, ScrapeRealtimeNs(), ScrapeProcessCpuSeconds()));
  return body;
}

void MetricsServer::Serve() {
  // fds[0] the listening socket, fds[1] the wake eventfd, then one per
  // connection in clients_ order.
  std::vector<pollfd> fds;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    // A client past its deadline is dropped, whatever it has sent: a slow
    // sender cannot keep its slot (or the thread) by trickling bytes.
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (now >= it->deadline) {
        close(it->fd);
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
    fds.assign({{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}});
    int timeout_ms = -1;
    for (const Client& c : clients_) {
      fds.push_back({c.fd, static_cast<short>(c.reply.empty() ? POLLIN : POLLOUT), 0});
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now).count();
      const int left_ms = static_cast<int>(std::max<int64_t>(1, left));
      timeout_ms = timeout_ms < 0 ? left_ms : std::min(timeout_ms, left_ms);
    }
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (fds[1].revents & POLLIN) != 0) break;  // Stop()
    // Serve the connections first (their fds match clients_ as polled), then accept.
    size_t i = 2;
    for (auto it = clients_.begin(); it != clients_.end(); ++i) {
      const short revents = fds[i].revents;
      if (revents != 0 && !Step(*it, revents)) {
        close(it->fd);
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
    if ((fds[0].revents & POLLIN) != 0) AcceptClients();
  }
  for (const Client& c : clients_) close(c.fd);
  clients_.clear();
}

void MetricsServer::AcceptClients() {
  while (true) {
    const int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) return;  // EAGAIN: none left; ECONNABORTED, EMFILE: try again at the next poll
    if (clients_.size() >= kMaxClients) {
      // Full: the oldest connection goes (it is the nearest its deadline
      // anyway), so that idle connections cannot lock a scraper out.
      close(clients_.front().fd);
      clients_.pop_front();
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestDeadlineMs);
    clients_.push_back(Client{conn, deadline, {}, {}, 0});
  }
}

bool MetricsServer::Step(Client& c, short revents) {
  if (c.reply.empty()) {
    if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0) return true;
    char buf[1024];
    const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;  // closed or reset before a whole request
    c.request.append(buf, static_cast<size_t>(n));
    if (c.request.find("\r\n\r\n") == std::string::npos) {
      if (c.request.size() < kMaxRequestBytes) return true;
      c.reply = HttpResponse("431 Request Header Fields Too Large", "text/plain",
                             "request too large\n", false);
    } else {
      c.reply = Answer(c.request);
    }
    // Now write what fits; the rest when the socket is writable again.
  } else if ((revents & (POLLOUT | POLLHUP | POLLERR)) == 0) {
    return true;
  }
  while (c.sent < c.reply.size()) {
    const ssize_t n =
        send(c.fd, c.reply.data() + c.sent, c.reply.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;
    c.sent += static_cast<size_t>(n);
  }
  return false;  // the whole response is out: the connection closes
}

std::string MetricsServer::Answer(const std::string& request) {
  // Request line: METHOD SP TARGET SP VERSION.
  const absl::string_view line = absl::string_view(request).substr(0, request.find("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == absl::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == absl::string_view::npos) {
    return HttpResponse("400 Bad Request", "text/plain", "bad request\n", false);
  }
  const absl::string_view method = line.substr(0, sp1);
  absl::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return HttpResponse("405 Method Not Allowed", "text/plain", "GET or HEAD only\n", false);
  }
  if (target == "/metrics") {
    scrapes_.fetch_add(1, std::memory_order_relaxed);
    return HttpResponse("200 OK", "text/plain; version=0.0.4; charset=utf-8", MetricsBody(), head);
  }
  if (target == "/") {
    return HttpResponse("200 OK", "text/plain; charset=utf-8",
                        "ticktrace-collector: metrics at /metrics\n", head);
  }
  return HttpResponse("404 Not Found", "text/plain", "not found; try /metrics\n", head);
}

}  // namespace ticktrace::metrics
