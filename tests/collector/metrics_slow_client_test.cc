// The metrics endpoint against hostile local clients (docs/security.md, the
// threat model's /metrics rows): a client that sends a byte a second and 23
// connections that send nothing, all at once, while a scraper (a plain HTTP
// GET, and a real Prometheus) scrapes; and a port someone else took first.
//
// By hand: the server serves up to MetricsServer::kMaxClients (64)
// connections at once and closes each at its deadline (5 s after accept)
// whatever it sent, so 1 + 23 hostile connections leave room for the
// scraper, and every scrape gets its 200. The server this replaced served
// one connection at a time with a 2 s timeout that every byte renewed: the
// slow client alone held it for ever, and every scrape went unanswered.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collector/metrics/metrics_server.h"
#include "gtest/gtest.h"
#include "tests/collector/process_util.h"
#include "tests/collector/prometheus_util.h"
#include "tests/collector/store_query.h"
#include "ticktrace/trace.h"

namespace ticktrace::metrics {
namespace {

using collect::testing::FindPrometheus;
using collect::testing::FreePort;
using collect::testing::Http;
using collect::testing::PromQuery;
using collect::testing::ReadFile;
using collect::testing::Spawn;
using collect::testing::StartPrometheus;
using collect::testing::StoreQuery;
using collect::testing::TempDir;
using collect::testing::WaitExit;
using collect::testing::WaitFor;
using collect::testing::WaitMetricsPort;

int ConnectLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The hostile neighbours, on threads of their own until destroyed: one
// client trickling a request a byte a second (reconnecting when the server
// drops it), and `idle` connections that never send (reopened likewise).
class Neighbours {
 public:
  Neighbours(uint16_t port, int idle) {
    threads_.emplace_back([this, port] {
      const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
      int fd = -1;
      size_t at = 0;
      while (!stop_.load()) {
        if (fd < 0) {
          fd = ConnectLoopback(port);
          at = 0;
        }
        if (fd >= 0 && send(fd, request.data() + at % (request.size() - 4), 1, MSG_NOSIGNAL) != 1) {
          close(fd);
          fd = -1;
          ++slow_reconnects_;
        }
        ++at;
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      if (fd >= 0) close(fd);
    });
    threads_.emplace_back([this, port, idle] {
      std::vector<int> fds;
      while (!stop_.load()) {
        // An idle connection the server closed reads as EOF: reopen it.
        for (int& fd : fds) {
          char c;
          if (recv(fd, &c, 1, MSG_DONTWAIT) == 0) {
            close(fd);
            fd = ConnectLoopback(port);
          }
        }
        while (static_cast<int>(fds.size()) < idle) fds.push_back(ConnectLoopback(port));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      for (int fd : fds) close(fd);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // all of them connected
  }
  ~Neighbours() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }
  int slow_reconnects() const { return slow_reconnects_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> slow_reconnects_{0};
  std::vector<std::thread> threads_;
};

// The server alone: six scrapes one after another while the neighbours
// hold their connections. Each is answered (200, the published body).
TEST(MetricsSlowClientTest, EveryScrapeIsAnsweredBesideASlowClientAndIdleConnections) {
  MetricsServer server("1.2.3", "abc1234");
  ASSERT_TRUE(server.Start(ListenAddress{"127.0.0.1", 0}).ok());
  Neighbours neighbours(server.port(), 23);
  int answered = 0;
  for (int i = 0; i < 6; ++i) {
    // Http() gives up after 10 s without a reply: status 0.
    if (Http(server.port(), "GET", "/metrics").status == 200) ++answered;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(answered, 6);
  EXPECT_EQ(server.scrapes(), 6u) << "the slow client never completes a request";
  std::printf("FIGURE metrics slow client: %d of 6 scrapes answered beside 1 slow and 23 idle "
              "connections (slow client dropped and reconnected %d times)\n",
              answered, neighbours.slow_reconnects());
}

// A live collector scraped by a real Prometheus every second while the
// neighbours press: every scrape in the window succeeds (up == 1 at each).
TEST(MetricsSlowClientTest, PrometheusScrapesALiveCollectorBesideTheNeighbours) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    GTEST_SKIP() << "no prometheus binary (Debian package 'prometheus'; .ci/quickstart.sh "
                    "installs it in test mode)";
  }
  TempDir dir;
  const std::string session = "t_metrics_slow_" + std::to_string(getpid());
  const std::string clog = dir.File("collector.log");
  const pid_t collector =
      Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", dir.File("m.db"),
             "--tsc-hz", std::to_string(collect::testing::TestTscHz()), "--metrics-listen",
             "127.0.0.1:0"},
            clog);
  const uint16_t port = WaitMetricsPort(clog);
  if (port == 0) {
    kill(collector, SIGTERM);
    WaitExit(collector);
    FAIL() << ReadFile(clog);
  }
  const uint16_t prom_port = FreePort();
  const pid_t prom = StartPrometheus(prometheus, dir, port, prom_port);
  auto query = [&](const std::string& promql) { return PromQuery(prom_port, promql); };
  // Prometheus up and scraping before the neighbours come.
  const bool first = WaitFor([&] { return query("up{job=\"ticktrace\"}") == 1.0; },
                             std::chrono::seconds(60));
  std::optional<double> scrapes, worst;
  {
    Neighbours neighbours(port, 23);
    std::this_thread::sleep_for(std::chrono::seconds(12));
    // The 10 s window lies inside the neighbours' 12 s: about 10 scrapes at 1 s.
    scrapes = query("count_over_time(up{job=\"ticktrace\"}[10s])");
    worst = query("min_over_time(up{job=\"ticktrace\"}[10s])");
  }
  kill(prom, SIGTERM);
  WaitExit(prom, std::chrono::seconds(30));
  kill(collector, SIGTERM);
  EXPECT_EQ(WaitExit(collector, std::chrono::seconds(120)), 0) << ReadFile(clog);
  collect::testing::RemoveSessionSegments(session);
  ASSERT_TRUE(first) << ReadFile(dir.File("prometheus.log"));
  ASSERT_TRUE(scrapes.has_value() && worst.has_value());
  EXPECT_GE(*scrapes, 5) << "Prometheus scraped about once a second";
  EXPECT_EQ(*worst, 1.0) << "a scrape failed (up 0) while the neighbours pressed";
  std::printf("FIGURE metrics prometheus neighbours: %g scrapes in 10 s, min(up) %g\n", *scrapes,
              *worst);
}

// Someone took the port first. Without --metrics-required the collector
// says so in one line and goes on collecting: a forked producer's 100 orders
// (a, b) are stored. With it, the collector exits 1 and creates no store.
TEST(MetricsSlowClientTest, APortTakenFirstIsOneLineAndCollectingGoesOn) {
  TempDir dir;
  MetricsServer taken("1", "x");
  ASSERT_TRUE(taken.Start(ListenAddress{"127.0.0.1", 0}).ok());
  const std::string listen = "127.0.0.1:" + std::to_string(taken.port());
  const std::string session = "t_metrics_taken_" + std::to_string(getpid());
  const std::string db = dir.File("m.db");
  const std::string clog = dir.File("collector.log");
  const pid_t collector =
      Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", db, "--pipeline", "a,b",
             "--tsc-hz", std::to_string(collect::testing::TestTscHz()), "--metrics-listen",
             listen},
            clog);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(clog).find("order timeout") != std::string::npos; },
                      std::chrono::seconds(30)))
      << ReadFile(clog);
  const pid_t parent = getpid();
  const pid_t producer = fork();
  if (producer == 0) {
    collect::testing::BecomeTestChild(parent);
    Options o;
    o.session = session;
    if (!Init(o).ok()) _exit(3);
    Tag a("a"), b("b");
    for (uint64_t id = 1; id <= 100; ++id) {
      stamp(a, id);
      stamp(b, id);
    }
    _exit(0);
  }
  EXPECT_EQ(WaitExit(producer, std::chrono::seconds(60)), 0);
  EXPECT_TRUE(WaitFor([&] { return collect::testing::SegmentCount(session) == 0; },
                      std::chrono::seconds(60)))
      << ReadFile(clog);
  kill(collector, SIGTERM);
  EXPECT_EQ(WaitExit(collector, std::chrono::seconds(120)), 0) << ReadFile(clog);
  collect::testing::RemoveSessionSegments(session);
  const std::string out = ReadFile(clog);
  const std::string line = "ticktrace-collector: --metrics-listen " + listen +
                           ": Address already in use; collecting without /metrics "
                           "(--metrics-required makes this fatal)\n";
  EXPECT_NE(out.find(line), std::string::npos) << out;
  EXPECT_EQ(out.find("metrics at http://"), std::string::npos) << out;
  StoreQuery q(db);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 100);

  // --metrics-required: exit 1, one line, nothing created.
  const std::string db2 = dir.File("m2.db");
  const std::string log2 = dir.File("required.log");
  EXPECT_EQ(WaitExit(Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", db2,
                            "--tsc-hz", "2e9", "--duration-s", "0.1", "--metrics-listen", listen,
                            "--metrics-required"},
                           log2)),
            1);
  const std::string out2 = ReadFile(log2);
  EXPECT_EQ(std::count(out2.begin(), out2.end(), '\n'), 1) << out2;
  EXPECT_NE(out2.find("Address already in use"), std::string::npos) << out2;
  EXPECT_EQ(access(db2.c_str(), F_OK), -1);
}

}  // namespace
}  // namespace ticktrace::metrics
