// A loopback OTLP/HTTP receiver for tests: an HTTP/1.1 server on
// 127.0.0.1 (a free port) that keeps every request's path, content type and
// body, and answers with a scripted status (e.g. 503 then 200), optionally
// after a delay. One connection at a time, keep-alive, on its own thread.

#ifndef TICKTRACE_TESTS_SUPPORT_OTLP_RECEIVER_H_
#define TICKTRACE_TESTS_SUPPORT_OTLP_RECEIVER_H_

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ticktrace::testing {

class OtlpReceiver {
 public:
  struct Request {
    std::string path;
    std::string content_type;
    std::string body;
    int status = 0;  // what it was answered
  };

  // Listens at once; port() is valid after the constructor. ADD_FAILURE when
  // it cannot.
  OtlpReceiver();
  ~OtlpReceiver();
  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The next requests are answered with these statuses, in order; then
  // default_status (200 unless set). A 503 or 429 carries Retry-After when
  // retry_after_s >= 0.
  void Script(std::vector<int> statuses);
  void set_default_status(int status);
  void set_retry_after_s(int seconds);
  void set_delay_ms(int ms);

  std::vector<Request> requests() const;
  // The bodies answered 2xx.
  std::vector<std::string> accepted_bodies() const;

 private:
  void Loop();
  void Serve(int fd);
  int NextStatus();

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::deque<int> script_;
  int default_status_ = 200;
  int retry_after_s_ = -1;
  int delay_ms_ = 0;
  std::vector<Request> requests_;
  std::thread thread_;
};

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_SUPPORT_OTLP_RECEIVER_H_
