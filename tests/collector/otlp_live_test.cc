// The collector's live OpenTelemetry push (--otlp-endpoint) with real
// producers and a loopback receiver: the spans it pushes are, field for
// field and id for id, those `ticktrace-view export --format otlp-json`
// gives for the same orders from the store (the bodies decoded by protoc
// --decode_raw; skipped without protoc); a receiver that is down costs
// spans (otlp_spans_dropped), never records.
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "live_fixture.h"
#include "store_query.h"
#include "tests/support/otlp_receiver.h"
#include "tests/support/protoc_raw.h"
#include "tests/viewer/otlp_spans.h"

namespace ticktrace::collect::testing {
namespace {

using namespace std::chrono_literals;
namespace otlpt = ::ticktrace::testing;

const std::string kView = TICKTRACE_VIEW_BIN;

class OtlpLiveTest : public LiveTest {
 protected:
  // `ticktrace-view export --format otlp-json` of the store, with `extra`.
  std::vector<otlpt::SpanView> ViewerSpans(const std::vector<std::string>& extra) {
    const std::string out = dir_.File("view-" + std::to_string(++exports_) + ".json");
    std::vector<std::string> argv = {kView, "export", "--db", db(), "--format", "otlp-json",
                                     "--out", out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const pid_t v = Spawn(argv, dir_.File("view.log"));
    EXPECT_EQ(WaitExit(v, 120s), 0) << ReadFile(dir_.File("view.log"));
    const nlohmann::json j = nlohmann::json::parse(ReadFile(out), nullptr, false);
    EXPECT_FALSE(j.is_discarded());
    return j.is_discarded() ? std::vector<otlpt::SpanView>{} : otlpt::SpansFromJson(j);
  }

  // Every span the receiver accepted, as protoc --decode_raw printed them.
  std::vector<otlpt::SpanView> PushedSpans(const otlpt::OtlpReceiver& receiver) {
    std::vector<otlpt::SpanView> out;
    for (const std::string& body : receiver.accepted_bodies()) {
      const std::optional<otlpt::RawField> raw = otlpt::DecodeRaw(body, dir_.path());
      if (!raw) continue;
      for (otlpt::SpanView& s : otlpt::SpansFromRaw(*raw)) out.push_back(std::move(s));
    }
    return out;
  }

  int exports_ = 0;
};

TEST_F(OtlpLiveTest, PushedSpansAreTheViewersExport) {
  if (!otlpt::ProtocPath()) GTEST_SKIP() << "no protoc (Debian package protobuf-compiler)";
  otlpt::OtlpReceiver receiver;
  const pid_t c = StartCollector({"--pipeline", "a_in,a_out,b_in,b_out,c_in,c_out",
                                  "--order-timeout-ms", "200", "--otlp-endpoint", receiver.url(),
                                  "--otlp-slowest", "3"});
  // About 2.5 s of orders: several intervals of 1 s.
  constexpr uint64_t kOrders = 2500;
  WaitProducers(StartChain({{"a_in", "a_out", 200}, {"b_in", "b_out", 500}, {"c_in", "c_out", 300}},
                           kOrders, 1000));
  FinishRun(c);
  EXPECT_NE(ReadFile(log()).find("otlp " + receiver.url()), std::string::npos) << ReadFile(log());

  const std::vector<otlpt::SpanView> pushed = PushedSpans(receiver);
  ASSERT_FALSE(pushed.empty());
  for (const otlpt::OtlpReceiver::Request& r : receiver.requests()) {
    EXPECT_EQ(r.path, "/v1/traces");
    EXPECT_EQ(r.content_type, "application/x-protobuf");
  }
  // Every pushed span is the viewer's span of the same id, field for field.
  const std::vector<otlpt::SpanView> viewer = otlpt::Rendered(ViewerSpans({}), dir_.path());
  const std::map<std::string, otlpt::SpanView> by_id = otlpt::BySpanId(viewer);
  size_t roots = 0;
  for (const otlpt::SpanView& p : pushed) {
    const auto it = by_id.find(p.span_id);
    if (it == by_id.end()) {
      ADD_FAILURE() << "pushed span " << p.span_id << " (" << p.name << ") not in the export";
      continue;
    }
    const otlpt::SpanView& v = it->second;
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.trace_id, v.trace_id);
    EXPECT_EQ(p.parent_span_id, v.parent_span_id);
    EXPECT_EQ(p.name, v.name);
    EXPECT_EQ(p.start_ns, v.start_ns);
    EXPECT_EQ(p.end_ns, v.end_ns);
    EXPECT_EQ(p.attributes, v.attributes);
    EXPECT_EQ(p.links, v.links);
    EXPECT_EQ(p.status_code, v.status_code);
    EXPECT_EQ(p.service_name, v.service_name);
    EXPECT_EQ(p.host_name, v.host_name);
    roots += p.parent_span_id.empty() ? 1 : 0;
  }
  // A root per order and a span per sample (six stages and total), and far
  // fewer orders than ran: the slowest few per stage and interval.
  EXPECT_EQ(pushed.size(), roots * 7);
  EXPECT_LT(roots, kOrders / 10);
  // The run's slowest order is among them.
  const std::vector<otlpt::SpanView> slowest =
      otlpt::Rendered(ViewerSpans({"--slowest", "1"}), dir_.path());
  std::set<std::string> pushed_ids;
  for (const otlpt::SpanView& p : pushed) pushed_ids.insert(p.span_id);
  for (const otlpt::SpanView& s : slowest) EXPECT_EQ(pushed_ids.count(s.span_id), 1u) << s.name;

  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='otlp_spans_sent'"),
            static_cast<int64_t>(pushed.size()));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='otlp_spans_dropped'"), 0);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='otlp_batches_sent'"),
            static_cast<int64_t>(receiver.accepted_bodies().size()));
}

TEST_F(OtlpLiveTest, AReceiverDownCostsSpansNeverRecords) {
  otlpt::OtlpReceiver receiver;
  // Up for the first interval, then down (503 to everything, no Retry-After).
  const pid_t c = StartCollector({"--pipeline", "a_in,a_out,b_in,b_out,c_in,c_out",
                                  "--order-timeout-ms", "200", "--otlp-endpoint", receiver.url()});
  constexpr uint64_t kOrders = 8000;
  const std::vector<pid_t> chain =
      StartChain({{"a_in", "a_out"}, {"b_in", "b_out"}, {"c_in", "c_out"}}, kOrders, 1000);
  EXPECT_TRUE(WaitFor([&] { return !receiver.accepted_bodies().empty(); }, 30s));
  receiver.set_default_status(503);
  WaitProducers(chain);
  const auto stop_started = std::chrono::steady_clock::now();
  FinishRun(c);
  // The exit does not wait for the receiver beyond the push's grace.
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, 30s);

  StoreQuery q(db());
  EXPECT_GT(q.Int("SELECT value FROM counters WHERE name='otlp_spans_sent'"), 0);
  EXPECT_GT(q.Int("SELECT value FROM counters WHERE name='otlp_spans_dropped'"), 0);
  EXPECT_GT(q.Int("SELECT value FROM counters WHERE name='otlp_batches_dropped'"), 0);
  // No record lost for it: every stamp drained, every order stored complete.
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), int64_t(6 * kOrders));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='dropped'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), int64_t(kOrders));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='orders_not_stored'"), 0);
  const std::string log_text = ReadFile(log());
  EXPECT_NE(log_text.find("HTTP 503"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("spans dropped"), std::string::npos) << log_text;
}

}  // namespace
}  // namespace ticktrace::collect::testing
