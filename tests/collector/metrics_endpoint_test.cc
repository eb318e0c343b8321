// The collector's metrics endpoint (docs/operations.md#metrics): the Prometheus text it
// renders, the HTTP server, --metrics-listen on the command line, and a
// real Prometheus server (Debian's `prometheus`) scraping a live collector.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "collector/metrics/metrics_server.h"
#include "collector/metrics/prometheus_text.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/collector/prometheus_util.h"
#include "tests/collector/store_query.h"
#include "ticktrace/trace.h"

namespace ticktrace::metrics {
namespace {

using collect::testing::FindPrometheus;
using collect::testing::FreePort;
using collect::testing::Http;
using collect::testing::HttpReply;
using collect::testing::PromQuery;
using collect::testing::ReadFile;
using collect::testing::SampleValue;
using collect::testing::StartPrometheus;
using collect::testing::WaitMetricsPort;
using collect::testing::Spawn;
using collect::testing::StoreQuery;
using collect::testing::TempDir;
using collect::testing::WaitExit;
using collect::testing::WaitFor;

// Hand-made content: stage "a->b" with 3 x 50 ns, 2 x 150 ns, 1 x 3 us and
// 1 x 20 s. By hand, cumulative counts at the le bounds (s): 1e-07: 3,
// 2e-07: 5, then 5 up to 2e-06, 5e-06 .. 10: 6, +Inf: 7. Sum 20.00000345 s.
MetricsSnapshot HandMadeSnapshot() {
  MetricsSnapshot s;
  s.session = "t_metrics";
  StageMetrics m;
  m.stage = "a->b";
  for (double v : {50.0, 50.0, 50.0, 150.0, 150.0, 3000.0, 20e9}) m.histogram.Add(v);
  m.samples_all = 9;
  m.flag_counts[1] = 2;  // negative (kFlagNames order: migrated, negative, ...)
  s.stages.push_back(m);
  StageMetrics odd;
  odd.stage = "say \"hi\"\\now";  // a label value that must be escaped
  s.stages.push_back(odd);
  s.counters = {{"drained", 42},        {"dropped", 3},           {"orders_stored", 7},
                {"missing_stage:b", 5}, {"core_unknown:a->b", 4}, {"collector_cpu_ms", 10}};
  s.analysed_until_utc_ns = 1'000'000'000;
  return s;
}

TEST(PrometheusTextTest, HistogramBucketsSumCountFlagsAndCounters) {
  const std::string text = "\n" + RenderSnapshot(HandMadeSnapshot(), "1.2.3", "abc1234");
  const std::string b = "ticktrace_stage_latency_seconds_bucket{stage=\"a->b\",le=\"";
  const std::vector<std::pair<std::string, double>> expected = {
      {"1e-07", 3}, {"2e-07", 5}, {"5e-07", 5}, {"1e-06", 5}, {"2e-06", 5}, {"5e-06", 6},
      {"0.001", 6}, {"1", 6},     {"10", 6},    {"+Inf", 7}};
  for (const auto& [le, count] : expected) {
    EXPECT_EQ(SampleValue(text, b + le + "\"} "), count) << le << text;
  }
  size_t buckets = 0;
  for (size_t at = text.find(b); at != std::string::npos; at = text.find(b, at + 1)) ++buckets;
  EXPECT_EQ(buckets, kLatencyBucketsSeconds.size() + 1);
  EXPECT_NEAR(*SampleValue(text, "ticktrace_stage_latency_seconds_sum{stage=\"a->b\"} "),
              20.00000345, 1e-12);
  EXPECT_EQ(SampleValue(text, "ticktrace_stage_latency_seconds_count{stage=\"a->b\"} "), 7);
  EXPECT_EQ(SampleValue(text, "ticktrace_stage_samples_total{stage=\"a->b\"} "), 9);
  EXPECT_EQ(SampleValue(text,
                        "ticktrace_stage_flagged_samples_total{stage=\"a->b\",flag=\"negative\"} "),
            2);
  EXPECT_EQ(SampleValue(text,
                        "ticktrace_stage_flagged_samples_total{stage=\"a->b\",flag=\"migrated\"} "),
            0);
  EXPECT_EQ(SampleValue(text, "ticktrace_drained_total "), 42);
  EXPECT_EQ(SampleValue(text, "ticktrace_dropped_total "), 3);
  EXPECT_EQ(SampleValue(text, "ticktrace_orders_stored_total "), 7);
  EXPECT_EQ(SampleValue(text, "ticktrace_missing_stage_total{stage=\"b\"} "), 5);
  EXPECT_EQ(SampleValue(text, "ticktrace_stage_core_unknown_samples_total{stage=\"a->b\"} "), 4);
  EXPECT_EQ(text.find("ticktrace_core_unknown:"), std::string::npos) << text;
  EXPECT_EQ(text.find("collector_cpu_ms"), std::string::npos);  // scrape-time CPU instead
  EXPECT_NE(text.find("stage=\"say \\\"hi\\\"\\\\now\""), std::string::npos) << text;
  EXPECT_NE(text.find("ticktrace_collector_info{version=\"1.2.3\",commit=\"abc1234\","
                      "session=\"t_metrics\"} 1\n"),
            std::string::npos);
  // Every metric has its TYPE before its first sample.
  EXPECT_LT(text.find("# TYPE ticktrace_stage_latency_seconds histogram"), text.find(b));
  EXPECT_LT(text.find("# TYPE ticktrace_drained_total counter"),
            text.find("\nticktrace_drained_total "));
}

// A stage with an end read by another clock names it, one sample per
// (side, clock); a run without one has no such metric at all.
TEST(PrometheusTextTest, AStageReadByAnotherClockNamesItsClock) {
  MetricsSnapshot s = HandMadeSnapshot();
  EXPECT_EQ(RenderSnapshot(s, "1", "c").find("ticktrace_stage_clock_info"), std::string::npos);
  s.stages[0].clocks = {{"begin", "realtime"}, {"end", "exchange"}};
  const std::string text = "\n" + RenderSnapshot(s, "1", "c");
  const std::string a_b = "ticktrace_stage_clock_info{stage=\"a->b\",";
  EXPECT_EQ(SampleValue(text, a_b + "side=\"begin\",clock=\"realtime\"} "), 1) << text;
  EXPECT_EQ(SampleValue(text, a_b + "side=\"end\",clock=\"exchange\"} "), 1) << text;
  EXPECT_LT(text.find("# TYPE ticktrace_stage_clock_info gauge"),
            text.find("\nticktrace_stage_clock_info{"));
}

// The records-lost figure leads, every cause listed. By hand from the
// hand-made counters: drained 42, dropped 3 -> written 45, lost 3 (ring_full).
TEST(PrometheusTextTest, RecordsLostComeFirstByCause) {
  const std::string body = RenderSnapshot(HandMadeSnapshot(), "1.2.3", "abc1234");
  EXPECT_EQ(body.rfind("# HELP ticktrace_records_lost_total ", 0), 0u) << body;
  const std::string text = "\n" + body;
  EXPECT_EQ(SampleValue(text, "ticktrace_records_lost_total{cause=\"ring_full\"} "), 3);
  for (const char* cause : {"no_ring", "refused_segment", "journal_corrupt", "over_open_limit",
                            "malformed", "unattributed"}) {
    EXPECT_EQ(
        SampleValue(text, std::string("ticktrace_records_lost_total{cause=\"") + cause + "\"} "), 0)
        << cause;
  }
  EXPECT_EQ(SampleValue(text, "ticktrace_records_written_total "), 45);
  EXPECT_LT(text.find("# TYPE ticktrace_records_lost_total counter"),
            text.find("\nticktrace_records_lost_total{"));
}

TEST(PrometheusTextTest, LagAndCpuAtScrapeTime) {
  const std::string text = "\n" + RenderScrapeTime(1'000'000'000, 3'500'000'000, 1.25);
  EXPECT_EQ(SampleValue(text, "ticktrace_collector_lag_seconds "), 2.5);
  EXPECT_EQ(SampleValue(text, "ticktrace_collector_cpu_seconds_total "), 1.25);
  // No anchor analysed yet: no lag sample (rather than the age of the epoch).
  EXPECT_EQ(RenderScrapeTime(0, 3'500'000'000, 1).find("\nticktrace_collector_lag_seconds "),
            std::string::npos);
}

TEST(ListenAddressTest, ParsesHostAndPort) {
  auto ok = [](const std::string& text, const std::string& host, uint16_t port) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(text);
    ASSERT_TRUE(a.ok()) << text << ": " << a.status();
    EXPECT_EQ(a->host, host) << text;
    EXPECT_EQ(a->port, port) << text;
  };
  ok("127.0.0.1:9464", "127.0.0.1", 9464);
  ok("[::1]:9464", "::1", 9464);
  ok("localhost:0", "localhost", 0);
  ok(":9464", "", 9464);
  for (const char* bad : {"9464", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536",
                          "::1:9464", "[::1]9464", "[::1", "127.0.0.1:-1"}) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(bad);
    EXPECT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("--metrics-listen"), absl::string_view::npos) << bad;
  }
}

TEST(MetricsServerTest, ServesMetricsAndRefusesTheRest) {
  MetricsServer server("1.2.3", "abc1234");
  ASSERT_TRUE(server.Start(ListenAddress{"127.0.0.1", 0}).ok());
  ASSERT_NE(server.port(), 0);
  // Before the first snapshot: the scrape-time part only (CPU), still 200.
  HttpReply r = Http(server.port(), "GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("ticktrace_collector_cpu_seconds_total "), std::string::npos) << r.body;
  server.Publish(HandMadeSnapshot());
  r = Http(server.port(), "GET", "/metrics?x=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("ticktrace_drained_total 42\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("ticktrace_collector_lag_seconds "), std::string::npos) << r.body;
  EXPECT_EQ(Http(server.port(), "GET", "/").status, 200);
  EXPECT_EQ(Http(server.port(), "GET", "/nope").status, 404);
  EXPECT_EQ(Http(server.port(), "POST", "/metrics").status, 405);
  r = Http(server.port(), "HEAD", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
  // A client that connects and says nothing does not block the next one
  // (metrics_slow_client_test.cc presses harder).
  const int idle = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(Http(server.port(), "GET", "/metrics").status, 200);
  close(idle);
  EXPECT_EQ(server.scrapes(), 4u);  // the GETs and the HEAD of /metrics

  // The port is taken: a second server says so, naming the address.
  MetricsServer second("1.2.3", "abc1234");
  absl::Status s = second.Start(ListenAddress{"127.0.0.1", server.port()});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--metrics-listen 127.0.0.1:" + std::to_string(server.port())),
            absl::string_view::npos)
      << s;
  EXPECT_NE(s.message().find("in use"), absl::string_view::npos) << s;
  server.Stop();
  EXPECT_EQ(Http(server.port(), "GET", "/metrics").status, 0);  // closed
}

// The command line: a malformed address is a usage error (2), one line, and
// no store is created; a busy port is one line and collecting goes on (0),
// or, with --metrics-required, a runtime error (1) before any store exists
// (metrics_slow_client_test.cc stores orders beside a busy port).
TEST(MetricsCliTest, BadAddressAndBusyPort) {
  TempDir dir;
  const std::string db = dir.File("m.db");
  const std::string log = dir.File("out.log");
  const std::string session = "t_metrics_cli_" + std::to_string(getpid());
  auto run = [&](const std::string& listen) {
    std::remove(log.c_str());
    return WaitExit(Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", db,
                           "--tsc-hz", "2e9", "--duration-s", "0.1", "--metrics-listen", listen},
                          log));
  };
  EXPECT_EQ(run("localhost"), 2);
  EXPECT_EQ(ReadFile(log),
            "ticktrace-collector: --metrics-listen 'localhost': no port (e.g. 127.0.0.1:9464, "
            "[::1]:9464) (see --help)\n");
  MetricsServer taken("1", "x");
  ASSERT_TRUE(taken.Start(ListenAddress{"127.0.0.1", 0}).ok());
  EXPECT_EQ(access(db.c_str(), F_OK), -1);
  EXPECT_EQ(run("127.0.0.1:" + std::to_string(taken.port())), 0);
  std::string out = ReadFile(log);
  EXPECT_NE(out.find("Address already in use; collecting without /metrics"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("Address already in use"), out.rfind("Address already in use")) << out;
  std::remove(log.c_str());
  const std::string db2 = dir.File("m2.db");
  EXPECT_EQ(WaitExit(Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", db2,
                            "--tsc-hz", "2e9", "--duration-s", "0.1", "--metrics-listen",
                            "127.0.0.1:" + std::to_string(taken.port()), "--metrics-required"},
                           log)),
            1);
  out = ReadFile(log);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("Address already in use"), std::string::npos) << out;
  EXPECT_EQ(access(db2.c_str(), F_OK), -1);
}

// Busy-waits about `ns` (steady_clock; the stamps measure what it took).
void BusyNs(int64_t ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// A real Prometheus scrapes a live collector; histogram_quantile(0.99) of
// the stage, through Prometheus's HTTP API, lands in the classic bucket that
// holds the store's own p99 of the stage.
//
// Content: 1000 orders stamped a, then b, by a forked producer: 980 with
// about 2 us between the stamps, 20 (every 50th) with about 40 us. By hand:
// the p99 is rank 990, one of the slow 20, so both figures should be in
// (20 us, 50 us] unless the machine stretched the waits; the check is that
// the two agree on the bucket, whichever it is.
TEST(MetricsPrometheusTest, HistogramQuantileLandsInTheStoresP99Bucket) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    GTEST_SKIP() << "no prometheus binary (Debian package 'prometheus'; .ci/quickstart.sh "
                    "installs it in test mode)";
  }
  TempDir dir;
  const std::string session = "t_metrics_prom_" + std::to_string(getpid());
  const std::string db = dir.File("m.db");
  const std::string clog = dir.File("collector.log");
  const pid_t collector =
      Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", db, "--pipeline", "a,b",
             "--tsc-hz", std::to_string(collect::testing::TestTscHz()), "--metrics-listen",
             "127.0.0.1:0"},
            clog);
  const uint16_t port = WaitMetricsPort(clog);
  const bool ready = port != 0;
  pid_t prom = -1;
  auto cleanup = [&] {
    if (prom > 0) {
      kill(prom, SIGTERM);
      WaitExit(prom, std::chrono::seconds(30));
      prom = -1;
    }
    if (collector > 0) kill(collector, SIGTERM);
  };
  if (!ready) {
    cleanup();
    WaitExit(collector);
    FAIL() << ReadFile(clog);
  }

  // The producer: a forked child of this test, so that its segment goes
  // away when it exits (the collector removes a drained, exited producer's).
  const pid_t parent = getpid();
  const pid_t producer = fork();
  if (producer == 0) {
    collect::testing::BecomeTestChild(parent);
    Options o;
    o.session = session;
    if (!Init(o).ok()) _exit(3);
    Tag a("a"), b("b");
    for (uint64_t id = 1; id <= 1000; ++id) {
      stamp(a, id);
      BusyNs(id % 50 == 0 ? 40'000 : 2'000);
      stamp(b, id);
      BusyNs(5'000);
    }
    _exit(0);
  }
  EXPECT_EQ(WaitExit(producer, std::chrono::seconds(60)), 0);
  // The endpoint shows every order once the collector's snapshot has them.
  const std::string count_line = "ticktrace_stage_latency_seconds_count{stage=\"a->b\"} ";
  EXPECT_TRUE(WaitFor(
      [&] { return SampleValue("\n" + Http(port, "GET", "/metrics").body, count_line) == 1000; },
      std::chrono::seconds(30)))
      << Http(port, "GET", "/metrics").body;

  // Prometheus: a temporary config and data dir, loopback only, scraping
  // the collector every second.
  const uint16_t prom_port = FreePort();
  prom = StartPrometheus(prometheus, dir, port, prom_port);
  auto query = [&](const std::string& promql) { return PromQuery(prom_port, promql); };
  const bool scraped = WaitFor(
      [&] {
        return query("ticktrace_stage_latency_seconds_count{job=\"ticktrace\",stage=\"a->b\"}") ==
               1000;
      },
      std::chrono::seconds(60));
  const std::optional<double> p99_s = query(
      "histogram_quantile(0.99, ticktrace_stage_latency_seconds_bucket{stage=\"a->b\"})");
  const std::optional<double> up = query("up{job=\"ticktrace\"}");
  cleanup();
  EXPECT_EQ(WaitExit(collector, std::chrono::seconds(120)), 0) << ReadFile(clog);
  collect::testing::RemoveSessionSegments(session);
  ASSERT_TRUE(scraped) << ReadFile(dir.File("prometheus.log"));
  EXPECT_EQ(up, 1.0);
  ASSERT_TRUE(p99_s.has_value());

  // The store's own p99 of the stage, and the classic bucket (lo, hi] it is in.
  StoreQuery q(db);
  const double store_p99_s = q.Real("SELECT p99_ns FROM stage_stats WHERE stage = 'a->b'") * 1e-9;
  double lo = 0, hi = 0;
  for (double le : kLatencyBucketsSeconds) {
    if (store_p99_s <= le) {
      hi = le;
      break;
    }
    lo = le;
  }
  ASSERT_GT(hi, 0) << store_p99_s;
  EXPECT_GE(*p99_s, lo) << "store p99 " << store_p99_s << " s";
  EXPECT_LE(*p99_s, hi) << "store p99 " << store_p99_s << " s";
  std::printf("FIGURE metrics prometheus: histogram_quantile(0.99) %.3g s, store p99 %.3g s, "
              "bucket (%g, %g]\n",
              *p99_s, store_p99_s, lo, hi);
  // By hand (see above): rank 990 is a ~40 us order.
  EXPECT_GE(store_p99_s, 30e-6);
}

}  // namespace
}  // namespace ticktrace::metrics

namespace ticktrace::metrics {
namespace {

// A real Prometheus scrapes the loss of a refused segment by cause. A forked
// producer writes 500 orders (a, b: 1000 records) into one ring of 65536
// records and exits; its segment has then reserved 66560 + 64 * 192 + 65536 *
// 32 = 2,176,000 bytes, above the collector's --max-segment-bytes 1MiB, so all
// 1000 records are lost to cause refused_segment, 1000 of 1000 written.
TEST(MetricsPrometheusTest, RecordsLostByCauseReachPrometheus) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    GTEST_SKIP() << "no prometheus binary (Debian package 'prometheus'; .ci/quickstart.sh "
                    "installs it in test mode)";
  }
  TempDir dir;
  const std::string session = "t_metrics_lost_" + std::to_string(getpid());
  const pid_t parent = getpid();
  const pid_t producer = fork();
  if (producer == 0) {
    collect::testing::BecomeTestChild(parent);
    Options o;
    o.session = session;
    o.ring_records = 65536;
    o.rings = 64;
    if (!Init(o).ok()) _exit(3);
    Tag a("a"), b("b");
    for (uint64_t id = 1; id <= 500; ++id) {
      stamp(a, id);
      stamp(b, id);
    }
    _exit(0);
  }
  ASSERT_EQ(WaitExit(producer, std::chrono::seconds(60)), 0);
  const std::string clog = dir.File("collector.log");
  const pid_t collector =
      Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", dir.File("m.db"), "--pipeline",
             "a,b", "--tsc-hz", std::to_string(collect::testing::TestTscHz()),
             "--max-segment-bytes", "1MiB", "--metrics-listen", "127.0.0.1:0"},
            clog);
  const uint16_t port = WaitMetricsPort(clog);
  const bool ready = port != 0;
  pid_t prom = -1;
  auto cleanup = [&] {
    if (prom > 0) {
      kill(prom, SIGTERM);
      WaitExit(prom, std::chrono::seconds(30));
      prom = -1;
    }
    kill(collector, SIGTERM);
  };
  if (!ready) {
    cleanup();
    WaitExit(collector);
    collect::testing::RemoveSessionSegments(session);
    FAIL() << ReadFile(clog);
  }
  const uint16_t prom_port = FreePort();
  prom = StartPrometheus(prometheus, dir, port, prom_port);
  auto query = [&](const std::string& promql) { return PromQuery(prom_port, promql); };
  const bool scraped = WaitFor(
      [&] {
        return query("ticktrace_records_lost_total{job=\"ticktrace\",cause=\"refused_segment\"}") ==
               1000;
      },
      std::chrono::seconds(60));
  const std::optional<double> all = query("sum(ticktrace_records_lost_total{job=\"ticktrace\"})");
  const std::optional<double> written = query("ticktrace_records_written_total{job=\"ticktrace\"}");
  cleanup();
  EXPECT_EQ(WaitExit(collector, std::chrono::seconds(120)), 0) << ReadFile(clog);
  collect::testing::RemoveSessionSegments(session);
  ASSERT_TRUE(scraped) << ReadFile(dir.File("prometheus.log")) << ReadFile(clog);
  EXPECT_EQ(all, 1000.0);
  EXPECT_EQ(written, 1000.0);
}

}  // namespace
}  // namespace ticktrace::metrics
