// Deterministic tests: crafted raw archives replayed through the collector.
// Archives use 1 GHz, so one tick is one ns.

#include <sqlite3.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/app/collector.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect {
namespace {

using testing::ArchiveBuilder;
using testing::Link;
using testing::SpanRecord;
using testing::Stamp;
using testing::StoreQuery;
using testing::TempDir;

constexpr uint32_t kCpu0 = 0, kCpu1 = 1;

// Percentiles come from the collector's histogram: within 1/256 of the true
// value (docs/collector.md derives it from the bucket layout: buckets 2^e/128
// wide above 2^e, midpoint at most 2^e/256 away). The tolerance for `exact`.
double Bound(double exact) { return std::fabs(exact) / 256 * (1 + 1e-12); }

using ReplayTest = testing::ReplayStoreTest;

// Three processes, records arriving out of order (the last stage's process is
// drained before the middle one), all stitched by order id.
TEST_F(ReplayTest, StitchesThreeProcesses) {
  ArchiveBuilder b;
  b.Process(1, {"md_rx"}).Process(2, {"decide"}).Process(3, {"order_sent"});
  std::vector<abi::Record> p1, p2, p3;
  for (uint64_t id = 1; id <= 100; ++id) {
    const uint64_t t = 1000000 + id * 10000;
    p1.push_back(Stamp(0, id, t));
    p2.push_back(Stamp(0, id, t + 1000));
    p3.push_back(Stamp(0, id, t + 3000));
  }
  b.Clock(1).Records(1, p1).Records(3, p3).Clock(2).Records(2, p2).Clock(3).Clock(4);
  CollectorOptions o;
  o.pipeline = {"md_rx", "decide", "order_sent"};
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("drained"), 300);
  EXPECT_EQ(s.counter("orders_complete"), 100);
  EXPECT_EQ(s.counter("orders_incomplete"), 0);
  ASSERT_NE(s.stage("md_rx->decide"), nullptr);
  EXPECT_EQ(s.stage("md_rx->decide")->count, 100u);
  EXPECT_NEAR(s.stage("md_rx->decide")->p50_ns, 1000, Bound(1000));
  EXPECT_DOUBLE_EQ(s.stage("md_rx->decide")->min_ns, 1000);
  EXPECT_NEAR(s.stage("decide->order_sent")->p99_ns, 2000, Bound(2000));
  EXPECT_DOUBLE_EQ(s.stage("total")->max_ns, 3000);
  EXPECT_FALSE(s.pipeline_learned);

  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), 100);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage = 'md_rx->decide'"), 100);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage = 'total'"), 100);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), 300);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes"), 3);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'orders_complete'"), 100);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage = 'total'"), 100);
  EXPECT_EQ(q.Int("SELECT position FROM stage_stats WHERE stage = 'total'"), 2);
  EXPECT_EQ(q.Text("SELECT pipeline FROM runs"), "md_rx,decide,order_sent");
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0);
  // UTC through the anchor: anchor_tsc 0 <-> 1.7e18 ns, 1 ns per tick.
  EXPECT_EQ(q.Int("SELECT MIN(start_utc_ns) FROM samples"), 1700000000000000000 + 1010000);
}

// Without --pipeline the order is learned from the first orders and printed.
TEST_F(ReplayTest, LearnsTheStageOrder) {
  ArchiveBuilder b;
  b.Process(1, {"order_sent", "md_rx"}).Process(2, {"decide"});
  uint64_t clock = 1;
  for (uint64_t id = 1; id <= 50; ++id) {
    const uint64_t t = id * 1000000;
    b.Records(1, {Stamp(1, id, t), Stamp(0, id, t + 5000)});
    b.Records(2, {Stamp(0, id, t + 2000)});
    clock = t + 10000;
    b.Clock(clock);
  }
  b.Clock(clock + 10'000'000);  // past the timeout of the last orders
  CollectorOptions o;
  o.learn_orders = 10;
  o.order_timeout_ms = 1;  // 1e6 ticks at 1 GHz
  RunSummary s = Replay(b, o);
  EXPECT_TRUE(s.pipeline_learned);
  EXPECT_EQ(s.pipeline, (std::vector<std::string>{"md_rx", "decide", "order_sent"}));
  EXPECT_NE(log_.str().find("learned pipeline from 10 orders: md_rx -> decide -> order_sent"),
            std::string::npos)
      << log_.str();
  EXPECT_EQ(s.counter("orders_complete"), 50);
  EXPECT_EQ(s.stage("md_rx->decide")->count, 50u);
  EXPECT_NEAR(s.stage("decide->order_sent")->p50_ns, 3000, Bound(3000));
  StoreQuery q(db());
  EXPECT_EQ(q.Text("SELECT pipeline FROM runs"), "md_rx,decide,order_sent");
  EXPECT_EQ(q.Int("SELECT pipeline_learned FROM runs"), 1);
}

// Spans whose ends are on different cores are flagged migrated and kept out
// of the percentiles unless asked.
TEST_F(ReplayTest, FlagsMigratedSpans) {
  ArchiveBuilder b;
  b.Process(1, {"parse"});
  std::vector<abi::Record> r;
  for (uint64_t id = 1; id <= 20; ++id) {
    const bool moved = id % 4 == 0;  // 5 of 20
    r.push_back(SpanRecord(0, id, id * 100000, moved ? 90000 : 500, kCpu0, moved ? kCpu1 : kCpu0));
  }
  b.Records(1, r);
  RunSummary s = Replay(b);
  const StageSummary* parse = s.stage("parse");
  ASSERT_NE(parse, nullptr);
  EXPECT_EQ(parse->migrated, 5u);
  EXPECT_EQ(parse->count, 15u);
  EXPECT_EQ(parse->samples_all, 20u);
  EXPECT_DOUBLE_EQ(parse->max_ns, 500);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage = 'parse' AND flags & 1"), 5);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps WHERE kind = 'span' AND cpu_end = 1"), 5);

  CollectorOptions all;
  all.include_flagged = true;
  TempDir other;
  RunSummary s2 = Replay(b, all, /*store=*/false);
  EXPECT_EQ(s2.stage("parse")->count, 20u);
  EXPECT_DOUBLE_EQ(s2.stage("parse")->max_ns, 90000);
}

// A cross-core stage closer than the cores' TSC offset comes out negative: it
// is kept as is (not clamped), flagged negative and cross_core, and counted.
TEST_F(ReplayTest, KeepsNegativeCrossCoreDifferences) {
  ArchiveBuilder b;
  b.Process(1, {"enqueue"}).Process(2, {"dequeue"});
  std::vector<abi::Record> p1, p2;
  for (uint64_t id = 1; id <= 30; ++id) {
    const uint64_t t = id * 100000;
    p1.push_back(Stamp(0, id, t, kCpu0));
    // cpu1's TSC runs 40 ticks behind: odd ids come out 20 ns negative.
    p2.push_back(Stamp(0, id, id % 2 ? t - 20 : t + 200, kCpu1));
  }
  b.Records(1, p1).Records(2, p2);
  CollectorOptions o;
  o.pipeline = {"enqueue", "dequeue"};
  o.include_flagged = true;
  RunSummary s = Replay(b, o);
  const StageSummary* st = s.stage("enqueue->dequeue");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->negative, 15u);
  EXPECT_EQ(st->cross_core, 30u);
  EXPECT_DOUBLE_EQ(st->min_ns, -20);
  EXPECT_NEAR(st->p50_ns, -20, Bound(-20));
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage = 'enqueue->dequeue' AND "
                  "latency_ns < 0 AND flags & 2 AND flags & 4"),
            15);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage='enqueue->dequeue' AND cpu_end=1"),
            30);
}

// The documented default policy (docs/store.md, "Flagged samples"; docs/
// collector.md): negative (and migrated) samples are out of the percentiles,
// a sample that is only cross-core is in. Hard-coded here: 20 hops from cpu0
// to cpu1, 5 of them 30 ns negative, the other 15 take 100 + id ns.
TEST_F(ReplayTest, CrossCoreAloneCountsAndNegativeDoesNotByDefault) {
  ArchiveBuilder b;
  b.Process(1, {"enqueue"}).Process(2, {"dequeue"});
  std::vector<abi::Record> p1, p2;
  for (uint64_t id = 1; id <= 20; ++id) {
    const uint64_t t = id * 100000;
    p1.push_back(Stamp(0, id, t, kCpu0));
    p2.push_back(Stamp(0, id, id % 4 == 0 ? t - 30 : t + 100 + id, kCpu1));
  }
  b.Records(1, p1).Records(2, p2);
  CollectorOptions o;
  o.pipeline = {"enqueue", "dequeue"};
  RunSummary s = Replay(b, o);
  const StageSummary* st = s.stage("enqueue->dequeue");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->cross_core, 20u);
  EXPECT_EQ(st->negative, 5u);
  EXPECT_EQ(st->count, 15u);  // the 15 cross-core-only hops
  EXPECT_EQ(st->samples_all, 20u);
  EXPECT_DOUBLE_EQ(st->min_ns, 101);  // id 1; the negative ones are out
  EXPECT_DOUBLE_EQ(st->max_ns, 119);  // id 19
}

// Orders missing a stage are incomplete, with the missing stage named and counted.
TEST_F(ReplayTest, NamesMissingStagesOfIncompleteOrders) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "c"});
  std::vector<abi::Record> r;
  for (uint64_t id = 1; id <= 10; ++id) {
    const uint64_t t = id * 10000;
    r.push_back(Stamp(0, id, t));
    if (id > 3) r.push_back(Stamp(1, id, t + 100));  // orders 1-3 skip b
    if (id != 10) r.push_back(Stamp(2, id, t + 300));  // order 10 never finishes
  }
  b.Records(1, r);
  CollectorOptions o;
  o.pipeline = {"a", "b", "c"};
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("orders_complete"), 6);
  EXPECT_EQ(s.counter("orders_incomplete"), 4);
  EXPECT_EQ(s.counter("missing_stage:b"), 3);
  EXPECT_EQ(s.counter("missing_stage:c"), 1);
  EXPECT_EQ(s.stage("a->c")->count, 3u);  // consecutive present stages
  EXPECT_EQ(s.stage("total")->count, 6u);  // complete orders only
  StoreQuery q(db());
  EXPECT_EQ(q.Text("SELECT missing FROM orders WHERE order_id = 2"), "b");
  EXPECT_EQ(q.Int("SELECT complete FROM orders WHERE order_id = 10"), 0);
  EXPECT_EQ(q.Text("SELECT missing FROM orders WHERE order_id = 10"), "c");
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'missing_stage:b'"), 3);
}

// One tick fans out into two orders: each child's chain starts at the tick.
TEST_F(ReplayTest, LinkedChildrenContinueTheirParent) {
  ArchiveBuilder b;
  b.Process(1, {"md_rx"}).Process(2, {"decide", "order_sent"});
  b.Records(1, {Stamp(0, 1000, 10000)});
  // The strategy process: links first, then its own stages.
  b.Records(2, {Link(1001, 1000, 10400), Link(1002, 1000, 10410), Stamp(0, 1001, 10500),
                Stamp(0, 1002, 10600), Stamp(1, 1001, 11000), Stamp(1, 1002, 11600)});
  CollectorOptions o;
  o.pipeline = {"md_rx", "decide", "order_sent"};
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("orders_complete"), 2);
  EXPECT_EQ(s.counter("orders_incomplete"), 0);
  EXPECT_EQ(s.counter("orders_fanned_out"), 1);
  EXPECT_EQ(s.stage("md_rx->decide")->count, 2u);
  EXPECT_DOUBLE_EQ(s.stage("md_rx->decide")->min_ns, 500);
  EXPECT_DOUBLE_EQ(s.stage("md_rx->decide")->max_ns, 600);
  EXPECT_DOUBLE_EQ(s.stage("total")->min_ns, 1000);  // 11000 - 10000
  EXPECT_DOUBLE_EQ(s.stage("total")->max_ns, 1600);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT parent_order_id FROM orders WHERE order_id = 1002"), 1000);
  EXPECT_EQ(q.Real("SELECT total_ns FROM orders WHERE order_id = 1001"), 1000);
  EXPECT_EQ(q.Int("SELECT complete FROM orders WHERE order_id = 1000"), 1);
}

// Bad records are counted and skipped; the rest is analysed.
TEST_F(ReplayTest, CountsMalformedRecords) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  abi::Record bad_kind = Stamp(0, 1, 100);
  bad_kind.kind = 77;
  abi::Record zero_kind = Stamp(0, 1, 100);
  zero_kind.kind = 0;
  abi::Record unknown_tag = Stamp(9, 1, 100);
  abi::Record full_table = Stamp(abi::kTagInvalid, 1, 100);
  b.Records(1, {Stamp(0, 1, 100), bad_kind, zero_kind, unknown_tag, full_table, Stamp(1, 1, 400)});
  b.Records(7, {Stamp(0, 2, 100)});  // a process never announced
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("drained"), 7);
  EXPECT_EQ(s.counter("malformed"), 4);
  EXPECT_EQ(s.counter("unattributed"), 1);
  EXPECT_EQ(s.counter("orders_complete"), 1);
  EXPECT_DOUBLE_EQ(s.stage("a->b")->p50_ns, 300);
}

// A chunk with a bad checksum is skipped (docs/collector.md#a-corrupt-journal-chunk): the replay goes on at the
// next valid chunk, counts the skip and the records the ring index gap shows
// lost, and ends with DataLoss (exit 1) once everything else is analysed.
TEST_F(ReplayTest, SkipsACorruptChunkAndGoesOn) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {Stamp(0, 1, 100), Stamp(1, 1, 200)});
  std::string bad;
  ChunkEncoder::Records(1, 0, 1, 2, std::vector<abi::Record>{Stamp(0, 2, 300)}, &bad);
  bad[bad.size() - 3] ^= 0x5a;  // flip payload bits: checksum mismatch
  b.Raw(bad);
  b.Records(1, {Stamp(0, 3, 400), Stamp(1, 3, 500)}, /*first_index=*/3);
  std::string last;  // a corrupt last chunk: counted too, its loss unknown
  ChunkEncoder::Records(1, 0, 1, 5, std::vector<abi::Record>{Stamp(0, 4, 600)}, &last);
  last[last.size() - 1] ^= 0x01;
  b.Raw(last);
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  RunSummary s;
  const absl::Status st = ReplayStatus(b, o, &s);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(st.message().find("2 corrupt chunks were skipped"), std::string::npos) << st;
  EXPECT_EQ(s.counter("drained"), 4);
  EXPECT_EQ(s.counter("orders_complete"), 2);
  EXPECT_EQ(s.counter("journal_chunks_corrupt"), 2);
  EXPECT_EQ(s.counter("journal_records_lost"), 1);
  EXPECT_EQ(s.counter("index_gaps"), 1);
}

// A torn tail (a chunk cut short) is ignored.
TEST_F(ReplayTest, IgnoresATornTail) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {Stamp(0, 1, 100), Stamp(1, 1, 200)});
  std::string tail;
  ChunkEncoder::Records(1, 0, 1, 2, std::vector<abi::Record>{Stamp(0, 2, 300)}, &tail);
  b.Raw(tail.substr(0, tail.size() - 5));
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("drained"), 2);
  EXPECT_NE(log_.str().find("torn"), std::string::npos) << log_.str();
}

// An order quiet for longer than the timeout is finished then. It lingers
// (min(timeout, 100 ms) = 1 ms here): a record of its id within that joins
// it; a record after that is a late partial instance of the id, counted and
// flagged, never merged into it nor stored over it.
TEST_F(ReplayTest, FinishesQuietOrdersAfterTheTimeout) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "c"});
  b.Clock(1'000'000);
  b.Records(1, {Stamp(0, 1, 1'000'100), Stamp(1, 1, 1'000'200)});  // order 1: a, b
  b.Records(1, {Stamp(0, 2, 1'000'300), Stamp(1, 2, 1'000'400)});  // order 2: a, b
  b.Records(1, {Stamp(0, 3, 1'000'500), Stamp(1, 3, 1'000'600)});  // order 3: a, b
  b.Clock(1'500'000);                                              // 0.5 ms: not yet
  b.Records(1, {Stamp(2, 2, 1'500'100)});                          // order 2 completes
  b.Clock(3'000'000);                        // 2 ms: orders 1 and 3 time out (linger to 4 ms)
  b.Records(1, {Stamp(2, 3, 3'000'100)});    // within order 3's linger: joins it
  b.Clock(4'500'000);                        // lingers over: 1 and 3 emitted
  b.Records(1, {Stamp(2, 1, 4'500'100)});    // too late for order 1
  b.Clock(4'500'200).Clock(4'500'300);
  CollectorOptions o;
  o.pipeline = {"a", "b", "c"};
  o.order_timeout_ms = 1;  // 1e6 ticks
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("orders_complete"), 2);    // orders 2 and 3
  EXPECT_EQ(s.counter("orders_incomplete"), 1);  // order 1 (a, b)
  EXPECT_EQ(s.counter("missing_stage:c"), 1);
  EXPECT_EQ(s.counter("orders_late"), 1);        // order 1's late c: instance 1
  EXPECT_EQ(s.counter("late_records"), 1);
  EXPECT_EQ(s.counter("missing_stage:a"), 0);
  EXPECT_EQ(s.counter("orders_already_stored"), 0);  // nothing stored over another
}

// Records at or below a ring's high-water mark (a re-read after a restart) count once.
TEST_F(ReplayTest, SkipsRecordsBelowTheHighWaterMark) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  const std::vector<abi::Record> r = {Stamp(0, 1, 100), Stamp(1, 1, 200), Stamp(0, 2, 300)};
  b.Records(1, r, 0);
  b.Records(1, {r[1], r[2], Stamp(1, 2, 400)}, 1);  // overlaps two records
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  RunSummary s = Replay(b, o);
  EXPECT_EQ(s.counter("drained"), 4);
  EXPECT_EQ(s.counter("duplicates_skipped"), 2);
  EXPECT_EQ(s.counter("orders_complete"), 2);
}

// Two processes, `orders` orders of three stamps at scattered offsets, a
// clock every 7 orders: the determinism tests' archive, and their options.
ArchiveBuilder ScatteredOrders(uint64_t orders) {
  ArchiveBuilder b;
  b.Process(1, {"x", "y"}).Process(2, {"z"});
  for (uint64_t id = 1; id <= orders; ++id) {
    b.Records(1, {Stamp(0, id, id * 1000), Stamp(1, id, id * 1000 + (id * 7919) % 400)});
    b.Records(2, {Stamp(0, id, id * 1000 + 500 + (id * 104729) % 300)});
    if (id % 7 == 0) b.Clock(id * 1000 + 2000);
  }
  return b;
}
CollectorOptions ScatteredOrdersOptions() {
  CollectorOptions o;
  o.learn_orders = 20;
  o.order_timeout_ms = 1;
  return o;
}

// The same archive gives the same numbers every time.
TEST_F(ReplayTest, IsDeterministic) {
  const ArchiveBuilder b = ScatteredOrders(300);
  CollectorOptions o = ScatteredOrdersOptions();
  RunSummary s1 = Replay(b, o, false);
  RunSummary s2 = Replay(b, o, false);
  // The CPU the collector used is a measurement, not a result of the input.
  for (RunSummary* s : {&s1, &s2}) {
    std::erase_if(s->counters, [](const auto& c) { return c.first == "collector_cpu_ms"; });
  }
  EXPECT_EQ(s1.counters, s2.counters);
  ASSERT_EQ(s1.stages.size(), s2.stages.size());
  for (size_t i = 0; i < s1.stages.size(); ++i) {
    EXPECT_EQ(s1.stages[i].stage, s2.stages[i].stage);
    EXPECT_EQ(s1.stages[i].count, s2.stages[i].count);
    EXPECT_EQ(s1.stages[i].p99_ns, s2.stages[i].p99_ns);
  }
}

// The same archive replayed twice, into two new stores: the stores hold the
// same rows (the analysis is a function of the stream, and UTC comes from
// the archive's anchors), every table of what was measured compared whole.
TEST_F(ReplayTest, TwoReplaysOfOneArchiveGiveIdenticalStores) {
  const ArchiveBuilder b = ScatteredOrders(3000);
  CollectorOptions o = ScatteredOrdersOptions();
  const std::string second = dir_.File("second.db");
  RunSummary s;
  ASSERT_TRUE(ReplayStatus(b, o, &s).ok()) << log_.str();
  o.store_uri = store::StoreUri::LocalFile(second);
  ASSERT_TRUE(ReplayInto(b, dir_, o, &log_, &s).ok()) << log_.str();
  const char* tables[] = {
      "SELECT * FROM order_blocks ORDER BY block_key",
      "SELECT * FROM order_ids ORDER BY id_page, block_key",
      "SELECT * FROM stage_latencies ORDER BY order_key, stage",
      "SELECT * FROM intervals ORDER BY stage_id, start_utc_ns",
      "SELECT * FROM interval_detail",
      "SELECT * FROM stage_stats ORDER BY position",
      "SELECT * FROM stages",
      "SELECT * FROM names",
      "SELECT name, value FROM counters WHERE name <> 'collector_cpu_ms' ORDER BY name"};
  StoreQuery a(db()), c(second);
  for (const char* sql : tables) {
    const auto rows = a.Rows(sql);
    EXPECT_FALSE(rows.empty()) << sql;
    EXPECT_TRUE(rows == c.Rows(sql)) << "the two stores differ in: " << sql;
  }
  EXPECT_EQ(a.Int("SELECT COUNT(*) FROM orders"), 3000);
}

TEST_F(ReplayTest, RefusesAFileThatIsNotAnArchive) {
  const std::string bad = dir_.File("bad.raw");
  {
    std::ofstream out(bad);
    out << "this is not an archive, just some text of sufficient length";
  }
  CollectorOptions o;
  o.replay_path = bad;
  o.store_uri = store::StoreUri::LocalFile(db());
  o.out = &log_;
  o.handle_signals = false;
  absl::Status s = RunCollector(o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("not a ticktrace archive"), std::string::npos) << s;
  EXPECT_NE(access(db().c_str(), F_OK), 0) << "store created despite the error";
}

TEST_F(ReplayTest, AppendsRunsToAnExistingStore) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {Stamp(0, 1, 100), Stamp(1, 1, 200)});
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  Replay(b, o);
  Replay(b, o);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 2);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), 2);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT run_id) FROM samples"), 2);
}

// Eleven orders per run; a second replay appends a second run to the same
// store, and every row of both runs is there.
TEST_F(ReplayTest, AppendingASecondRunKeepsEveryRow) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  std::vector<abi::Record> records;
  for (uint64_t order = 1; order <= 11; ++order) {
    records.push_back(Stamp(0, order, 1000 * order));
    records.push_back(Stamp(1, order, 1000 * order + 10 * order));
  }
  b.Records(1, records);
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  Replay(b, o);
  Replay(b, o);
  StoreQuery q(db());
  for (int run = 1; run <= 2; ++run) {
    const std::string where = absl::StrCat(" WHERE run_id = ", run);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders" + where), 11);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples" + where + " AND stage = 'a->b'"), 11);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples" + where + " AND stage = 'total'"), 11);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps" + where), 22);
    EXPECT_EQ(q.Int("SELECT SUM(latency_ns) FROM samples" + where + " AND stage = 'a->b'"),
              10 * 66);  // 10 ns x (1 + ... + 11)
    EXPECT_EQ(q.Int("SELECT SUM(order_id) FROM stamps" + where), 2 * 66);
  }
}

}  // namespace
}  // namespace ticktrace::collect
