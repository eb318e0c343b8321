#include "otlp_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace ticktrace::testing {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads into `buf` until it holds `n` bytes; false on EOF, error or stop.
bool ReadAtLeast(int fd, std::string* buf, size_t n, const std::atomic<bool>& stop) {
  char chunk[65536];
  while (buf->size() < n) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, 50);
    if (stop.load()) return false;
    if (r <= 0) continue;
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got <= 0) return false;
    buf->append(chunk, static_cast<size_t>(got));
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

}  // namespace

OtlpReceiver::OtlpReceiver() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "OtlpReceiver: cannot listen on 127.0.0.1: " << std::strerror(errno);
    return;
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Loop(); });
}

OtlpReceiver::~OtlpReceiver() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void OtlpReceiver::Script(std::vector<int> statuses) {
  std::lock_guard lock(mu_);
  script_.assign(statuses.begin(), statuses.end());
}
void OtlpReceiver::set_default_status(int status) {
  std::lock_guard lock(mu_);
  default_status_ = status;
}
void OtlpReceiver::set_retry_after_s(int seconds) {
  std::lock_guard lock(mu_);
  retry_after_s_ = seconds;
}
void OtlpReceiver::set_delay_ms(int ms) {
  std::lock_guard lock(mu_);
  delay_ms_ = ms;
}

std::vector<OtlpReceiver::Request> OtlpReceiver::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::vector<std::string> OtlpReceiver::accepted_bodies() const {
  std::vector<std::string> out;
  for (const Request& r : requests()) {
    if (r.status >= 200 && r.status < 300) out.push_back(r.body);
  }
  return out;
}

int OtlpReceiver::NextStatus() {
  std::lock_guard lock(mu_);
  if (script_.empty()) return default_status_;
  const int s = script_.front();
  script_.pop_front();
  return s;
}

void OtlpReceiver::Loop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    ::close(fd);
  }
}

// Requests on one connection until the client closes it.
void OtlpReceiver::Serve(int fd) {
  std::string buf;
  while (!stop_.load()) {
    size_t head_end;
    while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadAtLeast(fd, &buf, buf.size() + 1, stop_)) return;
    }
    const std::string head = buf.substr(0, head_end);
    Request r;
    const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    r.path = head.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t content_length = 0;
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos
                                                                              : next - pos - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        const std::string name = Lower(line.substr(0, colon));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        if (name == "content-length") content_length = std::strtoull(value.c_str(), nullptr, 10);
        if (name == "content-type") r.content_type = value;
      }
      pos = next;
    }
    if (!ReadAtLeast(fd, &buf, head_end + 4 + content_length, stop_)) return;
    r.body = buf.substr(head_end + 4, content_length);
    buf.erase(0, head_end + 4 + content_length);
    r.status = NextStatus();
    int delay_ms, retry_after_s;
    {
      std::lock_guard lock(mu_);
      delay_ms = delay_ms_;
      retry_after_s = retry_after_s_;
      requests_.push_back(r);
    }
    for (int waited = 0; waited < delay_ms && !stop_.load(); waited += 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string body = r.status == 400 ? "bad request: test says no" : "";
    std::string answer = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) +
                         "\r\nContent-Type: " +
                         (r.status == 400 ? "text/plain" : "application/x-protobuf") +
                         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    if ((r.status == 503 || r.status == 429) && retry_after_s >= 0) {
      answer += "Retry-After: " + std::to_string(retry_after_s) + "\r\n";
    }
    answer += "\r\n" + body;
    if (::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) < 0) return;
  }
}

}  // namespace ticktrace::testing
