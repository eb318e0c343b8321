// export --format otlp-json and --format otlp through the real ticktrace-view
// binary, against the known store (store_fixture.h) read through the store
// reader: every span's ids (the documented FNV-1a keys, computed here), times,
// names, attributes, status, links and resource. The protobuf bodies reach a
// loopback receiver and are decoded by protoc --decode_raw (skipped when
// protoc is missing; CI installs protobuf-compiler). The JSON is checked
// against OTLP/JSON's rules with nlohmann/json.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "otlp_spans.h"
#include "store_fixture.h"
#include "tests/support/otlp_receiver.h"
#include "tests/support/protoc_raw.h"
#include "ticktrace/store/flags.h"

namespace ticktrace::view {
namespace {

namespace otlpt = ::ticktrace::testing;
using otlpt::SpanView;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

CliResult RunView(const std::vector<std::string>& args, const testing::TempDir& dir) {
  const std::string out_path = dir.File(".stdout"), err_path = dir.File(".stderr");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(126);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::string program = TICKTRACE_VIEW_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{program.data()};
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::ReadFile(out_path);
  r.err = testing::ReadFile(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

// Bounds of the cores' TSC offsets: cross-core samples carry their sum.
const std::map<int64_t, double> kCoreBoundNs = {{1, 5}, {2, 7}, {3, 11}};

std::string FlagList(uint32_t flags) {
  std::string out;
  for (const store::FlagName& f : store::kFlagNames) {
    if ((flags & f.bit) != 0) out += (out.empty() ? "" : ",") + std::string(f.name);
  }
  return out;
}

// What the export must hold for `orders` of the store's latest run, from the
// store's own rows and docs/viewer.md's mapping.
std::vector<SpanView> Expected(store::StoreReader& r, const std::vector<store::OrderRow>& orders) {
  const store::RunRow run = *r.GetRun(std::nullopt);
  std::map<int64_t, store::ProcessRow> processes;
  const std::vector<store::ProcessRow> process_rows = *r.Processes(run.run_id);
  for (const store::ProcessRow& p : process_rows) processes[p.process_id] = p;
  std::map<int64_t, store::ThreadRow> thread_of;  // the fixture: one thread per process
  const std::vector<store::ThreadRow> thread_rows = *r.Threads(run.run_id);
  for (const store::ThreadRow& t : thread_rows) thread_of[t.process_id] = t;
  const uint32_t excluded = store::kFlagsExcludedByDefault;
  std::vector<SpanView> out;
  for (const store::OrderRow& o : orders) {
    const std::string key = otlpt::TraceKeyText(run.host, run.started_utc_ns, run.run_id,
                                                  static_cast<uint64_t>(o.order_id), o.instance);
    const std::string trace = otlpt::Fnv128Hex(key), root_id = otlpt::Fnv64Hex(key + "\nroot");
    std::vector<store::SampleRow> samples;
    const std::vector<store::SampleRow> all_samples = *r.SamplesOfOrder(run.run_id, o.order_id);
    for (const store::SampleRow& s : all_samples) {
      if (s.instance == o.instance) samples.push_back(s);
    }
    // The processes the instance has stamps in: a sample's end names its
    // thread when the order has a stamp there (a linked child's total starts
    // at its parent's stamp, which is not among its own).
    std::set<int64_t> stamped;
    const std::vector<store::StampRow> own_stamps =
        *r.StampsOfInstance(run.run_id, o.order_id, o.instance);
    for (const store::StampRow& st : own_stamps) {
      stamped.insert(st.process_id);
    }
    std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
      return a.start_utc_ns != b.start_utc_ns ? a.start_utc_ns < b.start_utc_ns : a.stage < b.stage;
    });
    SpanView root;
    root.trace_id = trace;
    root.span_id = root_id;
    root.name = "order";
    root.kind = 1;
    root.host_name = run.host;
    root.attributes["ticktrace.order_id"] = "s:" + std::to_string(static_cast<uint64_t>(o.order_id));
    root.attributes["ticktrace.instance"] = "i:" + std::to_string(o.instance);
    if (o.parent_order_id) {
      const std::string pk = otlpt::TraceKeyText(run.host, run.started_utc_ns, run.run_id,
                                                   static_cast<uint64_t>(*o.parent_order_id), 0);
      root.attributes["ticktrace.parent_order_id"] = "s:" + std::to_string(*o.parent_order_id);
      root.links.emplace_back(otlpt::Fnv128Hex(pk), otlpt::Fnv64Hex(pk + "\nroot"));
    }
    int64_t start = o.first_utc_ns, end = o.first_utc_ns;
    if (!samples.empty()) start = end = samples.front().start_utc_ns;
    uint32_t errors = 0;
    std::map<std::string, int> seen;
    for (const store::SampleRow& s : samples) {
      SpanView c;
      const int64_t s_end = s.start_utc_ns + std::llround(s.latency_ns);
      start = std::min(start, s.start_utc_ns);
      end = std::max(end, s_end);
      c.trace_id = trace;
      c.span_id = otlpt::Fnv64Hex(key + "\nspan\n" + s.stage + "\n" + std::to_string(seen[s.stage]++));
      c.parent_span_id = root_id;
      c.name = s.stage;
      c.kind = 1;
      c.start_ns = static_cast<uint64_t>(s.start_utc_ns);
      c.end_ns = static_cast<uint64_t>(s_end);
      c.host_name = run.host;
      c.service_name = processes.at(*s.process_begin).name;
      auto& a = c.attributes;
      a["ticktrace.stage"] = "s:" + s.stage;
      a["ticktrace.order_id"] = "s:" + std::to_string(static_cast<uint64_t>(s.order_id));
      a["ticktrace.instance"] = "i:" + std::to_string(s.instance);
      const std::pair<std::string, int64_t> ends[] = {{"begin", *s.process_begin},
                                                       {"end", *s.process_end}};
      for (const auto& [end_name, process] : ends) {
        a["ticktrace." + end_name + ".process.name"] = "s:" + processes.at(process).name;
        a["ticktrace." + end_name + ".process.pid"] = "i:" + std::to_string(processes.at(process).pid);
        if (stamped.count(process) > 0) {
          a["ticktrace." + end_name + ".thread.tid"] = "i:" + std::to_string(thread_of.at(process).tid);
          a["ticktrace." + end_name + ".thread.name"] = "s:" + thread_of.at(process).name;
        }
      }
      if (s.cpu_begin) {
        a["ticktrace.begin.cpu"] = "i:" + std::to_string(*s.cpu_begin);
      }
      if (s.cpu_end) {
        a["ticktrace.end.cpu"] = "i:" + std::to_string(*s.cpu_end);
      }
      for (const store::FlagName& f : store::kFlagNames) {
        if ((s.flags & f.bit) != 0) a["ticktrace.flag." + std::string(f.name)] = "b:true";
      }
      if (s.cpu_begin && s.cpu_end && *s.cpu_begin != *s.cpu_end) {
        a["ticktrace.uncertainty_ns"] = "d:" +
            otlpt::DoubleText(kCoreBoundNs.at(*s.cpu_begin) + kCoreBoundNs.at(*s.cpu_end));
      }
      if ((s.flags & excluded) != 0) {
        c.status_code = 2;
        c.status_message = FlagList(s.flags & excluded);
        errors |= s.flags & excluded;
      }
      out.push_back(std::move(c));
    }
    root.start_ns = static_cast<uint64_t>(start);
    root.end_ns = static_cast<uint64_t>(end);
    if (errors != 0) {
      root.status_code = 2;
      root.status_message = FlagList(errors);
    }
    if (!samples.empty()) {
      root.service_name = processes.at(*samples.front().process_begin).name;
    } else {
      const std::vector<store::StampRow> stamps =
          *r.StampsOfInstance(run.run_id, o.order_id, o.instance);
      root.service_name = stamps.empty() ? "" : processes.at(stamps.front().process_id).name;
    }
    out.push_back(std::move(root));
  }
  return out;
}

void ExpectSame(const std::vector<SpanView>& got_list, const std::vector<SpanView>& want_list) {
  const std::map<std::string, SpanView> got = otlpt::BySpanId(got_list);
  const std::map<std::string, SpanView> want = otlpt::BySpanId(want_list);
  auto order_of = [](const SpanView& s) {
    const auto it = s.attributes.find("ticktrace.order_id");
    return it == s.attributes.end() ? std::string("?") : it->second;
  };
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [id, w] : want) {
    const auto it = got.find(id);
    if (it == got.end()) {
      ADD_FAILURE() << "no span " << id << " (" << w.name << " of order " << order_of(w) << ")";
      continue;
    }
    const SpanView& g = it->second;
    SCOPED_TRACE("span " + w.name + " of order " + order_of(w));
    EXPECT_EQ(g.trace_id, w.trace_id);
    EXPECT_EQ(g.parent_span_id, w.parent_span_id);
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(g.kind, w.kind);
    EXPECT_EQ(g.start_ns, w.start_ns);
    EXPECT_EQ(g.end_ns, w.end_ns);
    EXPECT_EQ(g.attributes, w.attributes);
    EXPECT_EQ(g.links, w.links);
    EXPECT_EQ(g.status_code, w.status_code);
    EXPECT_EQ(g.status_message, w.status_message);
    EXPECT_EQ(g.service_name, w.service_name);
    EXPECT_EQ(g.host_name, w.host_name);
  }
}

// OTLP/JSON's rules: lowerCamelCase field names, hex ids of 32 and 16
// characters, 64-bit integers as decimal strings, enums as integers.
void ExpectJsonRules(const nlohmann::json& j, const std::string& key = "") {
  static const std::regex kCamel("^[a-z][a-zA-Z0-9]*$"), kDecimal("^-?[0-9]+$");
  if (key == "traceId") {
    EXPECT_TRUE(std::regex_match(j.get<std::string>(), std::regex("^[0-9a-f]{32}$"))) << j;
  }
  if (key == "spanId" || key == "parentSpanId") {
    EXPECT_TRUE(std::regex_match(j.get<std::string>(), std::regex("^[0-9a-f]{16}$"))) << j;
  }
  if (key == "startTimeUnixNano" || key == "endTimeUnixNano" || key == "intValue") {
    ASSERT_TRUE(j.is_string()) << key;
    EXPECT_TRUE(std::regex_match(j.get<std::string>(), kDecimal)) << key << " " << j;
  }
  if (key == "kind" || key == "code") {
    EXPECT_TRUE(j.is_number_integer()) << key;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      EXPECT_TRUE(std::regex_match(it.key(), kCamel)) << "field name " << it.key();
      ExpectJsonRules(it.value(), it.key());
    }
  } else if (j.is_array()) {
    for (const nlohmann::json& e : j) ExpectJsonRules(e, key);
  }
}

class OtlpExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<testing::FixtureRun> runs = testing::KnownRuns();
    for (const auto& [cpu, bound] : kCoreBoundNs) {
      runs[1].snapshot.cores.push_back(store::CoreRow{.cpu = cpu, .measured_utc_ns = 1,
                                                      .offset_ns = 0, .bound_ns = bound});
    }
    db_ = dir_.File("known.db");
    testing::WriteStore(db_, runs);
    store_ = testing::OpenStore(db_);
    ASSERT_NE(store_, nullptr);
  }
  std::vector<store::OrderRow> AllOrders() { return *store_->OrdersByTime(2, std::nullopt); }
  nlohmann::json ExportJson(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"export", "--db", db_, "--format", "otlp-json", "--out", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = RunView(args, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  }
  std::set<std::string> RootOrders(const nlohmann::json& j) {
    std::set<std::string> out;
    for (const SpanView& s : otlpt::SpansFromJson(j)) {
      if (s.parent_span_id.empty()) out.insert(s.attributes.at("ticktrace.order_id").substr(2));
    }
    return out;
  }

  testing::TempDir dir_;
  std::string db_;
  std::unique_ptr<store::StoreReader> store_;
};

TEST_F(OtlpExportTest, JsonFollowsTheSpecAndTheStore) {
  const std::string out = dir_.File("traces.json");
  const CliResult r =
      RunView({"export", "--db", db_, "--format", "otlp-json", "--out", out}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("102 orders"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFile(out), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 1u);  // one ExportTraceServiceRequest: resourceSpans only
  ExpectJsonRules(j);
  ExpectSame(otlpt::SpansFromJson(j), Expected(*store_, AllOrders()));
  // Spot checks of the mapping, by hand: order 13's md->strategy is negative
  // (excluded, so ERROR), 21's risk span migrated, 7 only cross-core (not an error).
  int errors = 0;
  for (const SpanView& s : otlpt::SpansFromJson(j)) {
    if (s.status_code == 2 && !s.parent_span_id.empty()) {
      ++errors;
      const std::string id = s.attributes.at("ticktrace.order_id").substr(2);
      EXPECT_TRUE((id == "13" && s.name == "md->strategy" && s.status_message == "negative") ||
                  (id == "21" && s.name == "risk" && s.status_message == "migrated"))
          << id << " " << s.name;
    }
  }
  EXPECT_EQ(errors, 2);
}

TEST_F(OtlpExportTest, ProtobufReachesTheReceiverAsTheStoreSays) {
  if (!otlpt::ProtocPath()) GTEST_SKIP() << "no protoc (Debian package protobuf-compiler)";
  otlpt::OtlpReceiver receiver;
  const CliResult r = RunView(
      {"export", "--db", db_, "--format", "otlp", "--endpoint", receiver.url()}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("102 orders, 504 spans -> " + receiver.url() + " (1 batches, 0 retries)"),
            std::string::npos)
      << r.out;
  const std::vector<otlpt::OtlpReceiver::Request> requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/traces");
  EXPECT_EQ(requests[0].content_type, "application/x-protobuf");
  const std::optional<otlpt::RawField> decoded = otlpt::DecodeRaw(requests[0].body, dir_.path());
  ASSERT_TRUE(decoded.has_value());
  ExpectSame(otlpt::SpansFromRaw(*decoded), otlpt::Rendered(Expected(*store_, AllOrders()), dir_.path()));
}

TEST_F(OtlpExportTest, RetriesABusyReceiverAndHonoursRetryAfter) {
  otlpt::OtlpReceiver receiver;
  receiver.Script({503});
  receiver.set_retry_after_s(1);
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = RunView({"export", "--db", db_, "--format", "otlp", "--endpoint",
                               receiver.url(), "--order", "50"},
                              dir_);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(1 batches, 1 retries)"), std::string::npos) << r.out;
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].status, 503);
  EXPECT_EQ(requests[1].status, 200);
  EXPECT_EQ(requests[0].body, requests[1].body);
  EXPECT_GE(elapsed_s, 0.9);  // Retry-After: 1
}

TEST_F(OtlpExportTest, ARefusedBodyIsOneLineAndAFailure) {
  otlpt::OtlpReceiver receiver;
  receiver.set_default_status(400);
  const CliResult r = RunView(
      {"export", "--db", db_, "--format", "otlp", "--endpoint", receiver.url()}, dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(receiver.url() + "/v1/traces: HTTP 400"), std::string::npos) << r.err;
  EXPECT_EQ(receiver.requests().size(), 1u);  // 400 is not retried
}

TEST_F(OtlpExportTest, ExportingTwiceGivesTheSameBytes) {
  const CliResult a = RunView({"export", "--db", db_, "--format", "otlp-json", "--out", "-"}, dir_);
  const CliResult b = RunView({"export", "--db", db_, "--format", "otlp-json", "--out", "-"}, dir_);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  otlpt::OtlpReceiver receiver;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(RunView({"export", "--db", db_, "--format", "otlp", "--endpoint", receiver.url()},
                      dir_)
                  .exit_code,
              0);
  }
  const auto bodies = receiver.accepted_bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0], bodies[1]);
}

TEST_F(OtlpExportTest, SelectsSlowestFlaggedAndOneOrder) {
  std::set<std::string> slowest;
  const std::vector<store::RankedOrder> ranked = *store_->FindSlowest(2, "total", 3);
  for (const store::RankedOrder& o : ranked) {
    slowest.insert(std::to_string(o.order_id));
  }
  EXPECT_EQ(RootOrders(ExportJson({"--slowest", "3"})), slowest);
  EXPECT_EQ(RootOrders(ExportJson({"--flagged"})), (std::set<std::string>{"13", "21"}));
  const nlohmann::json one = ExportJson({"--order", "50"});
  EXPECT_EQ(RootOrders(one), (std::set<std::string>{"50"}));
  ExpectSame(otlpt::SpansFromJson(one), Expected(*store_, *store_->OrderInstances(2, 50)));
  EXPECT_EQ(RootOrders(ExportJson({"--limit", "2"})), (std::set<std::string>{"1", "2"}));
  // chrome and csv take the same selection.
  const CliResult csv =
      RunView({"export", "--db", db_, "--format", "csv", "--out", "-", "--flagged"}, dir_);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 1 + 4 + 4) << csv.out;
}

TEST_F(OtlpExportTest, BadInputIsOneLine) {
  const std::string existing = dir_.File("existing.json");
  std::ofstream(existing) << "keep me";
  const testing::FileSnapshot before = testing::Snapshot(existing);
  // A port nothing listens on.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string closed = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  ::close(s);
  const std::vector<std::vector<std::string>> cases = {
      {"--format", "otlpx", "--out", dir_.File("a")},
      {"--format", "chrome", "--out", dir_.File("b"), "--endpoint", "http://127.0.0.1:1"},
      {"--format", "otlp"},
      {"--format", "otlp", "--endpoint", "127.0.0.1:4318"},
      {"--format", "otlp", "--endpoint", closed},
      {"--format", "otlp-json", "--out", existing},
      {"--format", "otlp-json", "--out", dir_.File("c"), "--order", "not-a-number"},
  };
  for (const std::vector<std::string>& c : cases) {
    std::vector<std::string> args = {"export", "--db", db_};
    args.insert(args.end(), c.begin(), c.end());
    const auto t0 = std::chrono::steady_clock::now();
    const CliResult r = RunView(args, dir_);
    SCOPED_TRACE(c[1] + " " + c.back());
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  }
  EXPECT_TRUE(testing::Snapshot(existing) == before);
  EXPECT_FALSE(std::ifstream(dir_.File("a")).good());
  EXPECT_FALSE(std::ifstream(dir_.File("c")).good());
}

}  // namespace
}  // namespace ticktrace::view
