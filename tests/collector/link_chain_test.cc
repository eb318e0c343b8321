// Orders each linked to the one before (a chain of links, as a hostile or a
// very chatty producer makes): every order is analysed and emitted once,
// complete, children before their parents, and the analysis and the end of
// the stream do work linear in the links (docs/collector.md, "Links"). A
// chain of 1 M links finishes well inside the test's time limit; the
// finishing loop that rescanned every open order per link took hours.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"

namespace ticktrace::collect::testing {
namespace {

// `n` orders: order k stamps a at 1000 k ns and b 100 ns later; order k + 1
// is linked to order k (its parent) before its own stamps.
ArchiveBuilder Chain(uint64_t n) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Clock(1);
  // In chunks of a few thousand records, as the drain writes them (one
  // chunk of millions is beyond what a reader takes as one).
  std::vector<abi::Record> records;
  for (uint64_t k = 1; k <= n; ++k) {
    const uint64_t t = 1000 * k;
    if (k > 1) records.push_back(Link(k, k - 1, t - 1));
    records.push_back(Stamp(0, k, t));
    records.push_back(Stamp(1, k, t + 100));
    if (records.size() >= 3000 || k == n) {
      b.Records(1, records);
      records.clear();
    }
  }
  return b;
}

double ReplaySeconds(uint64_t n, RunSummary* summary) {
  TempDir dir;
  CollectorOptions o;
  o.store_uri.reset();
  o.pipeline = {"a", "b"};
  const auto start = std::chrono::steady_clock::now();
  const Replayed r = ReplayArchive(Chain(n), dir, o);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  *summary = r.summary;
  return s;
}

TEST(LinkChainTest, AMillionLinksAreAnalysedOnceEach) {
  for (const uint64_t n : {uint64_t{1'000}, uint64_t{1'000'000}}) {
    RunSummary s;
    const double seconds = ReplaySeconds(n, &s);
    std::printf("FIGURE link_chain: %llu links replayed in %.2f s (%.0f ns per link)\n",
                static_cast<unsigned long long>(n - 1), seconds, seconds * 1e9 / double(n - 1));
    // Every order emitted once: the last one complete, each before it a
    // parent whose chain continues in its child (fanned out).
    EXPECT_EQ(s.counter("orders_complete"), 1);
    EXPECT_EQ(s.counter("orders_fanned_out"), static_cast<int64_t>(n - 1));
    EXPECT_EQ(s.counter("orders_incomplete"), 0);
    EXPECT_EQ(s.counter("drained"), static_cast<int64_t>(3 * n - 1));
    EXPECT_EQ(s.counter("links_rejected"), 0);
  }
}

}  // namespace
}  // namespace ticktrace::collect::testing
