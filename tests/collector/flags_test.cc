// Collector behaviours that only show in counters and flags: saturated and
// backwards spans, repeated stages, rejected links, stamps outside the
// pipeline, ring index gaps and malformed chunks. Each test replays a crafted
// raw archive (1 GHz: one tick is one ns) and checks the counters and the
// stored rows against what docs/collector.md and docs/store.md promise, with
// the expected values worked out by hand in the comments.

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "collector/app/collector.h"
#include "collector/stream/stream.h"
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

constexpr uint32_t kNoCpu = abi::kAuxUnknown;

// A span record with the producer's duration flags (abi.h: saturated at
// 0xffffffff ticks with kRecordSpanSaturated; 0 with kRecordSpanBackwards).
abi::Record FlaggedSpan(uint16_t tag, uint64_t order, uint64_t begin_tsc, uint32_t duration,
                        uint8_t flags) {
  abi::Record r = SpanRecord(tag, order, begin_tsc, duration, kNoCpu, kNoCpu);
  r.flags = flags;
  return r;
}

// An interval without an order (record_interval / END_MEASURE).
abi::Record Interval(uint16_t tag, uint64_t begin_tsc, uint32_t duration, uint8_t flags) {
  abi::Record r = FlaggedSpan(tag, 0, begin_tsc, duration, flags);
  r.kind = abi::kMeasure;
  return r;
}

// One chunk framed by hand: header (type, size, checksum) + `payload`, so a
// test can send a payload the encoder would never write, with a valid checksum.
std::string Frame(ChunkType type, const std::string& payload) {
  const uint32_t t = static_cast<uint32_t>(type);
  const uint32_t n = static_cast<uint32_t>(payload.size());
  const uint64_t sum = ChunkChecksum(t, reinterpret_cast<const uint8_t*>(payload.data()), n);
  std::string out(kChunkHeaderBytes, '\0');
  std::memcpy(out.data(), &t, 4);
  std::memcpy(out.data() + 4, &n, 4);
  std::memcpy(out.data() + 8, &sum, 8);
  return out + payload;
}

// The payload of the one chunk in `encoded` (its header removed).
std::string PayloadOf(const std::string& encoded) { return encoded.substr(kChunkHeaderBytes); }

using FlagsTest = testing::ReplayStoreTest;

CollectorOptions Pipeline(std::vector<std::string> stages) {
  CollectorOptions o;
  o.pipeline = std::move(stages);
  return o;
}

// store.md: `spans_saturated` counts spans longer than the 32-bit duration
// holds; the producer then writes 0xffffffff ticks and kRecordSpanSaturated,
// and the duration is a lower bound: flag 8 (saturated), kept out of the
// percentiles. The count follows the flag: a span of exactly 2^32-1 ticks is
// exact, not saturated.
TEST_F(FlagsTest, SaturatedSpansAreCountedFlaggedAndKeptOutOfThePercentiles) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "parse"});
  b.Records(1, {
                   // order 1: saturated span
                   Stamp(0, 1, 1000), FlaggedSpan(2, 1, 1100, 0xffffffffu,
                                                  abi::kRecordSpanSaturated),
                   Stamp(1, 1, 2000),
                   // order 2: 2^32-1 ticks exactly, not saturated
                   Stamp(0, 2, 3000), FlaggedSpan(2, 2, 3100, 0xffffffffu, 0), Stamp(1, 2, 4000),
                   // order 3: an ordinary span
                   Stamp(0, 3, 5000), FlaggedSpan(2, 3, 5100, 500, 0), Stamp(1, 3, 6000),
                   // an interval without an order, saturated
                   Interval(2, 7000, 0xffffffffu, abi::kRecordSpanSaturated),
               });
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("spans_saturated"), 2);  // order 1's span and the interval
  EXPECT_EQ(StoredCounter("spans_saturated"), 2);
  EXPECT_EQ(s.counter("standalone_samples"), 1);
  // The two saturated samples are lower bounds: out of the percentiles. The
  // exact 2^32-1 ticks (order 2) and the 500 ns span (order 3) are in.
  const StageSummary* parse = s.stage("parse");
  ASSERT_NE(parse, nullptr);
  EXPECT_EQ(parse->samples_all, 4u);
  EXPECT_EQ(parse->count, 2u);
  EXPECT_DOUBLE_EQ(parse->min_ns, 500);
  EXPECT_DOUBLE_EQ(parse->max_ns, 4294967295.0);
  EXPECT_EQ(parse->negative, 0u);
  StoreQuery q(db());
  EXPECT_EQ(q.Real("SELECT latency_ns FROM samples WHERE stage = 'parse' AND order_id = 1"),
            4294967295.0);
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE stage = 'parse' AND order_id = 1"), 8);
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE stage = 'parse' AND order_id = 2"), 0);
  EXPECT_EQ(q.Int("SELECT flags FROM stamps WHERE kind = 'span' AND order_id = 1"), 8);
  EXPECT_EQ(q.Real("SELECT duration_ns FROM stamps WHERE kind = 'span' AND order_id = 1"),
            4294967295.0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage = 'parse'"), 3);  // not the interval
}

// collector.md: `negative` covers "a span the producer saw end before it
// began" (kRecordSpanBackwards, the duration how far backwards); store.md:
// flag 2, stored negative, never clamped. Negative samples are counted and
// kept out of the percentiles unless --include-flagged.
TEST_F(FlagsTest, BackwardsSpansAreNegativeAndKeptOutOfThePercentiles) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "parse"});
  b.Records(1, {
                   Stamp(0, 1, 1000), FlaggedSpan(2, 1, 1100, 70, abi::kRecordSpanBackwards),
                   Stamp(1, 1, 2000),
                   Stamp(0, 2, 3000), FlaggedSpan(2, 2, 3100, 400, 0), Stamp(1, 2, 4000),
                   Interval(2, 5000, 30, abi::kRecordSpanBackwards),
               });
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  const StageSummary* parse = s.stage("parse");
  ASSERT_NE(parse, nullptr);
  EXPECT_EQ(parse->samples_all, 3u);
  EXPECT_EQ(parse->negative, 2u);  // order 1's span and the interval
  EXPECT_EQ(parse->migrated, 0u);
  EXPECT_EQ(parse->count, 1u);  // order 2's 400 ns only
  EXPECT_DOUBLE_EQ(parse->min_ns, 400);
  EXPECT_DOUBLE_EQ(parse->max_ns, 400);
  EXPECT_EQ(s.counter("spans_saturated"), 0);
  // The orders themselves are unaffected.
  EXPECT_EQ(s.counter("orders_complete"), 2);
  EXPECT_DOUBLE_EQ(s.stage("a->b")->max_ns, 1000);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE stage = 'parse' AND order_id = 1"), 2);
  // 70 ticks backwards at 1 GHz: -70 ns, not 0.
  EXPECT_EQ(q.Real("SELECT latency_ns FROM samples WHERE stage = 'parse' AND order_id = 1"), -70);
  EXPECT_EQ(q.Real("SELECT duration_ns FROM stamps WHERE kind = 'span' AND order_id = 1"), -70);
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE stage = 'parse' AND order_id = 2"), 0);
  EXPECT_EQ(q.Int("SELECT flags FROM stamps WHERE kind = 'span' AND order_id = 1"), 2);
  EXPECT_EQ(q.Int("SELECT negative FROM stage_stats WHERE stage = 'parse'"), 2);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage = 'parse'"), 1);
  EXPECT_EQ(q.Int("SELECT samples_all FROM stage_stats WHERE stage = 'parse'"), 3);

  CollectorOptions all = Pipeline({"a", "b"});
  all.include_flagged = true;
  RunSummary s2;
  ASSERT_TRUE(ReplayStatus(b, all, &s2, /*store=*/false).ok());
  EXPECT_EQ(s2.stage("parse")->count, 3u);
  EXPECT_DOUBLE_EQ(s2.stage("parse")->min_ns, -70);  // kept negative: -70, -30 and 400 ns
}

// store.md: `repeated_stages` counts a stage stamped twice in one order; the
// earliest stamp is used, whichever arrived first.
TEST_F(FlagsTest, RepeatedStagesAreCountedAndTheEarliestIsUsed) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {
                   Stamp(0, 1, 1000), Stamp(0, 1, 1300), Stamp(1, 1, 2000),  // a again, later
                   Stamp(0, 2, 5300), Stamp(0, 2, 5000), Stamp(1, 2, 6000),  // a again, earlier
                   Stamp(0, 3, 7000), Stamp(1, 3, 7500),                     // no repeat
                   Stamp(0, 4, 9000), Stamp(1, 4, 9400), Stamp(1, 4, 9200),  // b again, earlier
               });
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("repeated_stages"), 3);
  EXPECT_EQ(StoredCounter("repeated_stages"), 3);
  EXPECT_EQ(s.counter("orders_complete"), 4);
  EXPECT_EQ(s.stage("a->b")->samples_all, 4u);  // one sample per order, not per stamp
  StoreQuery q(db());
  // Earliest a to earliest b: 1000, 1000, 500, 200.
  EXPECT_EQ(q.Rows("SELECT order_id, latency_ns FROM samples WHERE stage = 'a->b' "
                   "ORDER BY order_id"),
            (std::vector<std::vector<std::string>>{
                {"1", "1000"}, {"2", "1000"}, {"3", "500"}, {"4", "200"}}));
  EXPECT_EQ(q.Real("SELECT total_ns FROM orders WHERE order_id = 2"), 1000);
  // Every stamp is still stored.
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps WHERE order_id = 1"), 3);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), 11);
}

// store.md: `links_rejected` counts self links. The order stays a root.
TEST_F(FlagsTest, ASelfLinkIsRejected) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {Link(5, 5, 900), Stamp(0, 5, 1000), Stamp(1, 5, 1500)});
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("links_rejected"), 1);
  EXPECT_EQ(StoredCounter("links_rejected"), 1);
  EXPECT_EQ(s.counter("orders_complete"), 1);
  EXPECT_EQ(s.counter("orders_fanned_out"), 0);
  StoreQuery q(db());
  EXPECT_EQ(q.Text("SELECT COALESCE(parent_order_id, 'null') FROM orders WHERE order_id = 5"),
            "null");
  EXPECT_EQ(q.Real("SELECT latency_ns FROM samples WHERE stage = 'a->b'"), 500);
}

// store.md: `links_rejected` counts a second parent; the first link stands.
// The same link sent twice names no second parent and is not rejected.
TEST_F(FlagsTest, ASecondParentIsRejected) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {Stamp(0, 1, 1000), Stamp(0, 3, 1200), Link(2, 1, 1300), Link(2, 3, 1400),
                Link(2, 1, 1450), Stamp(1, 2, 2000)});
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("links_rejected"), 1);
  EXPECT_EQ(StoredCounter("links_rejected"), 1);
  // Order 1 fanned out into order 2, which completes with its parent's a;
  // order 3 never became a parent and misses b.
  EXPECT_EQ(s.counter("orders_fanned_out"), 1);
  EXPECT_EQ(s.counter("orders_complete"), 1);
  EXPECT_EQ(s.counter("orders_incomplete"), 1);
  EXPECT_EQ(s.counter("missing_stage:b"), 1);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT parent_order_id FROM orders WHERE order_id = 2"), 1);
  EXPECT_EQ(q.Real("SELECT latency_ns FROM samples WHERE stage = 'a->b' AND order_id = 2"),
            1000);  // 2000 - order 1's a at 1000 (order 3's a at 1200 would give 800)
  EXPECT_EQ(q.Text("SELECT missing FROM orders WHERE order_id = 3"), "b");
}

// store.md: `links_rejected` counts a link that would close a cycle, of two
// orders and of three. The links before it stand.
TEST_F(FlagsTest, ALinkClosingACycleIsRejected) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {
                   // 2 -> 1, then 1 -> 2 would close a cycle of two.
                   Stamp(0, 1, 1000), Link(2, 1, 1100), Link(1, 2, 1200), Stamp(1, 2, 1500),
                   // 12 -> 11, 13 -> 12, then 11 -> 13 would close a cycle of three.
                   Stamp(0, 11, 3000), Link(12, 11, 3100), Link(13, 12, 3200),
                   Link(11, 13, 3300), Stamp(1, 13, 3700),
               });
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("links_rejected"), 2);
  EXPECT_EQ(StoredCounter("links_rejected"), 2);
  // Parents 1, 11 and 12 fanned out; children 2 and 13 complete. Had a cycle
  // link been taken, order 2 (or 13) would have a child and not count here.
  EXPECT_EQ(s.counter("orders_fanned_out"), 3);
  EXPECT_EQ(s.counter("orders_complete"), 2);
  EXPECT_EQ(s.counter("orders_incomplete"), 0);
  StoreQuery q(db());
  EXPECT_EQ(q.Rows("SELECT order_id, COALESCE(parent_order_id, 'null') FROM orders "
                   "ORDER BY order_id"),
            (std::vector<std::vector<std::string>>{
                {"1", "null"}, {"2", "1"}, {"11", "null"}, {"12", "11"}, {"13", "12"}}));
  // Each child's a->b starts at its root's a: 1500 - 1000 and 3700 - 3000.
  EXPECT_EQ(q.Rows("SELECT order_id, latency_ns FROM samples WHERE stage = 'a->b' "
                   "ORDER BY order_id"),
            (std::vector<std::vector<std::string>>{{"2", "500"}, {"13", "700"}}));
}

// store.md: `outside_pipeline` counts stamps whose tag is not a pipeline
// stage; they are in `stamps`, not in any `a->b`. Spans are not stamps: a span
// under a tag outside the pipeline is its own stage and not counted here.
TEST_F(FlagsTest, StampsOutsideThePipelineAreStoredButNotChained) {
  ArchiveBuilder b;
  b.Process(1, {"a", "x", "b", "parse"});
  b.Records(1, {
                   Stamp(0, 1, 1000), FlaggedSpan(3, 1, 1100, 50, 0), Stamp(1, 1, 1200),
                   Stamp(2, 1, 1500),
                   Stamp(0, 2, 2000), Stamp(1, 2, 2100), Stamp(2, 2, 2300),
               });
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("outside_pipeline"), 2);
  EXPECT_EQ(StoredCounter("outside_pipeline"), 2);
  EXPECT_EQ(s.counter("orders_complete"), 2);
  EXPECT_EQ(s.stage("a->x"), nullptr);
  EXPECT_EQ(s.stage("x->b"), nullptr);
  ASSERT_NE(s.stage("parse"), nullptr);
  EXPECT_EQ(s.stage("parse")->samples_all, 1u);
  StoreQuery q(db());
  EXPECT_EQ(q.Rows("SELECT order_id, latency_ns FROM samples WHERE stage = 'a->b' "
                   "ORDER BY order_id"),
            (std::vector<std::vector<std::string>>{{"1", "500"}, {"2", "300"}}));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage LIKE '%x%'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps WHERE tag = 'x' AND kind = 'stamp'"), 2);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stage_stats WHERE stage LIKE '%x%'"), 0);
}

// store.md: `index_gaps` counts ring indices never seen between records the
// run drained from a ring (another consumer took them). A ring's first
// records may start at any index: what came before was consumed before this
// run (a previous collector), which is no gap.
TEST_F(FlagsTest, IndexGapsCountRingIndicesNeverSeen) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"}).Process(2, {"a", "b"});
  b.Records(1, {Stamp(0, 1, 1000), Stamp(1, 1, 1100)}, 0);  // indices 0, 1
  b.Records(1, {Stamp(0, 2, 2000), Stamp(1, 2, 2100)}, 5);  // 2, 3, 4 never seen
  b.Records(1, {Stamp(0, 3, 3000), Stamp(1, 3, 3100)}, 7);  // follows on
  b.Records(2, {Stamp(0, 4, 4000), Stamp(1, 4, 4100)}, 1000);  // ring 2 first seen at 1000
  b.Records(2, {Stamp(0, 5, 5000), Stamp(1, 5, 5100)}, 1003);  // 1002 never seen
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("index_gaps"), 4);
  EXPECT_EQ(StoredCounter("index_gaps"), 4);
  EXPECT_EQ(s.counter("drained"), 10);
  EXPECT_EQ(s.counter("duplicates_skipped"), 0);
  EXPECT_EQ(s.counter("orders_complete"), 5);
}

// store.md: `malformed_chunks` counts journal/archive chunks with impossible
// payloads; they are skipped and what follows is analysed. Each chunk below
// has a valid checksum (a torn chunk ends the replay; a corrupt one is skipped
// and counted in journal_chunks_corrupt: replay_test, archive_resync_test).
TEST_F(FlagsTest, MalformedChunksAreSkippedAndCounted) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  b.Records(1, {Stamp(0, 1, 1000), Stamp(1, 1, 1400)}, 0);
  {
    // 1. Records that are not whole records: one record and 5 stray bytes.
    std::string records;
    ChunkEncoder::Records(1, 0, 1, 2, std::vector<abi::Record>{Stamp(0, 9, 1500)}, &records);
    b.Raw(Frame(ChunkType::kRecords, PayloadOf(records) + "12345"));
    // 2. A thread chunk with trailing bytes.
    ThreadChunk t;
    t.process_id = 1;
    t.slot = 1;
    t.generation = 1;
    t.tid = 77;
    t.name = "worker";
    std::string thread;
    ChunkEncoder::Thread(t, &thread);
    b.Raw(Frame(ChunkType::kThread, PayloadOf(thread) + "xy"));
    // 3. A clock chunk of 4 bytes instead of 8.
    b.Raw(Frame(ChunkType::kClock, std::string("\x01\x02\x03\x04", 4)));
    // 4. Tags of a process never announced.
    TagsChunk tags;
    tags.process_id = 9;
    tags.tags = {{0, "ghost"}};
    std::string tag_chunk;
    ChunkEncoder::Tags(tags, &tag_chunk);
    b.Raw(tag_chunk);
    // 5. A drop counter of a process never announced.
    SlotDroppedChunk dropped;
    dropped.process_id = 9;
    dropped.dropped_total = 5;
    std::string dropped_chunk;
    ChunkEncoder::SlotDropped(dropped, &dropped_chunk);
    b.Raw(dropped_chunk);
  }
  b.Records(1, {Stamp(0, 2, 2000), Stamp(1, 2, 2300)}, 2);
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  EXPECT_EQ(s.counter("malformed_chunks"), 5);
  EXPECT_EQ(StoredCounter("malformed_chunks"), 5);
  // The skipped records chunk's record is not drained; both good chunks are.
  EXPECT_EQ(s.counter("drained"), 4);
  EXPECT_EQ(s.counter("malformed"), 0);
  EXPECT_EQ(s.counter("dropped"), 0);
  EXPECT_EQ(s.counter("orders_complete"), 2);
  EXPECT_EQ(s.counter("index_gaps"), 0);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE order_id = 9"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM threads WHERE tid = 77"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes"), 1);
}

// A sample whose core is unknown at either end is neither same-core nor
// cross-core: counted per stage as core_unknown (and stored as the counter
// "core_unknown:<stage>"), never as cross_core. By hand, stages a->b and
// total (a chain of a and b): orders 1 and 2 have an unknown end, 3 is on
// cpu 0 throughout, 4 crosses from cpu 0 to cpu 1. Span parse: order 3's end
// is unknown, order 4's both ends are on cpu 0.
TEST_F(FlagsTest, AnUnknownCoreIsCountedPerStageNeverAsSameOrCrossCore) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "parse"});
  b.Records(1, {
                   Stamp(0, 1, 1000, kNoCpu),
                   Stamp(1, 1, 2000, 0),
                   Stamp(0, 2, 3000, 0),
                   Stamp(1, 2, 4000, kNoCpu),
                   Stamp(0, 3, 5000, 0),
                   SpanRecord(2, 3, 5100, 100, 0, kNoCpu),
                   Stamp(1, 3, 6000, 0),
                   Stamp(0, 4, 7000, 0),
                   SpanRecord(2, 4, 7100, 100, 0, 0),
                   Stamp(1, 4, 8000, 1),
               });
  RunSummary s = Replay(b, Pipeline({"a", "b"}));
  for (const char* name : {"a->b", "total"}) {
    const StageSummary* stage = s.stage(name);
    ASSERT_NE(stage, nullptr) << name;
    EXPECT_EQ(stage->samples_all, 4u) << name;
    EXPECT_EQ(stage->core_unknown, 2u) << name;
    EXPECT_EQ(stage->cross_core, 1u) << name;
  }
  const StageSummary* parse = s.stage("parse");
  ASSERT_NE(parse, nullptr);
  EXPECT_EQ(parse->samples_all, 2u);
  EXPECT_EQ(parse->core_unknown, 1u);
  EXPECT_EQ(parse->migrated, 0u);
  EXPECT_EQ(StoredCounter("core_unknown:a->b"), 2);
  EXPECT_EQ(StoredCounter("core_unknown:total"), 2);
  EXPECT_EQ(StoredCounter("core_unknown:parse"), 1);
}

}  // namespace
}  // namespace ticktrace::collect
