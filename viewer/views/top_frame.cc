#include "viewer/views/top_frame.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "viewer/format/format_units.h"
#include "viewer/format/text_table.h"
#include "viewer/views/losses_view.h"

namespace ticktrace::view::internal {
namespace {

std::string Rate(std::optional<double> per_s) {
  if (!per_s.has_value()) return "-";
  const double v = *per_s;
  if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1fk", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

// `text` cut to `width` code points, the last one "…".
std::string Shorten(const std::string& text, size_t width) {
  if (DisplayWidth(text) <= width || width == 0) return text;
  std::string out;
  size_t points = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xc0) != 0x80) {
      if (points + 1 == width) break;
      ++points;
    }
    out += text[i];
  }
  return out + "…";
}

// A line cut to `width` (0: as is).
std::string Fit(const std::string& line, int width) {
  return width > 0 ? Shorten(line, static_cast<size_t>(width)) : line;
}

// The stage table's columns: stage, then the latest interval's
// count/p50/p99/max, then the whole run's; dropped from the right in this
// order when too wide.
struct Column {
  const char* header;
  int drop_rank;  // higher: dropped first
};
constexpr Column kColumns[] = {
    {"stage", 0},   {"last n", 5}, {"p50", 1},     {"p99", 2},     {"max", 6},
    {"run n", 7},   {"run p50", 3}, {"run p99", 4}, {"run max", 8}};
constexpr size_t kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

std::vector<std::vector<std::string>> StageRows(const TopFrame& frame) {
  std::map<std::string, const store::IntervalRow*> last_of;
  for (const store::IntervalRow& r : frame.last) last_of[r.stage] = &r;
  std::vector<std::vector<std::string>> rows;
  for (const SummaryStage& st : frame.whole.stages) {
    const auto it = last_of.find(st.stage);
    const store::IntervalRow* l = it == last_of.end() ? nullptr : it->second;
    rows.push_back({st.stage, l ? absl::StrCat(l->count) : "-",
                    l ? FormatDurationNs(l->p50_ns) : "-", l ? FormatDurationNs(l->p99_ns) : "-",
                    l ? FormatDurationNs(l->max_ns) : "-", absl::StrCat(st.stats.count),
                    FormatDurationNs(st.stats.p50_ns), FormatDurationNs(st.stats.p99_ns),
                    FormatDurationNs(st.stats.max_ns)});
  }
  return rows;
}

// The kept columns; stage names cut to `stage_width` (0: whole).
std::string RenderStageTable(const std::vector<std::vector<std::string>>& rows,
                             const std::vector<bool>& keep, size_t stage_width) {
  std::vector<std::string> header;
  for (size_t c = 0; c < kColumnCount; ++c) {
    if (keep[c]) header.push_back(kColumns[c].header);
  }
  TextTable table(header);
  for (const auto& row : rows) {
    std::vector<std::string> cells;
    for (size_t c = 0; c < kColumnCount; ++c) {
      if (keep[c]) cells.push_back(c == 0 ? Shorten(row[c], stage_width) : row[c]);
    }
    table.AddRow(std::move(cells));
  }
  return table.Render();
}

size_t WidestLine(const std::string& text) {
  size_t w = 0;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    w = std::max(w, DisplayWidth(text.substr(start, end - start)));
  }
  return w;
}

// The table within `width` (0: as is): columns dropped by rank, then the
// stage names shortened (to 8 columns at the least). `keep` says which stayed.
std::string FitStageTable(const std::vector<std::vector<std::string>>& rows, int width,
                          std::vector<bool>* keep) {
  keep->assign(kColumnCount, true);
  std::string table = RenderStageTable(rows, *keep, 0);
  const auto too_wide = [&] { return width > 0 && WidestLine(table) > static_cast<size_t>(width); };
  for (int rank = 8; too_wide() && rank >= 1; --rank) {
    for (size_t c = 0; c < kColumnCount; ++c) {
      if (kColumns[c].drop_rank == rank) (*keep)[c] = false;
    }
    table = RenderStageTable(rows, *keep, 0);
  }
  for (size_t stage_width = 40; too_wide() && stage_width >= 8; stage_width -= 4) {
    table = RenderStageTable(rows, *keep, stage_width);
  }
  return table;
}

}  // namespace

std::string RenderTopFrame(const TopFrame& frame, int width) {
  const Summary& s = frame.whole;
  const store::RunRow& run = s.run;
  std::string out;
  const auto line = [&](const std::string& text) { absl::StrAppend(&out, Fit(text, width), "\n"); };
  // First: what the figures below do not include.
  std::string lost = RecordsLostLine(store::ComputeRecordLoss(s.counters));
  lost.pop_back();  // its newline: line() adds one
  line(lost);
  line(absl::StrCat("run ", run.run_id, "  session ", run.session, "  host ", run.host,
                    run.ended_utc_ns.has_value() ? "  ended" : "  running"));
  line(absl::StrCat("records/s ", Rate(frame.records_per_s), "  orders/s ",
                    Rate(frame.orders_per_s),
                    frame.rate_over_s > 0 ? absl::StrFormat("  (over %.1f s)", frame.rate_over_s)
                                          : ""));
  const auto counter = [&](const char* name) { return CounterValue(s, name); };
  line(absl::StrCat("drained ", counter("drained"), "  dropped ", counter("dropped"),
                    "  orders complete ", counter("orders_complete"), "  incomplete ",
                    counter("orders_incomplete"), "  fanned out ", counter("orders_fanned_out")));
  if (!s.filters.empty()) line(absl::StrCat("filters: ", s.filters));

  std::vector<bool> keep;
  const std::string table = FitStageTable(StageRows(frame), width, &keep);
  const bool shows_last = keep[1] || keep[2] || keep[3] || keep[4];
  if (frame.last_start_utc_ns.has_value() && shows_last) {
    line(absl::StrCat("last: the interval from ", FormatUtcNs(*frame.last_start_utc_ns), " (",
                      FormatDurationNs(static_cast<double>(frame.interval_ns)),
                      ", still filling while the run goes on); run: the whole run"));
  } else if (shows_last) {
    line("last: no interval statistics yet; run: the whole run");
  }
  size_t start = 0;
  for (size_t end; (end = table.find('\n', start)) != std::string::npos; start = end + 1) {
    line(table.substr(start, end - start));
  }
  if (s.stages.empty()) line("(no samples yet)");
  return out;
}

std::string FitToWidth(const std::string& text, int width) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    out += Fit(text.substr(start, end - start), width);
    if (newline) out += '\n';
    start = end + 1;
  }
  return out;
}

int TerminalColumns() {
  if (const char* text = std::getenv("COLUMNS"); text != nullptr) {
    int columns = 0;
    if (absl::SimpleAtoi(text, &columns) && columns > 0) return columns;
  }
  struct winsize ws = {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

}  // namespace ticktrace::view::internal
