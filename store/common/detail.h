// Order detail as it crosses the store seam, and its packed form.
//
// Every backend receives finished orders as OrderDetail (plain values, ns and
// TSC, no backend types). The SQLite backend keeps one `orders` row per order
// instance whose `detail` BLOB packs the stamps and the per-sample context
// (docs/store.md, "Packed detail"), and one narrow `samples` row per stage
// sample. PackDetail/UnpackDetail are that BLOB's only encoder and decoder.

#ifndef TICKTRACE_STORE_DETAIL_H_
#define TICKTRACE_STORE_DETAIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ticktrace::store {

struct StampDetail {
  std::string tag;
  bool is_span = false;
  uint32_t process_id = 0;
  uint32_t tid = 0;
  int32_t cpu = -1, cpu_end = -1;  // -1: unknown (cpu_end: spans only)
  uint64_t tsc = 0;
  int64_t utc_ns = 0;
  double duration_ns = 0;  // spans only; negative when the span ran backwards
  uint32_t flags = 0;      // ticktrace/store/flags.h
};

struct SampleDetail {
  std::string stage;  // ticktrace/store/names.h naming
  int64_t start_utc_ns = 0;
  double latency_ns = 0;
  int32_t process_begin = -1, process_end = -1;  // -1: unknown
  int32_t cpu_begin = -1, cpu_end = -1;
  uint32_t flags = 0;
};

struct OrderDetail {
  uint64_t order_id = 0;
  uint32_t instance = 0;  // 0 for the first use of an id in a run, then 1, 2, ...
  std::optional<uint64_t> parent_order_id;
  int64_t first_utc_ns = 0;
  uint64_t first_tsc = 0;       // the earliest TSC of its own stamps (0: none)
  int64_t first_tsc_utc_ns = 0;  // the UTC of that stamp
  std::optional<double> total_ns;
  bool complete = false;
  std::string missing;  // comma-separated stage tags; empty when complete
  std::vector<SampleDetail> samples;
  std::vector<StampDetail> stamps;

  // The OR of its samples' and stamps' flags.
  uint32_t flags() const;
  // Sets first_tsc and first_tsc_utc_ns from the earliest of `stamps` (the
  // first of equals); leaves them when there is none.
  void SetFirstTscFromStamps();
};

// What the packed BLOB holds; strings are ids into the run's `names` table.
struct PackedStamp {
  uint32_t name_id = 0;
  bool is_span = false;
  uint32_t process_id = 0;
  uint32_t tid = 0;
  int32_t cpu = -1, cpu_end = -1;
  int64_t tsc_delta = 0;     // tsc - orders.first_tsc
  int64_t duration_ns = 0;   // spans, rounded to the ns
  uint32_t flags = 0;
};
struct PackedSample {
  int64_t start_delta_ns = 0;  // start_utc_ns - orders.first_utc_ns
  int32_t process_begin = -1, process_end = -1;
  int32_t cpu_begin = -1, cpu_end = -1;
};
struct PackedDetail {
  // The UTC of the stamp at orders.first_tsc, minus orders.first_utc_ns (a
  // child order starts at its parent's stamp, which is not among its own).
  int64_t first_tsc_utc_delta_ns = 0;
  std::vector<PackedStamp> stamps;
  std::vector<PackedSample> samples;  // in samples.seq order
};

// Appends the encoding of `detail` to `out`.
void PackDetail(const PackedDetail& detail, std::string* out);

// A latency or duration as the store keeps it: whole ns, rounded; 0 for a
// value that is not finite; clamped to what an int64 holds.
int64_t RoundNs(double ns);

// Packs `order`'s stamps and samples (what the packed BLOB holds) and
// appends the encoding to `out`, with the stamps' name ids already resolved
// by the backend's names dictionary, one per stamp in order (REQUIRES:
// name_ids.size() == order.stamps.size()): no intermediate PackedDetail per
// order.
void PackOrderDetail(const OrderDetail& order, absl::Span<const uint32_t> name_ids,
                     std::string* out);
// The PackedDetail of `order` (what PackOrderDetail encodes), name ids as
// there.
PackedDetail MakePackedDetail(const OrderDetail& order, absl::Span<const uint32_t> name_ids);
// Decodes untrusted bytes: InvalidArgument when they are not a packed detail.
absl::StatusOr<PackedDetail> UnpackDetail(std::string_view bytes);

// Signed values as unsigned varints: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ...
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_DETAIL_H_
