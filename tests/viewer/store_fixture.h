// Builds ticktrace stores for the viewer's tests through the collector's own
// writer (store::SqliteWriter, schema 2) from orders of known values, with
// interval statistics computed from the same samples. Also the ```sql block
// of docs/store.md, a self-cleaning temp directory and a snapshot of a
// file's bytes and mtime.
#ifndef TICKTRACE_TESTS_VIEWER_STORE_FIXTURE_H_
#define TICKTRACE_TESTS_VIEWER_STORE_FIXTURE_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "ticktrace/store/reader.h"
#include "ticktrace/store/writer.h"
#include "ticktrace/store/rows.h"
#include "viewer/views/summary.h"

namespace ticktrace::view::testing {

// The ```sql block of docs/store.md.
absl::StatusOr<std::string> SchemaSqlFromDocs();

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // path()/name
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // The names in the directory, sorted.
  std::vector<std::string> List() const;

 private:
  std::string path_;
};

// A file's bytes and modification time, to show a command left it alone.
struct FileSnapshot {
  std::string bytes;
  struct timespec mtime = {};
  bool operator==(const FileSnapshot& other) const {
    return bytes == other.bytes && mtime.tv_sec == other.mtime.tv_sec &&
           mtime.tv_nsec == other.mtime.tv_nsec;
  }
};
FileSnapshot Snapshot(const std::string& path);
// The whole file as a string ("" when unreadable).
std::string ReadFile(const std::string& path);

// Runs SQL on the SQLite file at `path` (tests that tamper with a store:
// a newer schema version, a changed column); ADD_FAILURE on error.
void ExecSql(const std::string& path, const std::string& sql);

// One run as WriteStore writes it through store::SqliteWriter, the
// collector's own writer: the interval statistics (IntervalDelta per stage
// per interval, IntervalOrders per interval) and the whole-run stage_stats
// are computed here from `orders`' samples, the way the collector does it
// (an order belongs to the interval of its first stamp; a sample is in the
// percentiles unless a flag of store::kFlagsExcludedByDefault says otherwise,
// or `include_flagged`), so they agree with the detail by construction.
struct FixtureRun {
  store::RunMeta meta;  // interval_ns and detail policy included
  std::optional<int64_t> ended_utc_ns;  // EndRun when set
  // Processes, threads, counters, cores; `stages` is filled from the orders.
  store::Snapshot snapshot;
  // stage_stats.position: these first, in this order; other stages after,
  // by name.
  std::vector<std::string> stage_order;
  bool include_flagged = false;  // stage_stats.include_flagged, and the histograms
  // Every stage_stats percentile (that has enough samples) is this value
  // instead of the histogram's: shows which numbers a reader takes.
  std::optional<double> stats_marker;
  std::vector<store::OrderDetail> orders;
  // Orders whose detail is not stored (counted in interval_detail.orders,
  // not kept): what --detail tail or a writer that fell behind leaves.
  std::function<bool(const store::OrderDetail&)> drop_detail;
};

// Creates the store at `path` (schema 2, through store::SqliteWriter) and
// writes `runs` in order: their run_ids are 1, 2, ...
void WriteStore(const std::string& path, const std::vector<FixtureRun>& runs);

// The stage kind of a fixture stage name: "total", "a->b", else a span.
store::StageKind KindOfStage(const std::string& stage);

// The known data set (see store_fixture.cc for the story):
//  run 1: an older run with one order (so "latest" is tested);
//  run 2: pipeline md -> strategy -> gateway, processes md[1001],
//         strategy[1002], gateway[1003], a span "risk" in strategy,
//         orders 1..100 complete, 101 incomplete (gateway missing),
//         102 linked to 50; flags on orders 7, 13 and 21. Intervals of
//         1 ms, so that order i (first stamp at i ms) has interval i to
//         itself (102 shares 50's: its first stamp is 50's).
struct KnownStore {
  static constexpr int64_t kLatestRun = 2;
  static constexpr double kTscHz = 2e9;  // 0.5 ns per tick
  static constexpr int64_t kIntervalNs = 1'000'000;
  static int64_t BaseUtcNs();            // 2026-11-30T08:00:00Z
  // md->strategy latency of order i (i = 1..100): 10*i ns, except order 13: -5 ns.
  static double MdToStrategyNs(int64_t order);
  // strategy->gateway latency of order i: 1000 + i ns.
  static double StrategyToGatewayNs(int64_t order);
  // The risk span of order i: 100 + i ns.
  static double RiskNs(int64_t order);
  // Order i's first stamp: BaseUtcNs() + i ms.
  static int64_t FirstUtcNs(int64_t order);
};
struct KnownStoreOptions {
  std::optional<double> stats_marker;  // FixtureRun::stats_marker of run 2
  bool include_flagged = false;        // FixtureRun::include_flagged of run 2
  // Run 2 written with --detail tail: orders 1..100 whose id is not a
  // multiple of 10 and that carry no flag have no detail (13, 21 and 7
  // keep theirs, as do 101 and 102).
  bool detail_sampled = false;
};
// The two runs of the known store, for tests that change them before writing.
std::vector<FixtureRun> KnownRuns(const KnownStoreOptions& options = {});
void WriteKnownStore(const std::string& path, const KnownStoreOptions& options = {});

// The samples WriteKnownStore puts in run 2, for tests that count them.
std::vector<store::SampleRow> KnownSamples();

// A run of `session` on host "h" with a given 1 GHz clock (calibration
// source "given"); everything else as a FixtureRun starts.
FixtureRun GivenClockRun(const std::string& session);

// The store at `path` open for reading; a failed open is a test failure
// (with the status) and null.
std::unique_ptr<store::StoreReader> OpenStore(const std::string& path);

// The collector's own writer on a new store at `path`, left open (WAL,
// -wal/-shm beside the store) with a run of `session` begun and not ended, as
// a running collector holds it. `run` is that run's meta, for more runs. A
// failure is a test failure and null.
std::unique_ptr<store::Writer> OpenWriterWithRun(const std::string& path,
                                                 const std::string& session, store::RunMeta* run);

// The row of `stage` in `summary`; none is a test failure and null.
const SummaryStage* FindStage(const Summary& summary, const std::string& stage);

// A test of the known store: written to dir_/known.db and open in store_
// before each test.
class KnownStoreTest : public ::testing::Test {
 protected:
  void SetUp() override;

  TempDir dir_;
  std::unique_ptr<store::StoreReader> store_;
};

}  // namespace ticktrace::view::testing

#endif  // TICKTRACE_TESTS_VIEWER_STORE_FIXTURE_H_
