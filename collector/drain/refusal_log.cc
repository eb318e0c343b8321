#include "collector/drain/refusal_log.h"

#include <algorithm>
#include <ostream>
#include <string>

namespace ticktrace::collect {
namespace {

// 1609 -> "1,609".
std::string WithThousands(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

void RefusalLog::Line(std::string_view line, std::chrono::steady_clock::time_point now) {
  Tick(now);
  if (!open_) {
    open_ = true;
    window_start_ = now;
    lines_ = held_back_ = 0;
  }
  if (lines_ < kLinesPerWindow) {
    ++lines_;
    *out_ << line;
    return;
  }
  ++held_back_;
  ++held_back_total_;
}

void RefusalLog::Tick(std::chrono::steady_clock::time_point now) {
  if (open_ && now - window_start_ >= kWindow) Flush(now);
}

void RefusalLog::Flush(std::chrono::steady_clock::time_point now) {
  if (!open_) return;
  open_ = false;
  if (held_back_ == 0) return;
  // Whole seconds, rounded up: a window cut short says how short.
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(
      std::min<std::chrono::steady_clock::duration>(now - window_start_, kWindow));
  *out_ << "ticktrace-collector: ... and " << WithThousands(held_back_)
        << " more refusals in the last " << std::max<int64_t>(1, seconds.count())
        << " s (each counted: segments_foreign, segments_oversized, segments_unreadable, "
           "segments_corrupt)\n"
        << std::flush;
  held_back_ = 0;
}

}  // namespace ticktrace::collect
