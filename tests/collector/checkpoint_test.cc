// A checkpoint holds the analyzer's whole state: an analyzer restored from it
// and fed the rest of the stream emits exactly the orders (same sequence
// numbers, same samples) and ends with exactly the statistics and counters of
// one that saw the whole stream without stopping: the resumed run's totals
// equal an uninterrupted run's (docs/collector.md#checkpoints-and-restart),
// checked at the level where it is decided; the live restart test checks it end to end.

#include "collector/stream/checkpoint.h"

#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/analysis/analyzer.h"
#include "collector/app/run_info.h"
#include "collector/stream/stream.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"

namespace ticktrace::collect {
namespace {

using testing::Link;
using testing::SpanRecord;
using testing::Stamp;
using testing::TempDir;

// Every emitted order as one line: what the store would be given.
class RecordingSink : public OrderSink {
 public:
  void OnFinishedOrder(FinishedOrder&& f) override {
    std::string line = absl::StrCat(f.seq, " ", f.order.order_id, "#", f.order.instance,
                                    f.order.complete ? " complete" : " incomplete", " missing=",
                                    f.order.missing, " first=", f.order.first_utc_ns);
    for (const store::SampleDetail& s : f.order.samples) {
      absl::StrAppend(&line, " ", s.stage, "=", s.latency_ns, "/", int(s.flags));
    }
    lines.push_back(std::move(line));
  }
  std::vector<std::string> lines;
};

constexpr double kTscHz = 1e9;  // one tick per ns

RunInfo Info() { return testing::TestRunInfo("checkpoint_test", kTscHz); }

AnalyzerSettings Settings() {
  AnalyzerSettings s;
  s.stitch.timeout_ticks = 2'000'000;  // 2 ms
  s.stitch.linger_ticks = 500'000;
  s.stitch.learn_orders = 50;          // learned part-way through the stream
  return s;
}

// A stream with what makes the stitcher's state interesting: three processes,
// orders across them, fan-out (a tick linked to child orders), orders that
// time out incomplete, ids used again, records late for their order, spans,
// standalone samples, UTC anchors, and clock ticks. One chunk per element.
std::vector<std::string> Stream() {
  std::vector<std::string> chunks;
  auto add = [&chunks](auto encode) {
    std::string c;
    encode(&c);
    chunks.push_back(std::move(c));
  };
  const RunInfo info = Info();
  add([&](std::string* c) { ChunkEncoder::RunInfo(info.ToJson(), c); });
  const std::vector<std::vector<std::string>> tags = {
      {"md_rx", "md_decoded"}, {"strat_in", "decide"}, {"order_sent", "wire"}};
  for (uint32_t p = 1; p <= 3; ++p) {
    add([&](std::string* c) {
      ProcessChunk pc;
      pc.process_id = p;
      pc.pid = 100 + p;
      pc.start_ticks = 7;
      pc.segment = absl::StrCat("ticktrace.checkpoint_test.", pc.pid);
      pc.name = absl::StrCat("p", p);
      ChunkEncoder::Process(pc, c);
    });
    add([&](std::string* c) {
      TagsChunk t;
      t.process_id = p;
      for (size_t i = 0; i < tags[p - 1].size(); ++i) t.tags.emplace_back(i, tags[p - 1][i]);
      ChunkEncoder::Tags(t, c);
    });
    add([&](std::string* c) {
      ThreadChunk th;
      th.process_id = p;
      th.slot = 0;
      th.generation = 1;
      th.tid = 100 + p;
      th.name = "main";
      ChunkEncoder::Thread(th, c);
    });
  }
  std::mt19937_64 rng(12);
  uint64_t next_index[4] = {0, 0, 0, 0};
  uint64_t tsc = 1'000'000;
  auto records = [&](uint32_t p, std::vector<abi::Record> r) {
    add([&](std::string* c) { ChunkEncoder::Records(p, 0, 1, next_index[p], r, c); });
    next_index[p] += r.size();
  };
  for (int burst = 0; burst < 120; ++burst) {
    std::vector<abi::Record> r1, r2, r3;
    for (int k = 0; k < 8; ++k) {
      // Ids from a small range so that some are used again after their order ended.
      const uint64_t order = 1 + rng() % 600;
      const uint64_t t0 = tsc + k * 1000;
      const uint32_t core = static_cast<uint32_t>(rng() % 2);
      r1.push_back(Stamp(0, order, t0, core));
      r1.push_back(Stamp(1, order, t0 + 200 + rng() % 300, core));
      r2.push_back(Stamp(0, order, t0 + 900 + rng() % 500, 1 - core));
      if (rng() % 5 != 0) {  // some never reach the gateway: they time out
        r2.push_back(SpanRecord(1, order, t0 + 1500, 400 + rng() % 100, 1, 1));
        r3.push_back(Stamp(0, order, t0 + 2500 + rng() % 800, core));
      }
      if (rng() % 7 == 0) {  // a fan-out: a child order continues this one
        const uint64_t child = 100000 + order * 10 + k;
        r2.push_back(Link(child, order, t0 + 1600));
        r3.push_back(Stamp(0, child, t0 + 2700, 0));
        r3.push_back(Stamp(1, child, t0 + 3100, 0));
      }
      if (rng() % 11 == 0) r1.push_back(SpanRecord(0, 0, t0 + 50, 300, 0, 0));  // standalone
    }
    records(1, r1);
    records(2, r2);
    if (burst % 3 != 2) {
      records(3, r3);
    } else {  // the gateway's records come a burst later: some are late
      tsc += 100'000;
      records(3, r3);
    }
    tsc += 400'000 + rng() % 400'000;
    add([&](std::string* c) { ChunkEncoder::Clock(tsc, c); });
    if (burst % 10 == 0) {
      RunInfoUpdate u;
      u.kind = RunInfoUpdate::Kind::kAnchor;
      u.anchor.tsc = tsc;
      u.anchor.utc_ns = info.anchor_utc_ns + static_cast<int64_t>(tsc) + burst * 3;
      add([&](std::string* c) { ChunkEncoder::RunInfo(u.ToJson(), c); });
      RunInfoUpdate counters;  // the drainer's counters, as the live collector journals them
      counters.kind = RunInfoUpdate::Kind::kCounters;
      counters.counters = {{"segments_removed", uint64_t(burst / 10)}, {"slots_corrupt", 1}};
      add([&](std::string* c) { ChunkEncoder::RunInfo(counters.ToJson(), c); });
    }
  }
  return chunks;
}

struct Outcome {
  std::vector<std::string> orders;
  std::vector<std::pair<std::string, int64_t>> counters;
  std::vector<std::string> stages;
};

void Feed(const std::vector<std::string>& chunks, size_t from, size_t to, Analyzer* a) {
  for (size_t i = from; i < to; ++i) ASSERT_TRUE(DispatchAll(chunks[i], a).ok()) << "chunk " << i;
}

Outcome Finish(Analyzer& a, RecordingSink& sink, std::vector<std::string> earlier) {
  a.Finish();
  Outcome o;
  o.orders = std::move(earlier);
  o.orders.insert(o.orders.end(), sink.lines.begin(), sink.lines.end());
  o.counters = a.CounterValues();
  for (const auto& [name, value] : a.stream_counters()) {
    o.counters.emplace_back(absl::StrCat("stream:", name), static_cast<int64_t>(value));
  }
  for (const StageSummary& s : a.stats().Summaries()) {
    o.stages.push_back(absl::StrCat(s.stage, " n=", s.count, " all=", s.samples_all, " p50=",
                                    s.p50_ns, " p99=", s.p99_ns, " max=", s.max_ns, " mean=",
                                    s.mean_ns, " cc=", s.cross_core, " late=", s.late));
  }
  return o;
}

TEST(CheckpointTest, RestoredAnalyzerEmitsWhatAnUninterruptedOneEmits) {
  const std::vector<std::string> chunks = Stream();
  const RunInfo info = Info();
  const TimeBase tb = info.time_base();

  RecordingSink whole_sink;
  Analyzer whole(Settings(), tb, &whole_sink);
  Feed(chunks, 0, chunks.size(), &whole);
  const Outcome expected = Finish(whole, whole_sink, {});
  ASSERT_GT(expected.orders.size(), 500u);
  ASSERT_TRUE(whole.stitcher().pipeline_learned());
  ASSERT_EQ(whole.stream_counters().at("segments_removed"), 11u);

  // Split points: before learning ends, while it is going on, after it, near the end.
  for (size_t split : {size_t{12}, chunks.size() / 8, chunks.size() / 3, chunks.size() / 2,
                       chunks.size() - 3}) {
    SCOPED_TRACE(absl::StrCat("checkpoint after chunk ", split, " of ", chunks.size()));
    RecordingSink before_sink;
    Analyzer before(Settings(), tb, &before_sink);
    Feed(chunks, 0, split, &before);
    StateWriter saved;
    before.SaveState(saved);

    RecordingSink after_sink;
    Analyzer after(Settings(), tb, &after_sink);
    StateReader r(saved.bytes());
    ASSERT_TRUE(after.LoadState(r));
    StateWriter again;
    after.SaveState(again);
    const std::string& a = again.bytes();
    const std::string& b = saved.bytes();
    size_t first_difference = 0;
    while (first_difference < std::min(a.size(), b.size()) && a[first_difference] == b[first_difference]) {
      ++first_difference;
    }
    EXPECT_TRUE(a == b) << "a restored state saves to the same bytes; sizes " << a.size() << " and "
                        << b.size() << ", first difference at byte " << first_difference;

    Feed(chunks, split, chunks.size(), &after);
    const Outcome got = Finish(after, after_sink, before_sink.lines);
    EXPECT_EQ(got.orders, expected.orders);
    EXPECT_EQ(got.counters, expected.counters);
    EXPECT_EQ(got.stages, expected.stages);
  }
}

TEST(CheckpointTest, CorruptStateIsRefusedNotTrusted) {
  const std::vector<std::string> chunks = Stream();
  const TimeBase tb = Info().time_base();
  Analyzer a(Settings(), tb, nullptr);
  Feed(chunks, 0, chunks.size() / 2, &a);
  StateWriter saved;
  a.SaveState(saved);
  const std::string& bytes = saved.bytes();
  // Every cut is refused (never a crash, never a partial state taken as whole).
  for (size_t cut : {size_t{0}, size_t{5}, bytes.size() / 3, bytes.size() - 1}) {
    Analyzer b(Settings(), tb, nullptr);
    StateReader r(std::string_view(bytes).substr(0, cut));
    EXPECT_FALSE(b.LoadState(r)) << "cut at " << cut;
  }
}

TEST(CheckpointTest, FileRoundTripsAndRejectsDamage) {
  TempDir dir;
  const std::string path = dir.path() + "/store.db.ttcheckpoint";
  EXPECT_TRUE(absl::IsNotFound(ReadCheckpointFile(path).status()));
  Checkpoint c;
  c.run_id = 7;
  c.journal_offset = 123456;
  c.emitted = 99;
  c.state = std::string(1000, 'x') + "state";
  ASSERT_TRUE(WriteCheckpointFile(path, c, /*group_readable=*/false).ok());
  absl::StatusOr<Checkpoint> back = ReadCheckpointFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_id, 7);
  EXPECT_EQ(back->journal_offset, 123456u);
  EXPECT_EQ(back->emitted, 99u);
  EXPECT_EQ(back->state, c.state);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "no temporary file left";

  // Replacing keeps exactly one file, the new one.
  c.journal_offset = 200000;
  ASSERT_TRUE(WriteCheckpointFile(path, c, false).ok());
  EXPECT_EQ(ReadCheckpointFile(path)->journal_offset, 200000u);

  // One flipped byte in the state: DataLoss, not a wrong state.
  std::string bytes;
  {
    FILE* f = fopen(path.c_str(), "rb");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    fclose(f);
  }
  bytes[kCheckpointHeaderBytes + 10] ^= 0x20;
  {
    FILE* f = fopen(path.c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  EXPECT_TRUE(absl::IsDataLoss(ReadCheckpointFile(path).status()));

  // The same file written by a collector of format 1 (the version at +8):
  // refused as another format, in one line that names both, so that the
  // collector replays the journal instead.
  bytes[kCheckpointHeaderBytes + 10] ^= 0x20;
  bytes[8] = 1;
  {
    FILE* f = fopen(path.c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  const absl::Status old = ReadCheckpointFile(path).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(old)) << old;
  EXPECT_EQ(old.message(), path + ": a checkpoint of format 1 (this collector reads format 2)");
}

}  // namespace
}  // namespace ticktrace::collect
