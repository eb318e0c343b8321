// Test-only: replays an ArchiveBuilder's archive through the real collector
// (RunCollector), so a test states only its input, its options and its checks:
// one replay (ReplayArchive) or a fixture's replays into its store
// (ReplayStoreTest).

#ifndef TICKTRACE_TESTS_COLLECTOR_REPLAY_UTIL_H_
#define TICKTRACE_TESTS_COLLECTOR_REPLAY_UTIL_H_

#include <ostream>
#include <sstream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "collector/app/collector.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect::testing {

struct Replayed {
  absl::Status status;
  RunSummary summary;
  std::string log;  // what the collector printed
};

// Writes `b` to `dir`/in.raw and replays it with `o`, printing to `out` (its
// replay_path, out and handle_signals are set here; store_uri is kept: unset
// for no store).
inline absl::Status ReplayInto(const ArchiveBuilder& b, const TempDir& dir, CollectorOptions o,
                               std::ostream* out, RunSummary* summary) {
  const std::string raw = dir.File("in.raw");
  b.Write(raw);
  o.replay_path = raw;
  o.out = out;
  o.handle_signals = false;
  return RunCollector(o, summary);
}

// Writes `b` to `dir`/in.raw and replays it with `o` (ReplayInto); what
// the collector printed is in the result.
inline Replayed ReplayArchive(const ArchiveBuilder& b, const TempDir& dir, CollectorOptions o) {
  std::ostringstream log;
  Replayed r;
  r.status = ReplayInto(b, dir, std::move(o), &log, &r.summary);
  r.log = log.str();
  return r;
}

// The summary of `stage` in a replay that succeeded. A failed replay or a
// missing stage is a test failure (with the status, or with what the
// collector printed) and null: callers ASSERT_NE(stage, nullptr).
inline const StageSummary* StageOf(const Replayed& r, const std::string& stage) {
  if (!r.status.ok()) {
    ADD_FAILURE() << r.status;
    return nullptr;
  }
  const StageSummary* s = r.summary.stage(stage);
  if (s == nullptr) ADD_FAILURE() << "no stage " << stage << "\n" << r.log;
  return s;
}

// A test that replays archives into a store of its own (db()); what the
// collector printed gathers in log_, over every replay of the test.
class ReplayStoreTest : public ::testing::Test {
 protected:
  // Replays `b` with `o` into db() (no store when `store` is false); returns
  // the run's status and its summary in `summary`.
  absl::Status ReplayStatus(const ArchiveBuilder& b, CollectorOptions o, RunSummary* summary,
                            bool store = true) {
    if (store) {
      o.store_uri = store::StoreUri::LocalFile(db());
    } else {
      o.store_uri.reset();
    }
    return ReplayInto(b, dir_, std::move(o), &log_, summary);
  }
  // As ReplayStatus; EXPECTs success.
  RunSummary Replay(const ArchiveBuilder& b, CollectorOptions o = {}, bool store = true) {
    RunSummary s;
    const absl::Status st = ReplayStatus(b, std::move(o), &s, store);
    EXPECT_TRUE(st.ok()) << st;
    return s;
  }
  std::string db() const { return dir_.File("store.db"); }
  // A counter as stored in the `counters` table of db().
  int64_t StoredCounter(const std::string& name) {
    return StoreQuery(db()).Int("SELECT value FROM counters WHERE name = '" + name + "'");
  }

  TempDir dir_;
  std::ostringstream log_;
};

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_REPLAY_UTIL_H_
