// Rows of ticktrace/store/rows.h from schema-2 order detail: an `orders` row's
// packed detail (detail.h) and its narrow `samples` rows, with the run's
// dictionaries, become SampleRow and StampRow. Used by the SQLite reader
// (store/sqlite/sqlite_reader.cc); a second backend that stores the same packed
// detail reuses it. Private to the store library.
#ifndef TICKTRACE_VIEW_SRC_PACKED_ROWS_H_
#define TICKTRACE_VIEW_SRC_PACKED_ROWS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "store/common/detail.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::store::internal {

// What decoding a run's detail needs from its rows in runs, names and stages.
struct RunDictionary {
  double tsc_hz = 0;
  int64_t interval_ns = 1'000'000'000;
  std::string detail_policy = "all";
  std::vector<std::string> names;   // by names.name_id
  std::vector<std::string> stages;  // by stages.stage_id

  // The name of `id`, or "#<id>" for an id the table does not hold.
  std::string Name(uint32_t id) const;
  std::string Stage(int64_t id) const;
};

// The order an orders row describes.
struct OrderKeyFields {
  int64_t order_id = 0;
  int64_t instance = 0;
  int64_t first_utc_ns = 0;
  int64_t first_tsc = 0;
};

// One samples row (seq, stage_id, latency_ns, flags) with its context from
// the packed detail (start time, processes and cores; unknown when the
// detail has no entry for `seq`).
SampleRow MakeSampleRow(const RunDictionary& dict, const OrderKeyFields& order,
                        const store::PackedDetail& detail, int64_t seq, int64_t stage_id,
                        int64_t latency_ns, uint32_t flags);

// The order's stamps and spans, by tsc. A stamp's UTC is the order's
// reference stamp's UTC plus its TSC distance from it at the run's tsc_hz.
std::vector<StampRow> MakeStampRows(const RunDictionary& dict, const OrderKeyFields& order,
                                    const store::PackedDetail& detail);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_VIEW_SRC_PACKED_ROWS_H_
