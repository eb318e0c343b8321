// The collector judges a segment by what it has reserved in /dev/shm, not by
// its sparse geometry (libtrace/include/ticktrace/abi.h, "Pages";
// docs/abi.md): what libtrace creates with its documented settings, a
// default collector drains; a segment above --max-segment-bytes is refused
// in one line that names the setting which would accept it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <regex>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

class SegmentLimitTest : public RelTest {
 protected:
  SegmentLimitTest() : RelTest("seglimit") {}

  // ticktrace-view `args` on this test's store; its stdout and stderr.
  std::string View(std::vector<std::string> args) {
    args.insert(args.begin(), TICKTRACE_VIEW_BIN);
    args.insert(args.end(), {"--db", db()});
    const std::string out = dir_.File("view.out");
    unlink(out.c_str());
    const pid_t view = Spawn(args, out);
    EXPECT_EQ(WaitExit(view, 60s), 0) << ReadFile(out);
    return ReadFile(out);
  }
};

// The body of GET /metrics from 127.0.0.1:`port` (HTTP/1.0: the server closes).
std::string GetMetrics(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string all;
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = all.find("\r\n\r\n");
  return body == std::string::npos ? "" : all.substr(body + 4);
}

// Bytes by hand (abi.h): the header is 1024 bytes, libtrace's tag table 1024
// entries of 64 bytes, so the slots start at 1024 + 65536 = 66560; each of the
// 64 slot headers is 192 bytes (12288); a ring of R records is R * 32 bytes.
constexpr uint64_t kHeadersBytes = 66560 + 64 * 192;  // 78848

// TICKTRACE_RING_RECORDS=8388608 with the default 64 rings: 16 GiB of sparse
// geometry, of which two threads reserve two rings. Before, a default
// collector refused it whole (geometry above its fixed 4 GiB limit) and every
// record was lost.
TEST_F(SegmentLimitTest, EightMiRecordRingsAreDrainedByADefaultCollector) {
  const pid_t collector = StartCollector({"--pipeline", "a,b"});
  // 2 threads x 100,000 orders x 2 stamps = 400,000 records; a ring of 8 Mi
  // records holds them all, so nothing is dropped whatever the scheduling.
  const pid_t producer = StartProducer({"--mode", "seq", "--threads", "2", "--ring", "8388608",
                                        "--rings", "64", "--orders", "100000"},
                                       "producer.log");
  ASSERT_EQ(WaitExit(producer, 180s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(producer);
  // Geometry: 66560 + 64 * (192 + 8388608 * 32) = 17,179,948,032 bytes.
  // Reserved: 78848 + 2 * 268,435,456 = 536,949,760 bytes.
  EXPECT_NE(ReadFile(dir_.File("producer.log"))
                .find("footprint segment_bytes 17179948032 reserved_bytes 536949760 "
                      "rings_claimed 2"),
            std::string::npos)
      << ReadFile(dir_.File("producer.log"));
  // The collector removes a dead process's segment once it drained all of it.
  EXPECT_TRUE(WaitFor([&] { return !FileExists(SegmentPath(session_, producer)); }, 120s))
      << ReadFile(log());
  StopCollector(collector);

  const std::string text = ReadFile(log());
  EXPECT_EQ(text.find("above the limit"), std::string::npos) << text;
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_oversized"), 0);
  EXPECT_EQ(Counter(q, "records_in_refused_segments"), 0);
  // 200,000 orders (ids distinct per thread), each with both stamps.
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 200000);
}

// A segment that reserved more than --max-segment-bytes: one line on stderr
// names it, says why, and gives the setting that would drain it. Its records
// are the run's loss, and every place that shows the run says so first: the
// collector's /metrics and exit report, the viewer's summary text and JSON.
TEST_F(SegmentLimitTest, SegmentAboveTheLimitIsRefusedNamingTheSetting) {
  // One thread, 500 orders: 1000 records, waiting in its ring of 65536.
  const pid_t producer = StartProducer({"--mode", "seq", "--threads", "1", "--ring", "65536",
                                        "--rings", "64", "--orders", "500", "--hold", "1"},
                                       "producer.log");
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(dir_.File("producer.log")).find("footprint") != std::string::npos; },
      60s));
  // Reserved: 78848 + 65536 * 32 = 2,176,000 bytes, above 1 MiB (1,048,576).
  const std::string name = absl::StrCat("ticktrace.", session_, ".", producer);
  const pid_t collector = StartCollector(
      {"--pipeline", "a,b", "--max-segment-bytes", "1MiB", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(
      WaitFor([&] { return ReadFile(log()).find("above the limit") != std::string::npos; }, 30s))
      << ReadFile(log());
  std::smatch m;
  const std::string started = ReadFile(log());
  ASSERT_TRUE(
      std::regex_search(started, m, std::regex("metrics at http://127\\.0\\.0\\.1:([0-9]+)/")))
      << started;
  const uint16_t port = static_cast<uint16_t>(std::stoi(m[1]));
  // The loss of 1000 records, all to the refused segment, once the
  // collector's next snapshot (about a second) carries its counters.
  std::string metrics;
  EXPECT_TRUE(WaitFor(
      [&] {
        metrics = GetMetrics(port);
        return metrics.find("ticktrace_records_lost_total{cause=\"refused_segment\"} 1000\n") !=
               std::string::npos;
      },
      30s))
      << metrics;
  EXPECT_NE(metrics.find("\nticktrace_records_written_total 1000\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ticktrace_records_lost_total{cause=\"ring_full\"} 0\n"),
            std::string::npos)
      << metrics;
  // First: before any other metric's samples.
  EXPECT_EQ(metrics.rfind("# HELP ticktrace_records_lost_total ", 0), 0u) << metrics;
  StopCollector(collector);
  kill(producer, SIGTERM);
  EXPECT_EQ(WaitExit(producer, 30s), 0);
  Forget(producer);

  const std::string text = ReadFile(log());
  const std::string line = absl::StrCat(
      "ticktrace-collector: segment ", name,
      ": 1 of 64 rings of 65536 records claimed, 2176000 bytes reserved, above the limit of "
      "1048576 bytes (--max-segment-bytes 2176000 or more drains it); not drained (1000 records "
      "waiting in it)\n");
  EXPECT_EQ(CountOf(text, line), 1) << text;
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_oversized"), 1);
  EXPECT_EQ(Counter(q, "records_in_refused_segments"), 1000);

  // 1000 written (0 drained + 1000 refused), 1000 lost: 100%.
  const std::string lost_line =
      "records lost: 1000 of 1000 (100%): refused_segment 1000; not in any figure below\n";
  // The exit report leads with it, before its counters.
  const size_t report = text.find(lost_line);
  ASSERT_NE(report, std::string::npos) << text;
  EXPECT_EQ(text.find("counters:\n", report), report + lost_line.size()) << text;
  EXPECT_NE(text.find("  records_in_refused_segments  1000  (lost: refused_segment)\n"),
            std::string::npos)
      << text;

  // The summary's first line, before the run and any table.
  const std::string summary = View({"summary"});
  EXPECT_EQ(summary.rfind(lost_line, 0), 0u) << summary;
  // Ordered: the object keeps the printed order of its keys.
  const nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(View({"summary", "--json"}), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.begin().key(), "records_lost");
  EXPECT_EQ(j["records_lost"]["lost"], 1000);
  EXPECT_EQ(j["records_lost"]["written"], 1000);
  EXPECT_EQ(j["records_lost"]["share"], 1.0);
  EXPECT_EQ(j["records_lost"]["by_cause"]["refused_segment"], 1000);
  EXPECT_EQ(j["records_lost"]["by_cause"]["ring_full"], 0);
  // Every counter, not only the header's.
  EXPECT_EQ(j["counters"]["segments_oversized"], 1);
  EXPECT_EQ(j["counters"]["records_in_refused_segments"], 1000);
}

// A segment attached under the limit whose ring, claimed later, takes it
// over: that ring is refused in one line, and all its records are counted,
// also those its thread writes after the refusal.
TEST_F(SegmentLimitTest, RingClaimedAfterAttachOverTheLimitIsRefused) {
  const std::string go = dir_.File("go");
  // Before its thread starts the segment reserved 78,848 bytes (under 1 MiB);
  // its ring of 65536 records takes it to 2,176,000.
  const pid_t producer =
      StartProducer({"--mode", "seq", "--threads", "1", "--ring", "65536", "--rings", "64",
                     "--orders", "500", "--hold", "1", "--start-when", go},
                    "producer.log");
  const std::string name = absl::StrCat("ticktrace.", session_, ".", producer);
  ASSERT_TRUE(WaitFor([&] { return FileExists("/dev/shm/" + name); }, 30s));
  const pid_t collector = StartCollector({"--pipeline", "a,b", "--max-segment-bytes", "1MiB"});
  // Attached: the collector maps the segment's header.
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(absl::StrCat("/proc/", collector, "/maps")).find(name) != std::string::npos;
      },
      30s))
      << ReadFile(log());
  { std::ofstream(go) << "go\n"; }
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(dir_.File("producer.log")).find("footprint") != std::string::npos; },
      60s));
  const std::string refused = absl::StrCat(
      "ticktrace-collector: segment ", name,
      ": ring 0 claimed after it was opened takes it to 2176000 bytes reserved, above the limit "
      "of 1048576 bytes (--max-segment-bytes 2176000 or more drains it); not drained (");
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log()).find(refused) != std::string::npos; }, 30s))
      << ReadFile(log());
  // The producer exits; the collector counts the ring's last records when it
  // finds the process gone, then removes its segment.
  kill(producer, SIGTERM);
  EXPECT_EQ(WaitExit(producer, 30s), 0);
  Forget(producer);
  EXPECT_TRUE(WaitFor([&] { return !FileExists("/dev/shm/" + name); }, 60s)) << ReadFile(log());
  StopCollector(collector);
  // 500 orders x 2 stamps: every one of the 1000 records counted, whenever
  // the refusal came.
  EXPECT_EQ(CountOf(ReadFile(log()), refused), 1) << ReadFile(log());
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "records_in_refused_segments"), 1000);
  EXPECT_EQ(Counter(q, "drained"), 0);
}

// A bad limit is a usage error naming the flag.
TEST_F(SegmentLimitTest, BadLimitIsAUsageError) {
  const pid_t collector = StartCollector({"--max-segment-bytes", "12"}, /*wait_ready=*/false);
  EXPECT_EQ(WaitExit(collector, 30s), 2) << ReadFile(log());
  Forget(collector);
  EXPECT_NE(ReadFile(log()).find("--max-segment-bytes '12': must be a size from 1MiB"),
            std::string::npos)
      << ReadFile(log());
}

}  // namespace
}  // namespace ticktrace::reliability
