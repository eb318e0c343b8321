// Several hosts, one store (docs/clickhouse.md#several-hosts-one-store), simulated with two network
// namespaces: each "host" is an `ip netns` joined to the root namespace by a
// veth pair (10.213.N.0/30 and 10.213.N.4/30, addresses that exist only in
// this test), running its own producers and its own collector, which writes
// to one ClickHouse server listening on the root namespace's ends of the
// pairs. The producers share no memory across hosts: each host has its own
// session (the namespaces share /dev/shm; the session keeps them apart).
//
// The story: host1 stamps a, b; host2 stamps c, d, 2 ms after host1 (both
// producers wait for the same CLOCK_REALTIME schedule, 1 ms apart):
//   phase 1: orders 1..200, host2's collector without offset;
//   phase 2: orders 1001..1200, host2's collector restarted with
//            --test-clock-offset-ns 5 s (its UTC runs 5 s ahead).
// Expected: every order stitched across both hosts by id; b->c cross-host,
// flagged, uncertainty 1000 + 2000 ns (the two --clock-error-ns); a->b and
// c->d not; b->c of phase 2 is phase 1's plus 5 s (within 100 ms of
// scheduling noise), a->b and c->d unmoved. Then the viewer binary on the
// same store: summary, orders, order and report with --hosts show every
// order stitched, each stage's hosts, b->c and the total flagged cross_host
// with 3000 ns, in text and --json.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/support/clickhouse_server.h"
#include "viewer/hosts/stitch.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {
namespace {

using ::ticktrace::testing::ClickHouseServer;
namespace ct = ::ticktrace::collect::testing;

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// Two namespaces with veth pairs to the root namespace; removed always.
class Hosts {
 public:
  Hosts() : tag_(std::to_string(getpid() % 100000)), net_(std::to_string(getpid() % 250 + 1)) {}
  ~Hosts() {
    for (int h : {1, 2}) {
      Sh(absl::StrCat("ip link del ", Veth(h, 'r')));
      Sh(absl::StrCat("ip netns del ", Ns(h)));
    }
  }
  // Creates both; an error message when it cannot (the caller skips).
  std::string Create() {
    if (geteuid() != 0) return "network namespaces need root (ip netns add)";
    for (int h : {1, 2}) {
      const std::string ns = Ns(h);
      if (Sh(absl::StrCat("ip netns add ", ns)) != 0) {
        return absl::StrCat("cannot create network namespace ", ns, " (ip netns add failed)");
      }
      const std::vector<std::string> steps = {
          absl::StrCat("ip netns exec ", ns, " ip link set lo up"),
          absl::StrCat("ip link add ", Veth(h, 'r'), " type veth peer name ", Veth(h, 'n')),
          absl::StrCat("ip link set ", Veth(h, 'n'), " netns ", ns),
          absl::StrCat("ip addr add ", RootAddress(h), "/30 dev ", Veth(h, 'r')),
          absl::StrCat("ip link set ", Veth(h, 'r'), " up"),
          absl::StrCat("ip netns exec ", ns, " ip addr add ", NsAddress(h), "/30 dev ",
                       Veth(h, 'n')),
          absl::StrCat("ip netns exec ", ns, " ip link set ", Veth(h, 'n'), " up")};
      for (const std::string& s : steps) {
        if (Sh(s) != 0) return absl::StrCat("cannot set up host ", h, ": '", s, "' failed");
      }
    }
    return "";
  }
  std::string Ns(int h) const { return absl::StrCat("tt_mh", tag_, "_", h); }
  std::string Veth(int h, char side) const {
    return absl::StrCat("ttmh", tag_, std::string(1, side), h);
  }
  // host h's link: 10.213.N.(4h-3) root side, (4h-2) namespace side.
  std::string RootAddress(int h) const { return absl::StrCat("10.213.", net_, ".", 4 * h - 3); }
  std::string NsAddress(int h) const { return absl::StrCat("10.213.", net_, ".", 4 * h - 2); }

 private:
  std::string tag_, net_;
};

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct ViewResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `ticktrace-view ARGS` (a shell word list) in `dir`: stdout and stderr apart.
ViewResult View(const ct::TempDir& dir, const std::string& args) {
  const std::string err_path = dir.File("view.stderr");
  const std::string cmd =
      absl::StrCat("cd '", dir.path(), "' && ", TICKTRACE_VIEW_BINARY, " ", args, " 2>'",
                   err_path, "'");
  ViewResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ct::ReadFile(err_path);
  return r;
}

TEST(MultiHost, OrdersStitchAcrossNamespacesAndAnOffsetClockMovesTheCrossHostStage) {
  if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
  Hosts hosts;
  if (const std::string why = hosts.Create(); !why.empty()) GTEST_SKIP() << why;
  ClickHouseServer::Options options;
  options.listen_hosts = {"127.0.0.1", hosts.RootAddress(1), hosts.RootAddress(2)};
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start(options);
  ASSERT_TRUE(ch.ok()) << ch.status();
  ClickHouseServer& server = **ch;
  ct::TempDir dir;
  const std::string hz = absl::StrCat(static_cast<int64_t>(ct::TestTscHz()));
  const std::string session = absl::StrCat("mh", getpid());

  // One collector of host h: in its namespace and its own directory.
  std::vector<pid_t> collectors;
  const auto collector = [&](int h, const std::string& run, double duration_s,
                             int64_t offset_ns) {
    const std::string cwd = dir.File(run);
    // The live collector keeps its journal at `<--store>.ttjournal`, for a
    // clickhouse:// URI a relative path under this directory (reported to
    // the lead: the journal of a ClickHouse store needs a place of its own).
    Sh(absl::StrCat("mkdir -p '", cwd, "/clickhouse:/", hosts.RootAddress(h), ":",
                    server.http_port(), "'"));
    const std::string cmd = absl::StrCat(
        "cd '", cwd, "' && exec ip netns exec ", hosts.Ns(h), " ", TICKTRACE_COLLECTOR_BIN,
        " --session ", session, h, " --store ", server.Uri("mh", hosts.RootAddress(h)),
        " --host-name host", h, " --clock-error-ns ", h * 1000, " --pipeline ",
        h == 1 ? "a,b" : "c,d", " --tsc-hz ", hz, " --order-timeout-ms 300 --duration-s ",
        duration_s, offset_ns ? absl::StrCat(" --test-clock-offset-ns ", offset_ns) : "");
    return ct::Spawn({"/bin/sh", "-c", cmd}, dir.File(run + ".log"));
  };
  // Producers of host h: ids first..first+199, stamps due from start_utc_ns.
  std::vector<pid_t> producers;
  const auto producer = [&](int h, int first, int64_t start_utc_ns) {
    const std::string cmd = absl::StrCat(
        "exec ip netns exec ", hosts.Ns(h), " ", TICKTRACE_TEST_PRODUCER_BIN, " --session ",
        session, h, " --mode spin --orders 200 --first-id ", first, " --pace-ns 1000000",
        " --tag-a ", h == 1 ? "a" : "c", " --tag-b ", h == 1 ? "b" : "d", " --start-utc-ns ",
        start_utc_ns);
    producers.push_back(
        ct::Spawn({"/bin/sh", "-c", cmd}, dir.File(absl::StrCat("producer", h, ".log"))));
  };

  const int64_t t0 = RealtimeNs();
  constexpr int64_t kSecond = 1'000'000'000;
  constexpr int64_t kOffsetNs = 5 * kSecond;
  const pid_t host1 = collector(1, "host1", 24, 0);
  const pid_t host2a = collector(2, "host2a", 9, 0);
  producer(1, 1, t0 + 5 * kSecond);
  producer(2, 1, t0 + 5 * kSecond + 2'000'000);
  ASSERT_EQ(ct::WaitExit(host2a, std::chrono::seconds(120)), 0)
      << ct::ReadFile(dir.File("host2a.log"));
  const pid_t host2b = collector(2, "host2b", 10, kOffsetNs);
  const int64_t t1 = RealtimeNs();
  producer(1, 1001, t1 + 5 * kSecond);
  producer(2, 1001, t1 + 5 * kSecond + 2'000'000);
  for (pid_t p : producers) EXPECT_EQ(ct::WaitExit(p, std::chrono::seconds(120)), 0);
  EXPECT_EQ(ct::WaitExit(host2b, std::chrono::seconds(120)), 0)
      << ct::ReadFile(dir.File("host2b.log"));
  EXPECT_EQ(ct::WaitExit(host1, std::chrono::seconds(120)), 0)
      << ct::ReadFile(dir.File("host1.log"));
  for (int h : {1, 2}) ct::RemoveSessionSegments(absl::StrCat(session, h));

  absl::StatusOr<std::unique_ptr<store::StoreReader>> store = store::StoreReader::Open(server.Uri("mh"));
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<store::RunRow>> runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 3u);
  int64_t host1_run = 0;
  for (const store::RunRow& r : *runs) {
    EXPECT_TRUE(r.host == "host1" || r.host == "host2") << r.host;
    // chrony or ptp4l, when this machine runs them, take precedence.
    if (r.host == "host1") host1_run = r.run_id;
  }
  ASSERT_NE(host1_run, 0);

  StitchOptions stitch;
  stitch.pipeline = {"a", "b", "c", "d"};
  int64_t stitched = 0;
  absl::StatusOr<std::vector<StitchedStageStats>> breakdown =
      StitchedBreakdown(**store, host1_run, store::TimeWindow{}, stitch, 0, &stitched);
  ASSERT_TRUE(breakdown.ok()) << breakdown.status();
  EXPECT_EQ(stitched, 400) << "every order of both phases stitched across the two hosts";
  ASSERT_EQ(breakdown->size(), 3u);
  EXPECT_EQ((*breakdown)[0].stage, "a->b");
  EXPECT_FALSE((*breakdown)[0].cross_host);
  EXPECT_EQ((*breakdown)[1].stage, "b->c");
  EXPECT_TRUE((*breakdown)[1].cross_host);
  EXPECT_EQ((*breakdown)[1].from_host, "host1");
  EXPECT_EQ((*breakdown)[1].to_host, "host2");
  EXPECT_EQ((*breakdown)[2].stage, "c->d");
  EXPECT_FALSE((*breakdown)[2].cross_host);
  for (const StitchedStageStats& s : *breakdown) EXPECT_EQ(s.count, 400) << s.stage;

  // Per order: the cross-host stage flagged with both hosts' bounds (unless
  // a clock daemon said otherwise); phase 2's b->c moved by the offset.
  std::vector<double> phase1, phase2, same_host1, same_host2;
  for (int first : {1, 1001}) {
    for (int id = first; id < first + 200; ++id) {
      absl::StatusOr<std::optional<UtcStitchedOrder>> o =
          StitchOrder(**store, host1_run, id, stitch);
      ASSERT_TRUE(o.ok()) << o.status();
      ASSERT_TRUE(o->has_value()) << id;
      const UtcStitchedOrder& order = **o;
      ASSERT_TRUE(order.complete) << id;
      // Both hosts (by UTC a producer's first stamp may come late: either first).
      std::vector<std::string> hosts_seen = order.hosts;
      std::sort(hosts_seen.begin(), hosts_seen.end());
      ASSERT_EQ(hosts_seen, (std::vector<std::string>{"host1", "host2"})) << id;
      ASSERT_EQ(order.stages.size(), 3u) << id;
      const StitchedStage& hop = order.stages[1];
      EXPECT_TRUE(hop.cross_host);
      EXPECT_EQ(hop.flags & store::kFlagCrossHost, store::kFlagCrossHost);
      ASSERT_TRUE(hop.uncertainty_ns.has_value()) << id;
      bool daemon = false;  // chrony or ptp4l on this machine said the bound
      for (const store::RunRow& r : *runs) {
        const double flag = r.host == "host1" ? 1000 : 2000;
        daemon = daemon || (r.clock_error_ns && *r.clock_error_ns != flag);
      }
      if (!daemon) {
        EXPECT_DOUBLE_EQ(*hop.uncertainty_ns, 3000) << id;
      }
      EXPECT_EQ(order.stages[0].flags & store::kFlagCrossHost, 0u);
      (first == 1 ? phase1 : phase2).push_back(hop.latency_ns);
      (first == 1 ? same_host1 : same_host2).push_back(order.stages[2].latency_ns);
    }
  }
  const double moved = Median(phase2) - Median(phase1);
  EXPECT_NEAR(moved, double(kOffsetNs), 100e6)
      << "b->c moved by " << moved << " ns; the offset was " << kOffsetNs;
  EXPECT_NEAR(Median(phase1), 2e6, 100e6);
  // A same-host stage does not move with the host's UTC.
  EXPECT_NEAR(Median(same_host2), Median(same_host1), 1e6);

  // ---- The viewer binary, --hosts: the same store, the same expectations.
  bool daemon = false;  // chrony or ptp4l on this machine gave the bounds
  for (const store::RunRow& r : *runs) {
    daemon = daemon || (r.clock_error_ns && *r.clock_error_ns != (r.host == "host1" ? 1000 : 2000));
  }
  const std::string store_flags = absl::StrCat("--store ", server.Uri("mh"));
  const std::string across =
      absl::StrCat(store_flags, " --hosts all --run ", host1_run, " --pipeline a,b,c,d");
  // The expected stage rows: (stage, from, to, cross_host).
  struct Expected {
    std::string stage, from, to;
    bool cross;
  };
  const Expected kStages[] = {{"a->b", "host1", "host1", false},
                              {"b->c", "host1", "host2", true},
                              {"c->d", "host2", "host2", false},
                              {"total", "host1", "host2", true}};
  const auto expect_stage = [&](const nlohmann::json& j, const Expected& e,
                                const std::string& context) {
    EXPECT_EQ(j["stage"], e.stage) << context;
    EXPECT_EQ(j["from_host"], e.from) << context << " " << e.stage;
    EXPECT_EQ(j["to_host"], e.to) << context << " " << e.stage;
    EXPECT_EQ(j["cross_host"], e.cross) << context << " " << e.stage;
    if (!e.cross) {
      EXPECT_TRUE(j["uncertainty_ns"].is_null()) << context << " " << e.stage;
    } else if (!daemon) {
      // 1000 (host1's --clock-error-ns) + 2000 (host2's); the total has one
      // cross-host stage, so the same sum.
      EXPECT_EQ(j["uncertainty_ns"], 3000.0) << context << " " << e.stage;
    } else {
      EXPECT_TRUE(j["uncertainty_ns"].is_number()) << context << " " << e.stage;
    }
  };

  {  // summary --hosts --json: every order of both phases stitched.
    const ViewResult r = View(dir, absl::StrCat("summary ", across, " --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["stitched"], true);
    EXPECT_EQ(j["reference_run"]["run"], host1_run);
    EXPECT_EQ(j["reference_run"]["host"], "host1");
    EXPECT_EQ(j["hosts"], (std::vector<std::string>{"host1", "host2"}));
    EXPECT_EQ(j["orders"], 400);
    EXPECT_EQ(j["orders_across_hosts"], 400);
    EXPECT_EQ(j["orders_incomplete"], 0);
    ASSERT_EQ(j["stages"].size(), 4u) << r.out;
    for (size_t i = 0; i < 4; ++i) {
      expect_stage(j["stages"][i], kStages[i], "summary");
      EXPECT_EQ(j["stages"][i]["count"], 400) << kStages[i].stage;
    }
    // Phase 1's totals ~2 ms (+ c->d), phase 2's 5 s more: the median is
    // phase 1's largest, the maximum phase 2's.
    EXPECT_NEAR(j["stages"][3]["p50_ns"].get<double>(), 2e6, 100e6);
    EXPECT_NEAR(j["stages"][3]["max_ns"].get<double>(), double(kOffsetNs), 100e6);
  }
  {  // summary --hosts, text: the hosts and the uncertainty per stage.
    const ViewResult r = View(dir, absl::StrCat("summary ", across));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::cout << r.out;  // in the test's log: what a user sees (docs/viewer.md quotes it)
    EXPECT_NE(r.out.find("stitched across hosts host1, host2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("400 orders, 400 with stamps on more than one host"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("host1 -> host2"), std::string::npos) << r.out;
    if (!daemon) {
      EXPECT_NE(r.out.find("± 3.00 µs"), std::string::npos) << r.out;
    }
  }
  {  // orders --slowest 3 --hosts: phase 2's orders (5 s later on host2).
    const ViewResult r = View(dir, absl::StrCat("orders --slowest 3 ", across, " --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["stage"], "total");
    ASSERT_EQ(j["orders"].size(), 3u) << r.out;
    for (const nlohmann::json& o : j["orders"]) {
      const int64_t id = std::stoll(o["order_id"].get<std::string>());
      EXPECT_GE(id, 1001);
      EXPECT_LT(id, 1201);
      EXPECT_GT(o["latency_ns"].get<double>(), double(kOffsetNs) - 100e6);
      ASSERT_EQ(o["stages"].size(), 3u);
      for (size_t i = 0; i < 3; ++i) expect_stage(o["stages"][i], kStages[i], "orders");
      expect_stage(o["total"], kStages[3], "orders total");
    }
    const ViewResult text = View(dir, absl::StrCat("orders --slowest 2 ", across,
                                                   " --stage 'c->d'"));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("slowest orders by c->d"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("host1 -> host2"), std::string::npos) << text.out;
  }
  {  // order 42 with --pipeline: its stages as the breakdown's.
    const ViewResult r = View(dir, absl::StrCat("order 42 ", across, " --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["order_id"], "42");
    EXPECT_EQ(j["complete"], true);
    ASSERT_EQ(j["stamps"].size(), 4u) << r.out;
    for (const nlohmann::json& st : j["stamps"]) {
      const std::string tag = st["tag"];
      EXPECT_EQ(st["host"], tag == "a" || tag == "b" ? "host1" : "host2") << tag;
    }
    ASSERT_EQ(j["stages"].size(), 3u) << r.out;
    for (size_t i = 0; i < 3; ++i) expect_stage(j["stages"][i], kStages[i], "order");
    expect_stage(j["total"], kStages[3], "order total");
  }
  {  // order 1042 without --run and --pipeline: every stamp by UTC (host2's
     // may come first: the producers' scheduling), each stage's hosts
     // flagged as they are.
    const ViewResult r = View(dir, absl::StrCat("order 1042 ", store_flags, " --hosts all --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["stamps"].size(), 4u) << r.out;
    ASSERT_EQ(j["stages"].size(), 3u) << r.out;
    int crossing = 0;
    for (size_t i = 0; i < 3; ++i) {
      const nlohmann::json& st = j["stages"][i];
      const std::string from_tag = j["stamps"][i]["tag"], to_tag = j["stamps"][i + 1]["tag"];
      const std::string from = from_tag == "a" || from_tag == "b" ? "host1" : "host2";
      const std::string to = to_tag == "a" || to_tag == "b" ? "host1" : "host2";
      expect_stage(st, Expected{absl::StrCat(from_tag, "->", to_tag), from, to, from != to},
                   "order 1042");
      crossing += from != to;
    }
    EXPECT_GE(crossing, 1) << r.out;
    const ViewResult text = View(dir, absl::StrCat("order 1042 ", across));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("order 1042: hosts"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("host1 -> host2"), std::string::npos) << text.out;
  }
  {  // report --hosts: the stitched breakdown and waterfalls name the hosts.
    const std::string html = dir.File("stitched.html");
    const ViewResult r =
        View(dir, absl::StrCat("report ", across, " --slowest 2 --out ", html, " --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["run"], host1_run);
    EXPECT_EQ(j["stitched"]["orders"], 400);
    EXPECT_EQ(j["stitched"]["orders_across_hosts"], 400);
    EXPECT_EQ(j["stitched"]["slowest"], 2);
    const std::string page = ct::ReadFile(html);
    EXPECT_NE(page.find("id=\"cross-host-breakdown\""), std::string::npos);
    EXPECT_NE(page.find("id=\"cross-host-waterfall-2\""), std::string::npos);
    EXPECT_NE(page.find("b-&gt;c (host1 -&gt; host2)"), std::string::npos);
    EXPECT_NE(page.find("c-&gt;d (host2)"), std::string::npos);
    if (!daemon) {
      EXPECT_NE(page.find("± 3.00 µs"), std::string::npos);
    }
  }
  {  // One host chosen: nothing crosses; a host the store lacks: one line.
    const ViewResult r = View(dir, absl::StrCat("summary ", store_flags, " --hosts host1 --run ",
                                                host1_run, " --pipeline a,b,c,d --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["orders_across_hosts"], 0);
    EXPECT_EQ(j["orders_incomplete"], 400);
    ASSERT_EQ(j["stages"].size(), 2u) << r.out;
    expect_stage(j["stages"][0], kStages[0], "one host");
    const ViewResult bad = View(dir, absl::StrCat("summary ", store_flags, " --hosts host9"));
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("no run of host 'host9' (its hosts: host1, host2)"), std::string::npos)
        << bad.err;
  }
}

}  // namespace
}  // namespace ticktrace::view
