// One text frame of `ticktrace-view top` (top.cc is its only caller): the
// run's latest interval beside the whole run, per stage, with records/s and
// orders/s, fitted to a terminal width. Pure: no store access here.
#ifndef TICKTRACE_VIEW_SRC_TOP_FRAME_H_
#define TICKTRACE_VIEW_SRC_TOP_FRAME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ticktrace/store/reader.h"
#include "viewer/views/summary.h"

namespace ticktrace::view::internal {

// What a frame shows.
struct TopFrame {
  Summary whole;                       // the whole run (or window)
  std::optional<int64_t> last_start_utc_ns;  // the latest interval with samples
  int64_t interval_ns = 0;
  std::vector<store::IntervalRow> last;       // its rows, one per stage
  // Rates over the time since the previous frame (or since the run began,
  // for the first); unset when no time passed.
  std::optional<double> records_per_s;
  std::optional<double> orders_per_s;
  double rate_over_s = 0;              // the time the rates are over
};

// The frame as text, every line at most `width` columns (0: no limit):
// columns are dropped from the right (the whole run's max first) and long
// stage names shortened with "…" until the table fits.
std::string RenderTopFrame(const TopFrame& frame, int width);

// Every line of `text` cut to `width` code points (0: as is), "…" last.
std::string FitToWidth(const std::string& text, int width);

// The terminal's width: $COLUMNS when set (a user's choice), else the
// TIOCGWINSZ of stdout, else 0 (not a terminal: no limit).
int TerminalColumns();

}  // namespace ticktrace::view::internal

#endif  // TICKTRACE_VIEW_SRC_TOP_FRAME_H_
