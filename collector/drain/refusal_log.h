// The drainer's lines about refused segments, rate-limited. Another local
// user can create segment files faster than anyone can read about them
// (hundreds of names, renamed every second): each refusal is counted in the
// drainer's counters whatever happens here, but at most kLinesPerWindow
// lines go out per kWindow; the rest are summed up in one line when the
// window is over:
//   ticktrace-collector: ... and 1,609 more refusals in the last 10 s
// So in T seconds the log gets at most (kLinesPerWindow + 1) * ceil(T / kWindow)
// refusal lines, plus one at the end for a window cut short.
//
// Not thread-safe: the drainer's (drain thread's) own.

#ifndef TICKTRACE_COLLECTOR_DRAIN_REFUSAL_LOG_H_
#define TICKTRACE_COLLECTOR_DRAIN_REFUSAL_LOG_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace ticktrace::collect {

class RefusalLog {
 public:
  static constexpr uint64_t kLinesPerWindow = 10;
  static constexpr std::chrono::seconds kWindow{10};

  // `out`: where lines go (the drainer's log stream); kept, not owned.
  explicit RefusalLog(std::ostream* out) : out_(out) {}
  // Says how many were held back in the window in progress, if any.
  ~RefusalLog() { Flush(std::chrono::steady_clock::now()); }
  RefusalLog(const RefusalLog&) = delete;
  RefusalLog& operator=(const RefusalLog&) = delete;

  // Writes `line` (one line, with its newline) unless this window already
  // had its kLinesPerWindow lines; then it is only counted.
  void Line(std::string_view line, std::chrono::steady_clock::time_point now);
  // Ends the window if it is over (call it often: the drainer does at each
  // discovery), writing the count of what it held back.
  void Tick(std::chrono::steady_clock::time_point now);
  // Ends the window now, whatever its age.
  void Flush(std::chrono::steady_clock::time_point now);

  uint64_t held_back_total() const { return held_back_total_; }  // tests

 private:
  std::ostream* out_;
  bool open_ = false;  // a window is in progress
  std::chrono::steady_clock::time_point window_start_{};
  uint64_t lines_ = 0;      // written in this window
  uint64_t held_back_ = 0;  // counted, not written, in this window
  uint64_t held_back_total_ = 0;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_DRAIN_REFUSAL_LOG_H_
