// Plain types the viewer's store seam (reader.h) shares with its
// callers: how a store is opened, which samples a query wants, and a ranked
// order. No store access here: StoreReader is the viewer's only reader.
#ifndef TICKTRACE_VIEW_STORE_H_
#define TICKTRACE_VIEW_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ticktrace::store {

// How a store is opened.
enum class OpenMode {
  // A one-shot query. A WAL-mode store that no writer has open (no -wal file
  // beside it) is opened immutable, so that SQLite does not leave -wal/-shm
  // files behind; otherwise as kLive.
  kSnapshot,
  // Always ordinary read-only mode (SQLite may create -wal/-shm files
  // beside a WAL store that has none); each query sees the latest commit.
  kLive,
};

// Which samples a query returns. Unset members do not filter.
struct SampleFilter {
  std::optional<std::string> stage;
  std::vector<int64_t> process_ids;  // begin or end in this set; empty: any
  std::optional<int64_t> since_utc_ns;  // start_utc_ns >= since
  std::optional<int64_t> until_utc_ns;  // start_utc_ns <= until
};

// An order and the latency that ranked it (StoreReader::FindSlowest).
struct RankedOrder {
  int64_t order_id = 0;
  double latency_ns = 0;
  uint32_t flags = 0;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_VIEW_STORE_H_
