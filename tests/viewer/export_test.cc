// export --format chrome|csv on the known store, and its --out/--force rules.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "store_fixture.h"
#include "viewer/export/chrome_export.h"
#include "viewer/export/csv_export.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {
namespace {

using ExportTest = testing::KnownStoreTest;

// Stamps of run 2 per order, from the fixture's own story: orders 1..100
// have md, strategy, risk (span), gateway; 101 has md; 102 strategy, gateway.
int64_t StampsOfOrder(int64_t order) { return order <= 100 ? 4 : (order == 101 ? 1 : 2); }

TEST_F(ExportTest, ChromeParsesAndHoldsEveryStampOfEveryOrder) {
  std::stringstream out;
  auto result = ExportChrome(*store_, ExportOptions(), out);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->orders, 102);
  EXPECT_EQ(result->stamps, 100 * 4 + 1 + 2);

  const nlohmann::json j = nlohmann::json::parse(out.str());  // throws if not JSON
  ASSERT_TRUE(j.at("traceEvents").is_array());
  std::map<int64_t, int64_t> stamp_events;  // order -> events
  std::map<std::string, int64_t> phases;
  std::set<std::pair<int64_t, int64_t>> named_threads;
  std::set<int64_t> named_processes;
  std::map<int64_t, std::vector<std::string>> flows;  // id -> phases in file order
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.at("ph");
    ++phases[ph];
    if (ph == "X") {
      ASSERT_TRUE(e.at("ts").is_number());
      ASSERT_TRUE(e.at("dur").is_number());
      ASSERT_TRUE(e.at("args").at("order_id").is_string());
      ++stamp_events[std::stoll(e["args"]["order_id"].get<std::string>())];
      if (e["cat"] == "span") {
        EXPECT_GT(e["dur"].get<double>(), 0.1);
      } else {
        EXPECT_EQ(e["dur"].get<double>(), 0.001);  // 1 ns, in µs
      }
    } else if (ph == "M") {
      if (e["name"] == "process_name") named_processes.insert(e["pid"].get<int64_t>());
      if (e["name"] == "thread_name") {
        named_threads.insert({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
      }
    } else if ((ph == "s" || ph == "t" || ph == "f") && e.at("cat") == "order") {
      ASSERT_TRUE(e.at("id").is_string());
      flows[std::stoll(e["id"].get<std::string>(), nullptr, 16)].push_back(ph);
    }
  }
  ASSERT_EQ(stamp_events.size(), 102u);
  for (const auto& [order, n] : stamp_events) EXPECT_EQ(n, StampsOfOrder(order)) << order;
  EXPECT_EQ(named_processes, (std::set<int64_t>{1001, 1002, 1003}));
  EXPECT_EQ(named_threads.size(), 3u);
  EXPECT_TRUE(named_threads.count({1002, 2002}));
  // Every order with two stamps or more is one flow: s, t..., f.
  EXPECT_EQ(flows.size(), 101u);  // 101 has a single stamp
  for (const auto& [id, ph] : flows) {
    ASSERT_EQ(static_cast<int64_t>(ph.size()), StampsOfOrder(id)) << id;
    EXPECT_EQ(ph.front(), "s");
    EXPECT_EQ(ph.back(), "f");
  }
  EXPECT_EQ(j.at("otherData").at("run").get<int64_t>(), 2);
}

TEST_F(ExportTest, ChromeTimestampsKeepNanoseconds) {
  ExportOptions options;
  options.limit = 1;  // order 1: md at +1 ms, strategy 10 ns later
  std::stringstream out;
  auto result = ExportChrome(*store_, options, out);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->orders, 1);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::map<std::string, double> ts;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") ts[e["name"]] = e["ts"].get<double>();
  }
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_NEAR(ts["strategy"] - ts["md"], 0.010, 1e-9);  // µs
  EXPECT_NEAR(ts["gateway"] - ts["strategy"], 1.001, 1e-9);
}

TEST_F(ExportTest, ChromeLimitTakesFirstOrdersByTime) {
  ExportOptions options;
  options.limit = 10;
  std::stringstream out;
  auto result = ExportChrome(*store_, options, out);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->orders, 10);
  EXPECT_EQ(result->stamps, 40);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::set<int64_t> orders;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") orders.insert(std::stoll(e["args"]["order_id"].get<std::string>()));
  }
  EXPECT_EQ(orders.size(), 10u);
  EXPECT_EQ(*orders.begin(), 1);
  EXPECT_EQ(*orders.rbegin(), 10);
}

// Order IDs above 2^53 (where a JSON number, a double in JavaScript, no
// longer tells neighbours apart) and at 2^63 and above (stored as negative
// INTEGERs) each survive as their own string: decimal in args, hex in the
// flow id. The expected strings are written out by hand.
TEST(ChromeExportBigIdsTest, EveryDistinctIdSurvivesAsADistinctString) {
  testing::TempDir dir;
  const std::string path = dir.File("big.db");
  struct Id {
    int64_t stored;       // as the store keeps it
    const char* decimal;  // unsigned decimal
    const char* hex;      // the flow id
  };
  const std::vector<Id> ids = {
      {int64_t{1} << 53, "9007199254740992", "0x20000000000000"},
      {(int64_t{1} << 53) + 1, "9007199254740993", "0x20000000000001"},
      {(int64_t{1} << 53) + 2, "9007199254740994", "0x20000000000002"},
      {INT64_MAX, "9223372036854775807", "0x7fffffffffffffff"},
      {INT64_MIN, "9223372036854775808", "0x8000000000000000"},          // 2^63
      {INT64_MIN + 1, "9223372036854775809", "0x8000000000000001"},      // 2^63 + 1
      {-1, "18446744073709551615", "0xffffffffffffffff"},                 // 2^64 - 1
  };
  {
    testing::FixtureRun run = testing::GivenClockRun("big");
    run.meta.started_utc_ns = testing::KnownStore::BaseUtcNs();
    run.meta.pipeline = "a,b";
    store::ProcessRow p;
    p.process_id = 1;
    p.pid = 500;
    p.name = "p";
    p.segment = "ticktrace.big.500";
    run.snapshot.processes.push_back(p);
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t first = run.meta.started_utc_ns + static_cast<int64_t>(i) * 1000;
      store::OrderDetail o;
      o.order_id = static_cast<uint64_t>(ids[i].stored);
      o.first_utc_ns = first;
      o.total_ns = 100;
      o.complete = true;
      if (i > 0) o.parent_order_id = static_cast<uint64_t>(ids[i - 1].stored);
      for (int k = 0; k < 2; ++k) {
        store::StampDetail s;
        s.tag = k == 0 ? "a" : "b";
        s.process_id = 1;
        s.tid = 501;
        s.tsc = 1000 + i * 1000 + static_cast<uint64_t>(k) * 100;
        s.utc_ns = first + k * 100;
        o.stamps.push_back(s);
      }
      o.first_tsc = o.stamps[0].tsc;
      o.first_tsc_utc_ns = o.stamps[0].utc_ns;
      run.orders.push_back(o);
    }
    testing::WriteStore(path, {run});
  }
  auto store = store::StoreReader::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  std::stringstream out;
  auto result = ExportChrome(**store, ExportOptions(), out);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->orders, static_cast<int64_t>(ids.size()));

  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::map<std::string, int> args_ids, flow_ids, link_ids;
  std::map<std::string, std::string> parent_of;  // decimal id -> decimal parent
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      ASSERT_TRUE(e["args"]["order_id"].is_string()) << e.dump();
      ++args_ids[e["args"]["order_id"].get<std::string>()];
      if (e["args"].contains("parent_order_id")) {
        ASSERT_TRUE(e["args"]["parent_order_id"].is_string()) << e.dump();
        parent_of[e["args"]["order_id"]] = e["args"]["parent_order_id"];
      }
    } else if (ph == "s" || ph == "f") {
      ASSERT_TRUE(e["id"].is_string()) << e.dump();
      ++(e["cat"] == "link" ? link_ids : flow_ids)[e["id"].get<std::string>()];
    }
  }
  ASSERT_EQ(args_ids.size(), ids.size());
  ASSERT_EQ(flow_ids.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(args_ids[ids[i].decimal], 2) << ids[i].decimal;  // both stamps
    EXPECT_EQ(flow_ids[ids[i].hex], 2) << ids[i].hex;          // "s" and "f"
    if (i > 0) {
      EXPECT_EQ(parent_of[ids[i].decimal], ids[i - 1].decimal);
      EXPECT_EQ(link_ids[ids[i].hex], 2) << ids[i].hex;  // from its parent: "s" and "f"
    }
  }
}

TEST_F(ExportTest, CsvHasHeaderAndOneRowPerSample) {
  std::stringstream out;
  auto result = ExportCsv(*store_, ExportOptions(), out);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::vector<std::string> lines =
      absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  const size_t samples = testing::KnownSamples().size();
  ASSERT_EQ(lines.size(), samples + 1);
  EXPECT_EQ(lines[0], kCsvHeader);
  EXPECT_EQ(result->rows, static_cast<int64_t>(samples));
  const size_t columns = std::vector<std::string>(absl::StrSplit(lines[0], ',')).size();
  std::map<std::string, int> per_stage;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(cells.size(), columns) << lines[i];
    EXPECT_EQ(cells[0], "2");
    ++per_stage[cells[2]];
  }
  EXPECT_EQ(per_stage["md->strategy"], 100);
  EXPECT_EQ(per_stage["strategy->gateway"], 101);
  EXPECT_EQ(per_stage["total"], 101);
  // Order 13's negative sample keeps its value and flags.
  EXPECT_NE(out.str().find("\n2,13,md->strategy,"), std::string::npos);
  EXPECT_NE(out.str().find(",-5,1,2,1,2,6\n"), std::string::npos) << out.str().substr(0, 400);
}

TEST_F(ExportTest, CsvLimitAndOlderRun) {
  ExportOptions options;
  options.limit = 2;
  std::stringstream out;
  auto result = ExportCsv(*store_, options, out);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->orders, 2);
  EXPECT_EQ(result->rows, 8);

  options = ExportOptions();
  options.run_id = 1;
  std::stringstream old;
  result = ExportCsv(*store_, options, old);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->rows, 2);
  options.run_id = 3;
  EXPECT_TRUE(absl::IsNotFound(ExportCsv(*store_, options, old).status()));
}

TEST(CsvFieldTest, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(CsvField("a->b"), "a->b");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
}

}  // namespace
}  // namespace ticktrace::view

namespace ticktrace::view {
namespace {

// An id used twice in a run (instances 0 and 1, each with two stamps and one
// sample): each orders row exports its own instance once, not both twice.
TEST(ExportInstancesTest, EachInstanceExportsItsOwnRowsOnce) {
  testing::TempDir dir;
  const std::string path = dir.File("instances.db");
  testing::FixtureRun run = testing::GivenClockRun("reuse");
  run.meta.started_utc_ns = testing::KnownStore::BaseUtcNs();
  run.meta.pipeline = "a,b";
  for (uint32_t instance = 0; instance < 2; ++instance) {
    store::OrderDetail o;
    o.order_id = 7;
    o.instance = instance;
    o.first_utc_ns = run.meta.started_utc_ns + instance * 1'000'000;
    o.complete = true;
    o.total_ns = 100;
    for (int k = 0; k < 2; ++k) {
      store::StampDetail s;
      s.tag = k == 0 ? "a" : "b";
      s.process_id = 1;
      s.tid = 1;
      s.tsc = 1'000'000 + instance * 1'000'000 + static_cast<uint64_t>(k) * 100;
      s.utc_ns = o.first_utc_ns + k * 100;
      o.stamps.push_back(s);
    }
    o.first_tsc = o.stamps[0].tsc;
    o.first_tsc_utc_ns = o.first_utc_ns;
    store::SampleDetail sample;
    sample.stage = "a->b";
    sample.start_utc_ns = o.first_utc_ns;
    sample.latency_ns = 100;
    o.samples.push_back(sample);
    run.orders.push_back(o);
  }
  testing::WriteStore(path, {run});
  auto store = store::StoreReader::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();

  ExportOptions options;
  options.limit = 10;
  std::stringstream csv;
  auto rows = ExportCsv(**store, options, csv);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->orders, 2);
  EXPECT_EQ(rows->rows, 2);  // one a->b sample per instance
  std::stringstream chrome;
  auto events = ExportChrome(**store, options, chrome);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->stamps, 4);  // two stamps per instance
}

}  // namespace
}  // namespace ticktrace::view

// export --out FILE never replaces what is there without --force (it once
// silently overwrote a 0444 file and a symlink's target), and with
// --force replaces the name itself, never a symlink's target.
namespace ticktrace::view {
namespace {

class ExportOutTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteKnownStore(dir_.File("known.db")); }

  // Runs `ticktrace-view export --format csv --db known.db --out <out> [extra]`;
  // the exit status, stderr in `err`.
  int Export(const std::string& out, const std::string& extra, std::string* err) {
    const std::string command =
        absl::StrCat(TICKTRACE_VIEW_BINARY, " export --format csv --db '", dir_.File("known.db"),
                     "' --out '", out, "' ", extra, " 2>'", dir_.File("stderr"), "' >/dev/null");
    const int status = std::system(command.c_str());
    *err = testing::ReadFile(dir_.File("stderr"));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // The directory holds exactly `names` (no temporary file left behind).
  void ExpectOnly(std::vector<std::string> names) {
    names.push_back("known.db");
    names.push_back("stderr");
    std::sort(names.begin(), names.end());
    EXPECT_EQ(dir_.List(), names);
  }
  testing::TempDir dir_;
};

bool IsSymlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

TEST_F(ExportOutTest, ReadOnlyFileIsRefusedWithoutForceAndReplacedWithIt) {
  const std::string out = dir_.File("out.csv");
  std::ofstream(out) << "someone's work\n";
  ASSERT_EQ(::chmod(out.c_str(), 0444), 0);
  const testing::FileSnapshot before = testing::Snapshot(out);
  std::string err;
  EXPECT_EQ(Export(out, "", &err), 1);
  EXPECT_EQ(err, absl::StrCat("ticktrace-view: --out ", out, " exists; add --force to replace it\n"));
  EXPECT_TRUE(testing::Snapshot(out) == before);
  ExpectOnly({"out.csv"});

  EXPECT_EQ(Export(out, "--force", &err), 0) << err;
  EXPECT_TRUE(absl::StartsWith(testing::ReadFile(out), "run_id,order_id,")) << err;
  ExpectOnly({"out.csv"});
}

TEST_F(ExportOutTest, SymlinkIsRefusedAndNeverFollowed) {
  const std::string target = dir_.File("target.txt");
  std::ofstream(target) << "the link's target\n";
  const testing::FileSnapshot before = testing::Snapshot(target);
  const std::string link = dir_.File("link.csv");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const std::string dangling = dir_.File("dangling.csv");
  ASSERT_EQ(::symlink(dir_.File("nothing-here").c_str(), dangling.c_str()), 0);
  std::string err;
  EXPECT_EQ(Export(link, "", &err), 1);
  EXPECT_TRUE(absl::StrContains(err, "exists; add --force")) << err;
  EXPECT_EQ(Export(dangling, "", &err), 1);
  EXPECT_TRUE(absl::StrContains(err, "exists; add --force")) << err;
  EXPECT_TRUE(testing::Snapshot(target) == before);
  EXPECT_TRUE(IsSymlink(link));
  EXPECT_TRUE(IsSymlink(dangling));
  ExpectOnly({"dangling.csv", "link.csv", "target.txt"});  // nothing-here not created

  // --force replaces the link, not its target.
  EXPECT_EQ(Export(link, "--force", &err), 0) << err;
  EXPECT_FALSE(IsSymlink(link));
  EXPECT_TRUE(absl::StartsWith(testing::ReadFile(link), "run_id,order_id,"));
  EXPECT_TRUE(testing::Snapshot(target) == before);
}

TEST_F(ExportOutTest, NewFileIsWrittenAndDirectoryRefused) {
  std::string err;
  EXPECT_EQ(Export(dir_.File("new.csv"), "", &err), 0) << err;
  EXPECT_TRUE(absl::StartsWith(testing::ReadFile(dir_.File("new.csv")), "run_id,order_id,"));
  ASSERT_EQ(::mkdir(dir_.File("sub").c_str(), 0755), 0);
  EXPECT_EQ(Export(dir_.File("sub"), "--force", &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "is a directory")) << err;
  ExpectOnly({"new.csv", "sub"});
}

// A node that is not a file is never replaced, --force or not (renaming a
// temporary file over /dev/null once turned it into a regular 0644 file): a
// character device is written in place, also through a symlink (as
// /dev/stdout is one); a FIFO or a socket is refused in one line without
// being opened (a FIFO with no reader would block the export).
TEST_F(ExportOutTest, ADeviceIsWrittenInPlaceAFifoOrSocketRefusedNoneReplaced) {
  struct stat null_before;
  ASSERT_EQ(::stat("/dev/null", &null_before), 0);
  ASSERT_TRUE(S_ISCHR(null_before.st_mode));
  std::string err;
  EXPECT_EQ(Export("/dev/null", "--force", &err), 0) << err;
  EXPECT_EQ(Export("/dev/null", "", &err), 0) << err;
  struct stat null_after;
  ASSERT_EQ(::stat("/dev/null", &null_after), 0);
  EXPECT_TRUE(S_ISCHR(null_after.st_mode)) << "/dev/null is no longer a device";
  EXPECT_EQ(null_after.st_rdev, null_before.st_rdev);
  EXPECT_EQ(null_after.st_ino, null_before.st_ino);

  const std::string to_null = dir_.File("to-null");
  ASSERT_EQ(::symlink("/dev/null", to_null.c_str()), 0);
  EXPECT_EQ(Export(to_null, "--force", &err), 0) << err;
  EXPECT_TRUE(IsSymlink(to_null));

  const std::string fifo = dir_.File("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(Export(fifo, "--force", &err), 1);
  EXPECT_EQ(err, absl::StrCat("ticktrace-view: --out ", fifo,
                              " is a FIFO, not a file; refusing to write into it or replace it "
                              "(--out - writes to stdout)\n"));
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";

  const std::string socket_path = dir_.File("sock");
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof(addr.sun_path));
  std::copy(socket_path.begin(), socket_path.end(), addr.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(Export(socket_path, "--force", &err), 1);
  EXPECT_TRUE(absl::StrContains(err, "is a socket, not a file")) << err;
  ASSERT_EQ(::lstat(socket_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode)) << "the socket was replaced";
  ::close(sock);
  ExpectOnly({"fifo", "sock", "to-null"});
}

// `--out -` writes to stdout.
TEST_F(ExportOutTest, DashWritesToStdout) {
  const std::string stdout_file = dir_.File("stdout.csv");
  const std::string command =
      absl::StrCat(TICKTRACE_VIEW_BINARY, " export --format csv --db '", dir_.File("known.db"),
                   "' --out - 2>'", dir_.File("stderr"), "' >'", stdout_file, "'");
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << testing::ReadFile(dir_.File("stderr"));
  EXPECT_TRUE(absl::StartsWith(testing::ReadFile(stdout_file), "run_id,order_id,"));
  ExpectOnly({"stdout.csv"});
}

}  // namespace
}  // namespace ticktrace::view

// A flow joins a parent order to each linked child (otherwise a tick's flow
// and its child order's are not connected). Known store: 102 is linked to
// 50, its first own stamp is strategy 300 us after 50's first; 50's latest
// stamp before that is its gateway stamp at 500 + 1050 ns.
namespace ticktrace::view {
namespace {

TEST_F(ExportTest, ChromeLinksEachParentToItsChildren) {
  std::stringstream out;
  auto result = ExportChrome(*store_, ExportOptions(), out);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->links, 1);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  const int64_t base_ns = j["otherData"]["base_utc_ns"].get<int64_t>();
  const int64_t first50_ns = testing::KnownStore::FirstUtcNs(50);
  std::vector<nlohmann::json> links;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") == "link") links.push_back(e);
  }
  ASSERT_EQ(links.size(), 2u) << out.str();
  const nlohmann::json& s = links[0]["ph"] == "s" ? links[0] : links[1];
  const nlohmann::json& f = links[0]["ph"] == "s" ? links[1] : links[0];
  EXPECT_EQ(s["ph"], "s");
  EXPECT_EQ(f["ph"], "f");
  EXPECT_EQ(s["id"], f["id"]);
  EXPECT_TRUE(s["id"].is_string());
  EXPECT_EQ(s["args"]["parent_order_id"], "50");
  EXPECT_EQ(s["args"]["order_id"], "102");
  EXPECT_NEAR(s["ts"].get<double>(), static_cast<double>(first50_ns + 1550 - base_ns) / 1e3, 1e-6);
  EXPECT_EQ(s["pid"], 1003);  // gateway
  EXPECT_EQ(s["tid"], 2003);
  EXPECT_NEAR(f["ts"].get<double>(), static_cast<double>(first50_ns + 300'000 - base_ns) / 1e3,
              1e-6);
  EXPECT_EQ(f["pid"], 1002);  // strategy
  EXPECT_EQ(f["tid"], 2002);
  EXPECT_EQ(f["bp"], "e");
}

}  // namespace
}  // namespace ticktrace::view
