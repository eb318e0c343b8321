// export --format hlog read back by HdrHistogram's own decoder: the
// JavaScript port (npm's hdr-histogram-js, installed by the test into a
// temporary directory) reads the log with its HistogramLogReader, and its
// counts, percentiles, tags and interval times must match what the store
// was written with (hand-known values) and ticktrace's own interval
// statistics, within the two histograms' precision (the store's 1/256 at a
// bucket's midpoint, HdrHistogram's 3 significant digits).
//
// Needs node and npm (CI's test mode installs Debian's nodejs and npm) and
// the npm registry; skips, saying why, only when node or npm is missing.
// Labelled `browser` in CMake (pass 1 only, like the other JavaScript check).
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "store_fixture.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {
namespace {

constexpr int64_t kIntervalNs = 1'000'000'000;
constexpr char kHdrPackage[] = "hdr-histogram-js@3.0.1";

// Runs `command` through the shell; returns its exit status, stdout+stderr in `output`.
int Shell(const std::string& command, std::string* output) {
  std::string line = absl::StrCat("timeout -k 5 300 sh -c '", command, "' 2>&1");
  FILE* pipe = ::popen(line.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output->append(buffer, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool HaveProgram(const std::string& name) {
  std::string out;
  return Shell(absl::StrCat("command -v ", name), &out) == 0;
}

// The run: pipeline a,b; intervals of 1 s from `Base()`.
//   interval 0: 1000 orders, a->b = 1000 + i ns (i = 0..999), total = 10x that
//   interval 1:  500 orders, a->b = 50 000 + 100 i ns
//   interval 2:  100 orders, a->b = -100 (i+1) ns for i < 3, else 2000 ns
int64_t Base() { return testing::KnownStore::BaseUtcNs(); }

double AToB(int interval, int i) {
  switch (interval) {
    case 0: return 1000.0 + i;
    case 1: return 50'000.0 + 100.0 * i;
    default: return i < 3 ? -100.0 * (i + 1) : 2000.0;
  }
}
constexpr int kOrders[] = {1000, 500, 100};

testing::FixtureRun HlogRun() {
  testing::FixtureRun run;
  run.meta.session = "hlog";
  run.meta.host = "testhost";
  run.meta.started_utc_ns = Base() + 123'456'789;  // inside interval 0
  run.ended_utc_ns = Base() + 3 * kIntervalNs;
  run.meta.tsc_hz = 1e9;
  run.meta.calibration_source = "given";
  run.meta.anchor_tsc = 1'000'000;
  run.meta.anchor_utc_ns = Base();
  run.meta.pipeline = "a,b";
  run.meta.interval_ns = kIntervalNs;
  run.include_flagged = true;
  run.stage_order = {"a->b", "total"};
  uint64_t id = 1;
  for (int interval = 0; interval < 3; ++interval) {
    for (int i = 0; i < kOrders[interval]; ++i) {
      store::OrderDetail o;
      o.order_id = id++;
      o.first_utc_ns = Base() + interval * kIntervalNs + 200'000'000 + i * 1000;
      store::StampDetail s;
      s.tag = "a";
      s.process_id = 1;
      s.tid = 11;
      s.tsc = 1'000'000 + static_cast<uint64_t>(o.first_utc_ns - Base());
      s.utc_ns = o.first_utc_ns;
      o.stamps.push_back(s);
      o.first_tsc = s.tsc;
      o.first_tsc_utc_ns = s.utc_ns;
      store::SampleDetail a;
      a.stage = "a->b";
      a.start_utc_ns = o.first_utc_ns;
      a.latency_ns = AToB(interval, i);
      o.samples.push_back(a);
      if (interval == 0) {
        store::SampleDetail t = a;
        t.stage = "total";
        t.latency_ns = 10 * a.latency_ns;
        o.samples.push_back(t);
        o.total_ns = t.latency_ns;
      }
      o.complete = true;
      run.orders.push_back(std::move(o));
    }
  }
  return run;
}

// Nearest-rank percentile of known values.
double NearestRank(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::max(1.0, std::ceil(p / 100 * v.size())));
  return v[rank - 1];
}

constexpr char kReaderJs[] = R"js(
const fs = require("fs");
const hdr = require("hdr-histogram-js");
const content = fs.readFileSync(process.argv[2], "utf8");
const reader = new hdr.HistogramLogReader(content);
const out = { tags: hdr.listTags(content), intervals: [] };
for (let h = reader.nextIntervalHistogram(); h != null; h = reader.nextIntervalHistogram()) {
  out.intervals.push({
    tag: h.tag, start_ms: h.startTimeStampMsec, end_ms: h.endTimeStampMsec,
    count: h.totalCount, min: h.minNonZeroValue, max: h.maxValue,
    p0: h.getValueAtPercentile(0.0001), p50: h.getValueAtPercentile(50),
    p99: h.getValueAtPercentile(99),
  });
}
console.log(JSON.stringify(out));
)js";

TEST(HlogExportTest, HdrHistogramJsReadsTheLogBackWithinPrecision) {
  if (!HaveProgram("node") || !HaveProgram("npm")) {
    GTEST_SKIP() << "node and npm are not installed (CI installs Debian's nodejs and npm)";
  }
  testing::TempDir dir;
  testing::WriteStore(dir.File("h.db"), {HlogRun()});
  std::string out;
  const int npm = Shell(absl::StrCat("npm install --no-audit --no-fund --loglevel=error --prefix ",
                                     dir.path(), " ", kHdrPackage),
                        &out);
  // A machine that cannot reach the registry (no route, no name, or a TLS
  // proxy whose certificate authority it does not trust, as in a bare
  // debootstrap chroot behind an intercepting proxy) cannot run this check:
  // said as a skip, never a pass. Any other npm failure fails the test.
  for (const char* network : {"SELF_SIGNED_CERT", "UNABLE_TO_GET_ISSUER_CERT", "CERT_", "ENOTFOUND",
                              "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET"}) {
    if (npm != 0 && absl::StrContains(out, network)) {
      GTEST_SKIP() << "the npm registry is not reachable from this machine (" << network
                   << "), so hdr-histogram-js cannot be installed:\n"
                   << out;
    }
  }
  ASSERT_EQ(npm, 0) << "npm install " << kHdrPackage << " failed:\n" << out;
  out.clear();
  ASSERT_EQ(Shell(absl::StrCat(TICKTRACE_VIEW_BINARY, " export --format hlog --db ",
                               dir.File("h.db"), " --out ", dir.File("run.hlog")),
                  &out),
            0)
      << out;
  EXPECT_TRUE(absl::StrContains(out, "4 interval histograms")) << out;
  std::ofstream(dir.File("read.js")) << kReaderJs;
  out.clear();
  ASSERT_EQ(Shell(absl::StrCat("NODE_PATH=", dir.path(), "/node_modules node ",
                               dir.File("read.js"), " ", dir.File("run.hlog")),
                  &out),
            0)
      << out << "\nthe log:\n"
      << testing::ReadFile(dir.File("run.hlog"));
  const nlohmann::json decoded = nlohmann::json::parse(out);

  EXPECT_EQ(decoded["tags"], nlohmann::json({"a->b", "total"}));
  // ticktrace's own interval statistics.
  auto store = store::StoreReader::Open(dir.File("h.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  auto own = (*store)->Intervals(1, std::nullopt, store::TimeWindow{}, kIntervalNs);
  ASSERT_TRUE(own.ok()) << own.status();
  std::map<std::pair<std::string, int64_t>, store::IntervalRow> own_by_key;
  for (const store::IntervalRow& r : *own) own_by_key[{r.stage, r.start_utc_ns}] = r;

  // a->b in intervals 0, 1, 2 and total in interval 0, by time.
  ASSERT_EQ(decoded["intervals"].size(), 4u) << out;
  int interval_of_a = 0;
  for (const nlohmann::json& h : decoded["intervals"]) {
    const std::string tag = h["tag"];
    const int interval = tag == "total" ? 0 : interval_of_a++;
    SCOPED_TRACE(absl::StrCat(tag, " interval ", interval));
    std::vector<double> values;
    for (int i = 0; i < kOrders[interval]; ++i) {
      const double v = AToB(interval, i);
      values.push_back(tag == "total" ? 10 * v : v);
    }
    const int64_t start_utc_ns = Base() + interval * kIntervalNs;
    EXPECT_NEAR(h["start_ms"].get<double>(), start_utc_ns / 1e6, 1.0);
    EXPECT_NEAR(h["end_ms"].get<double>() - h["start_ms"].get<double>(), 1000.0, 1e-3);
    EXPECT_EQ(h["count"].get<int64_t>(), kOrders[interval]);
    // HdrHistogram holds no negative values: interval 2's three are at 0.
    const auto clamp0 = [](double v) { return std::max(0.0, v); };
    // The store's bucket (<= 1/256 off at its midpoint) and HdrHistogram's
    // (3 digits: < 1/1024 wide, reported at its upper end), and 1 ns of rounding.
    const auto tolerance = [](double v) { return std::fabs(v) * (1.0 / 256 + 1.0 / 1024) + 1; };
    for (const auto& [key, p] : {std::pair<const char*, double>{"p50", 50}, {"p99", 99}}) {
      const double want = clamp0(NearestRank(values, p));
      EXPECT_NEAR(h[key].get<double>(), want, tolerance(want)) << key;
    }
    const double max = *std::max_element(values.begin(), values.end());
    EXPECT_NEAR(h["max"].get<double>(), max, tolerance(max));
    const auto it = own_by_key.find({tag, start_utc_ns});
    ASSERT_NE(it, own_by_key.end());
    const store::IntervalRow& row = it->second;
    EXPECT_EQ(row.count, h["count"].get<int64_t>());
    // Against ticktrace's own numbers only HdrHistogram's precision is left.
    const auto hdr_tolerance = [](double v) { return std::fabs(v) / 1024 + 1; };
    ASSERT_TRUE(row.p50_ns.has_value() && row.p99_ns.has_value());
    EXPECT_NEAR(h["p50"].get<double>(), clamp0(*row.p50_ns), hdr_tolerance(*row.p50_ns));
    EXPECT_NEAR(h["p99"].get<double>(), clamp0(*row.p99_ns), hdr_tolerance(*row.p99_ns));
    EXPECT_NEAR(h["max"].get<double>(), *row.max_ns, hdr_tolerance(*row.max_ns));
  }
  // The log says what it could not hold.
  EXPECT_TRUE(absl::StrContains(testing::ReadFile(dir.File("run.hlog")),
                                "#[Tag=a->b: 3 negative latencies"));
}

}  // namespace
}  // namespace ticktrace::view
