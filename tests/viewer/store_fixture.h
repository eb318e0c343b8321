// Builds ticktrace stores for the viewer's tests: the schema is parsed out of
// docs/store.md at test time (so the tests and the contract cannot drift),
// rows are inserted with known values. Also a self-cleaning temp directory
// and a snapshot of a file's bytes and mtime.
#ifndef TICKTRACE_TESTS_VIEWER_STORE_FIXTURE_H_
#define TICKTRACE_TESTS_VIEWER_STORE_FIXTURE_H_

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/view/records.h"

struct sqlite3;

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

// Writes a store. Failures are gtest failures (ADD_FAILURE), so a test
// reads straight through.
class StoreWriter {
 public:
  // Creates `path` in WAL mode (as the collector does) with the docs
  // schema and meta rows app=ticktrace, schema_version=`schema_version`.
  // schema_version 0 opens an existing store to edit it instead.
  explicit StoreWriter(const std::string& path, int schema_version = 1);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Runs SQL; ADD_FAILURE on error.
  void Exec(const std::string& sql);
  void AddRun(const RunInfo& run);
  void AddProcess(int64_t run_id, const ProcessInfo& p);
  void AddThread(int64_t run_id, const ThreadInfo& t);
  void AddCounter(int64_t run_id, const std::string& name, int64_t value);
  void AddOrder(int64_t run_id, const OrderRow& o);
  void AddStamp(int64_t run_id, const StampRow& s);
  void AddSample(int64_t run_id, const SampleRow& s);
  void AddStageStats(int64_t run_id, const StageStatsRow& s);
  // Commits and closes; the destructor does it too.
  void Close();

 private:
  sqlite3* db_ = nullptr;
};

// The known data set (see store_fixture.cc for the story):
//  run 1: an older run with one order (so "latest" is tested);
//  run 2: pipeline md -> strategy -> gateway, processes md[1001],
//         strategy[1002], gateway[1003], a span "risk" in strategy,
//         orders 1..100 complete, 101 incomplete (gateway missing),
//         102 linked to 50; flags on orders 7, 13 and 21; stage_stats
//         computed from the samples unless `stats_marker` is set, in which
//         case every stage_stats percentile is that marker value.
struct KnownStore {
  static constexpr int64_t kLatestRun = 2;
  static constexpr double kTscHz = 2e9;  // 0.5 ns per tick
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
void WriteKnownStore(const std::string& path, std::optional<double> stats_marker = std::nullopt);

// The samples WriteKnownStore puts in run 2, for tests that count them.
std::vector<SampleRow> KnownSamples();

}  // namespace ticktrace::view::testing

#endif  // TICKTRACE_TESTS_VIEWER_STORE_FIXTURE_H_
