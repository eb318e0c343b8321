// The report in a real browser: a real demo run (collector + the three
// pipeline programs) writes a store, `ticktrace-view report` turns it into
// HTML, and headless Chromium loads it. The page must load without console
// errors (no script runs, and the Content-Security-Policy forbids fetching
// anything, so any console line is a failure), every section id must be in
// the rendered DOM, the screenshot must show a page, not a blank, and the
// breakdown table must fit its card at 1400 px (measured in the laid-out page).
//
// Skips, saying why, only when /usr/bin/chromium is not installed (CI
// installs Debian's `chromium`) or the demo programs were not built.
// Labelled `browser` in CMake.
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "viewer/html/report_model.h"
#include "ticktrace/store/reader.h"
#include "viewer/views/summary.h"

namespace {

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr int kWidth = 1400;
constexpr int kHeight = 2400;

std::string BinDir() { return std::string(TICKTRACE_BINARY_DIR) + "/bin"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `command` through the shell with a time limit; returns its exit status.
int RunShell(const std::string& command, int timeout_s) {
  const std::string line = absl::StrCat("timeout -k 5 ", timeout_s, " ", command);
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A decoded PNG (8-bit RGB or RGBA, non-interlaced: what Chromium writes).
struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
};

uint32_t BigEndian32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<uint8_t>(s[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) |
         uint32_t{static_cast<uint8_t>(s[at + 3])};
}

int Paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a);
  const int pb = std::abs(p - b);
  const int pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// Decodes `png`, or returns nullopt with `error` set.
std::optional<Image> DecodePng(const std::string& png, std::string* error) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (png.size() < 33 || png.compare(0, 8, kSignature, 8) != 0) {
    *error = "not a PNG";
    return std::nullopt;
  }
  Image img;
  std::string idat;
  int bit_depth = 0;
  int colour_type = 0;
  int interlace = 0;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = BigEndian32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + length > png.size()) break;
    if (type == "IHDR") {
      img.width = BigEndian32(png, at + 8);
      img.height = BigEndian32(png, at + 12);
      bit_depth = static_cast<uint8_t>(png[at + 16]);
      colour_type = static_cast<uint8_t>(png[at + 17]);
      interlace = static_cast<uint8_t>(png[at + 20]);
    } else if (type == "IDAT") {
      idat += png.substr(at + 8, length);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (bit_depth != 8 || (colour_type != 2 && colour_type != 6) || interlace != 0) {
    *error = absl::StrCat("unsupported PNG: depth ", bit_depth, ", colour type ", colour_type,
                          ", interlace ", interlace);
    return std::nullopt;
  }
  img.channels = colour_type == 6 ? 4 : 3;
  const size_t stride = static_cast<size_t>(img.width) * img.channels;
  std::vector<uint8_t> raw((stride + 1) * img.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_size != raw.size()) {
    *error = "PNG image data does not inflate to its size";
    return std::nullopt;
  }
  img.pixels.resize(stride * img.height);
  const int bpp = img.channels;
  for (size_t y = 0; y < img.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &img.pixels[y * stride];
    const uint8_t* up = y > 0 ? &img.pixels[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(bpp) ? out[x - bpp] : 0;
      const int b = up != nullptr ? up[x] : 0;
      const int c = (up != nullptr && x >= static_cast<size_t>(bpp)) ? up[x - bpp] : 0;
      int v = in[x];
      switch (filter) {
        case 0:
          break;
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4:
          v += Paeth(a, b, c);
          break;
        default:
          *error = absl::StrCat("bad PNG filter ", int{filter});
          return std::nullopt;
      }
      out[x] = static_cast<uint8_t>(v);
    }
  }
  return img;
}

// The lines of Chromium's --enable-logging=stderr output that a page's
// console produced ("...:INFO:CONSOLE:12] \"Uncaught Error: ...\"", with
// CONSOLE(12) in older versions), or that report a blocked load or script.
std::vector<std::string> ConsoleLines(const std::string& log) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, ":CONSOLE") || absl::StrContains(line, "Uncaught") ||
        absl::StrContains(line, "Refused to") ||
        absl::StrContains(line, "Content Security Policy")) {
      lines.emplace_back(line);
    }
  }
  return lines;
}

class ReportBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ticktrace-report-test.XXXXXX";
    const char* dir = mkdtemp(tmpl);
    ASSERT_NE(dir, nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Chromium with the flags a root, sandbox-less, offline CI box needs.
  std::string Chromium(const std::string& extra) const {
    return absl::StrCat(kChromium,
                        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                        " --disable-background-networking --disable-component-update"
                        " --disable-sync --hide-scrollbars --user-data-dir=",
                        dir_, "/profile-", ++profiles_, " ", extra);
  }

  std::string dir_;
  mutable int profiles_ = 0;
};

TEST_F(ReportBrowserTest, DemoRunReportRendersInChromium) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP() << kChromium << " is not installed (apt-get install chromium); CI installs it";
  }
  for (const char* program :
       {"ticktrace-demo", "ticktrace-collector", "ticktrace-view", "ticktrace-example-feed",
        "ticktrace-example-strategy", "ticktrace-example-gateway"}) {
    if (access((BinDir() + "/" + program).c_str(), X_OK) != 0) {
      GTEST_SKIP() << program << " is not built";
    }
  }

  // A real run, small: a few thousand ticks over about 2 s (intervals of
  // 1 s: the plots over time get 2 or 3 points).
  const std::string db = dir_ + "/demo.db";
  const std::string session = absl::StrCat("report-browser-", getpid());
  ASSERT_EQ(RunShell(absl::StrCat(BinDir(), "/ticktrace-demo --session ", session, " --db ", db,
                                  " --bin-dir ", BinDir(), " --ticks 8000 --rate 4000 > ", dir_,
                                  "/demo.log 2>&1"),
                     120),
            0)
      << ReadAll(dir_ + "/demo.log");

  const std::string html = dir_ + "/report.html";
  ASSERT_EQ(RunShell(absl::StrCat(BinDir(), "/ticktrace-view report --db ", db, " --out ", html,
                                  " > ", dir_, "/view.log 2>&1"),
                     60),
            0)
      << ReadAll(dir_ + "/view.log");
  EXPECT_NE(ReadAll(dir_ + "/view.log").find("-> " + html), std::string::npos)
      << ReadAll(dir_ + "/view.log");
  // Without --force an existing report stays as it is.
  const std::string before = ReadAll(html);
  EXPECT_NE(RunShell(absl::StrCat(BinDir(), "/ticktrace-view report --db ", db, " --out ", html,
                                  " > ", dir_, "/again.log 2>&1"),
                     60),
            0);
  EXPECT_EQ(ReadAll(html), before);

  // The DOM after rendering: every section.
  const std::string url = "file://" + html;
  ASSERT_EQ(RunShell(Chromium(absl::StrCat("--dump-dom ", url, " > ", dir_, "/dom.html 2> ", dir_,
                                           "/dom.err")),
                     120),
            0)
      << ReadAll(dir_ + "/dom.err");
  const std::string dom = ReadAll(dir_ + "/dom.html");
  std::vector<std::string> ids = {"run-header",       "breakdown",      "median-stack",
                                  "median-mean",      "over-time",      "time-median-band",
                                  "time-mean-band",   "interval-slowest", "interval-1",
                                  "stages",           "slowest",        "slowest-1",
                                  "flags"};
  // Every stage of the run (as the viewer reads them) has both plots.
  auto store = ticktrace::store::StoreReader::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  auto summary = ticktrace::view::BuildSummary(**store, ticktrace::view::QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_GE(summary->stages.size(), 5u) << "the demo's pipeline has more stages";
  for (const ticktrace::view::SummaryStage& stage : summary->stages) {
    const std::string slug = ticktrace::view::StageSlug(stage.stage);
    ids.push_back(absl::StrCat("stage-", slug, "-histogram"));
    ids.push_back(absl::StrCat("stage-", slug, "-percentiles"));
    ids.push_back(absl::StrCat("time-", slug));
  }
  for (const std::string& id : ids) {
    EXPECT_NE(dom.find(absl::StrCat("id=\"", id, "\"")), std::string::npos)
        << "no element with id " << id << " in the rendered DOM";
  }
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  // The total's plot over time, as rendered: p50, p99 and max lines of two
  // points or more (one per interval), and each red max point links to its
  // interval's slowest orders, a row that exists and lists order ids.
  {
    const size_t at = dom.find("id=\"time-total\"");
    ASSERT_NE(at, std::string::npos);
    const std::string svg = dom.substr(at, dom.find("</svg>", at) - at);
    for (const char* line : {"p50", "p99", "max"}) {
      const std::string cls = absl::StrCat("class=\"line ", line, "\"");
      const size_t l = svg.find(cls);
      ASSERT_NE(l, std::string::npos) << "no " << line << " line in the time plot";
      const size_t p = svg.find("points=\"", l) + 8;
      const std::vector<std::string> points =
          absl::StrSplit(svg.substr(p, svg.find('"', p) - p), ' ', absl::SkipEmpty());
      EXPECT_GE(points.size(), 2u) << line << " line: " << svg.substr(l, 300);
    }
    const size_t link = svg.find("<a href=\"#interval-");
    ASSERT_NE(link, std::string::npos) << "no link from the time plot";
    const size_t hash = svg.find('#', link) + 1;
    const std::string anchor = svg.substr(hash, svg.find('"', hash) - hash);
    const size_t row = dom.find(absl::StrCat("<tr id=\"", anchor, "\""));
    ASSERT_NE(row, std::string::npos) << anchor;
    EXPECT_NE(dom.substr(row, dom.find("</tr>", row) - row).find("class=\"mono\""),
              std::string::npos)
        << "the interval's row lists no order: " << dom.substr(row, 400);
  }

  // The screenshot, with the console on stderr.
  const std::string png_path = dir_ + "/report.png";
  const std::string log_path = dir_ + "/chromium.log";
  ASSERT_EQ(RunShell(Chromium(absl::StrCat("--enable-logging=stderr --v=0 --screenshot=", png_path,
                                           " --window-size=", kWidth, ",", kHeight, " ", url,
                                           " > /dev/null 2> ", log_path)),
                     120),
            0)
      << ReadAll(log_path);
  const std::vector<std::string> console_errors = ConsoleLines(ReadAll(log_path));
  EXPECT_TRUE(console_errors.empty()) << absl::StrJoin(console_errors, "\n");

  // The scan above can fail: a page that throws is caught by it.
  const std::string bad = dir_ + "/throws.html";
  std::ofstream(bad) << "<!DOCTYPE html><title>t</title><script>throw new Error('boom')</script>";
  ASSERT_EQ(RunShell(Chromium(absl::StrCat("--enable-logging=stderr --v=0 --dump-dom file://", bad,
                                           " > /dev/null 2> ", dir_, "/throws.log")),
                     120),
            0);
  EXPECT_FALSE(ConsoleLines(ReadAll(dir_ + "/throws.log")).empty())
      << "the console scan missed an uncaught error: " << ReadAll(dir_ + "/throws.log");

  std::string error;
  const std::optional<Image> image = DecodePng(ReadAll(png_path), &error);
  ASSERT_TRUE(image.has_value()) << png_path << ": " << error;
  EXPECT_EQ(image->width, static_cast<uint32_t>(kWidth));
  EXPECT_EQ(image->height, static_cast<uint32_t>(kHeight));
  // Not blank: many distinct colours (the stage palette, text, grey grid)
  // and a real share of non-background pixels, with visible variance.
  std::vector<bool> seen(1 << 15);
  int64_t distinct = 0;
  int64_t dark = 0;
  double sum = 0;
  double sum_sq = 0;
  const size_t n = static_cast<size_t>(image->width) * image->height;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &image->pixels[i * image->channels];
    const int key = ((p[0] >> 3) << 10) | ((p[1] >> 3) << 5) | (p[2] >> 3);
    if (!seen[key]) {
      seen[key] = true;
      ++distinct;
    }
    const double luma = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    if (luma < 160) ++dark;
    sum += luma;
    sum_sq += luma * luma;
  }
  const double mean = sum / static_cast<double>(n);
  const double stddev = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean));
  EXPECT_GT(distinct, 50) << "the screenshot looks blank: " << distinct << " colours";
  EXPECT_GT(static_cast<double>(dark) / static_cast<double>(n), 0.01)
      << "almost nothing drawn: " << dark << " dark pixels";
  EXPECT_GT(stddev, 8.0) << "the screenshot is nearly uniform (luma stddev " << stddev << ")";
  std::cerr << "report " << html << ", screenshot " << png_path << ": " << distinct << " colours, "
            << dark << " dark pixels, luma stddev " << stddev << "\n";

  // The breakdown table fits its card at kWidth: a copy of the page without
  // its Content-Security-Policy gets a script that measures the laid-out
  // table (the same window size as the screenshot) and writes the figures
  // into the DOM that --dump-dom prints.
  std::string measured_page = ReadAll(html);
  const size_t csp = measured_page.find("<meta http-equiv=\"Content-Security-Policy\"");
  ASSERT_NE(csp, std::string::npos);
  measured_page.erase(csp, measured_page.find('>', csp) + 1 - csp);
  const size_t body_end = measured_page.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  measured_page.insert(body_end, R"js(<script>
(() => {
  const card = document.getElementById('breakdown');
  const table = card.querySelector('table');
  const cs = getComputedStyle(card);
  const inner = card.getBoundingClientRect().right - parseFloat(cs.paddingRight) -
      parseFloat(cs.borderRightWidth);
  const out = ['card_inner_right ' + Math.round(inner),
               'table_right ' + Math.round(table.getBoundingClientRect().right)];
  for (const td of table.querySelectorAll('td.confidence')) {
    out.push('confidence_right ' + Math.round(td.getBoundingClientRect().right));
  }
  for (const a of table.querySelectorAll('td.stage a')) {
    out.push('stage_lines ' + a.getClientRects().length + ' ' + a.textContent);
  }
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
</script>
)js");
  const std::string measured_html = dir_ + "/measured.html";
  std::ofstream(measured_html) << measured_page;
  ASSERT_EQ(RunShell(Chromium(absl::StrCat("--window-size=", kWidth, ",", kHeight,
                                           " --dump-dom file://", measured_html, " > ", dir_,
                                           "/measured.dom 2> ", dir_, "/measured.err")),
                     120),
            0)
      << ReadAll(dir_ + "/measured.err");
  const std::string measured_dom = ReadAll(dir_ + "/measured.dom");
  const std::string pre_tag = "<pre id=\"measured\">";
  const size_t pre = measured_dom.find(pre_tag);
  ASSERT_NE(pre, std::string::npos) << "the measuring script did not run";
  const size_t figures_at = pre + pre_tag.size();
  int64_t inner_right = -1, table_right = -1, confidence_cells = 0, stage_cells = 0;
  for (absl::string_view line : absl::StrSplit(
           measured_dom.substr(figures_at, measured_dom.find("</pre>", pre) - figures_at),
           '\n')) {
    const std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(' ', 2));
    if (f.size() < 2) continue;
    const int64_t v = std::stoll(f[1]);
    if (f[0] == "card_inner_right") inner_right = v;
    if (f[0] == "table_right") table_right = v;
    if (f[0] == "confidence_right") {
      ++confidence_cells;
      EXPECT_LE(v, inner_right + 1) << "a confidence cell is clipped by the card: " << line;
    }
    if (f[0] == "stage_lines") {
      ++stage_cells;
      EXPECT_EQ(v, 1) << "a stage name wraps: " << line;
    }
  }
  EXPECT_GT(inner_right, 0);
  EXPECT_LE(table_right, inner_right + 1) << "the breakdown table overflows its card";
  EXPECT_EQ(confidence_cells, static_cast<int64_t>(summary->stages.size()));
  EXPECT_EQ(stage_cells, static_cast<int64_t>(summary->stages.size()));
  std::cerr << "breakdown at " << kWidth << " px: table right " << table_right
            << ", card inner right " << inner_right << "\n";
}

}  // namespace
