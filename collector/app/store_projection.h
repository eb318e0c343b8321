// What the collector says about the store's size while it runs: at start,
// the detail limit and where it comes from; after the first minute of a
// live run and then every ten minutes, the growth at the observed rate and
// how long a window of detail the limit holds at that rate, e.g.
//
//   store: +61.2 GB/h at this rate (17.0 MB/s); detail limit 50.0 MB
//   (--retain-detail 50MB): detail kept for about the last 2.9 s
//
// and a warning when the store's filesystem would fill before the limit
// applies (free space < limit - what the store takes). The same figures go
// into the run's counters (store_bytes, store_growth_bytes_per_s,
// store_detail_limit_bytes, store_detail_window_s: `ticktrace-view runs`,
// /metrics as gauges).
//
// The growth is that of the store's live bytes plus the bytes retention
// freed (StoreSinkCounters): what the store would grow by without a limit,
// measured over the last minute. The window is the limit over that rate:
// the detail is retired oldest first, so at a steady rate the detail the
// store holds spans about that long (less the statistics' share, which is
// small: a few hundred bytes per stage and interval).
//
// Analysis thread (Session::Snapshot, about once a second).

#ifndef TICKTRACE_COLLECTOR_APP_STORE_PROJECTION_H_
#define TICKTRACE_COLLECTOR_APP_STORE_PROJECTION_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "collector/app/detail_limit.h"
#include "collector/sinks/store_sink.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {

class StoreProjection {
 public:
  // `directory`: the store's ("" : not a local store: no free-space check).
  // `live`: a live run (the periodic lines); a replay only keeps counters.
  StoreProjection(DetailLimit limit, std::string directory, bool live);

  // What to say now ("" : nothing): a line for stdout, a warning for stderr.
  struct Said {
    std::string line;
    std::string warning;
  };

  // Said at start: the limit and its origin (line), and the warning when
  // the filesystem would fill first.
  Said AtStart(uint64_t store_bytes, std::optional<uint64_t> free_bytes) const;

  // One snapshot: the sink's counters at `now_ns` (steady clock) and the
  // free space now. Appends the figures to `counters` (a live run's, once
  // the store's size is known; a replay's would differ between two replays
  // of one archive, so it has none).
  Said Observe(int64_t now_ns, const StoreSinkCounters& sink, std::optional<uint64_t> free_bytes,
               std::vector<std::pair<std::string, int64_t>>* counters);

  // The growth in bytes a second over the samples of the last minute (at
  // least kMinSpanNs of them); nullopt before.
  std::optional<double> growth_bytes_per_s() const;

  static constexpr int64_t kWindowNs = 60'000'000'000;   // growth measured over
  static constexpr int64_t kMinSpanNs = 5'000'000'000;   // before: unknown
  static constexpr int64_t kFirstLineNs = 60'000'000'000;
  static constexpr int64_t kLineEveryNs = 600'000'000'000;

  // Pure formatting, for tests: the projection line for these figures.
  static std::string Line(double growth_bytes_per_s, const DetailLimit& limit,
                          std::optional<uint64_t> free_bytes);
  // The warning ("" : none) for a store taking `store_bytes` under `limit`
  // with `free_bytes` free.
  static std::string FillWarning(const DetailLimit& limit, const std::string& directory,
                                 uint64_t store_bytes, std::optional<uint64_t> free_bytes);

 private:
  DetailLimit limit_;
  std::string directory_;
  bool live_;
  std::deque<std::pair<int64_t, uint64_t>> samples_;  // (now_ns, live + retired bytes)
  bool sampled_ = false;  // a sample with the store's size came
  int64_t next_line_ns_ = 0;
  bool warned_ = false;
};

// Resolves `spec` for the opened `store` into sink->retain_detail_bytes (an
// embedding program's own retain_detail_bytes stays when `spec` is the
// default), and returns the projection that says it. InvalidArgument as
// ResolveDetailLimit.
absl::StatusOr<StoreProjection> StartStoreProjection(const DetailLimitSpec& spec,
                                                     store::Writer& store, bool live,
                                                     StoreSinkOptions* sink);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_APP_STORE_PROJECTION_H_
