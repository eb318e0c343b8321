// The compact encoding of an order block (docs/store.md, "Compact blocks"):
// what the writer puts in `order_blocks.orders` as a BLOB since the first
// byte of a block became its format version. The older blocks, a JSON array
// in `orders` and the packed details in `detail` (sqlite_blocks.cc), stay
// readable; ParseBlock and ParseBlockIds (sqlite_blocks.h) tell them apart.
//
// Within a block, every value is a varint and most are deltas: an order's id
// from the nearest of the last few ids (orders of a few threads interleave),
// its first stamp's UTC and TSC from the previous order's, a stamp's TSC from
// the previous stamp of its order, a sample's start from where the previous
// sample ended, the total from the last sample's latency. What repeats from
// order to order (a stamp's tag, process, thread and core; a sample's stage,
// processes and cores) is written once per block in a table and referred to
// by its index.

#ifndef TICKTRACE_STORE_SQLITE_SQLITE_BLOCK_CODEC_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_BLOCK_CODEC_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/common/detail.h"
#include "store/sqlite/sqlite_expand.h"

namespace ticktrace::store {

// The first byte of a compact block. A JSON block starts with '['.
inline constexpr uint8_t kCompactBlockVersion = 2;

// One order of a block, every field as the store keeps it.
struct CompactOrder {
  int64_t order_id = 0;  // ids >= 2^63 as their two's-complement negative
  int64_t instance = 0;
  std::optional<int64_t> parent_order_id;
  int64_t first_utc_ns = 0;
  int64_t first_tsc = 0;
  std::optional<int64_t> total_ns;
  bool complete = false;
  std::string missing;
  std::vector<SampleCell> cells;  // orders.samples, in seq order
  PackedDetail detail;            // its samples: one per cell (REQUIRES)

  // The OR of its cells' and stamps' flags (orders.flags).
  uint32_t flags() const;
};

// True when `orders` (an order_blocks.orders value) is a compact block.
inline bool IsCompactBlock(std::string_view orders) {
  return !orders.empty() && static_cast<uint8_t>(orders[0]) == kCompactBlockVersion;
}

// A block's encoding built one order at a time, so that the writer can end
// a block by its size (kCompactBlockBytes) as well as by its count.
class CompactBlockEncoder {
 public:
  explicit CompactBlockEncoder(int64_t block_start);
  CompactBlockEncoder(const CompactBlockEncoder&) = delete;
  CompactBlockEncoder& operator=(const CompactBlockEncoder&) = delete;
  ~CompactBlockEncoder();

  // REQUIRES: fewer than kOrdersPerBlock orders so far; `o.detail.samples`
  // one per cell.
  void Add(const CompactOrder& o);
  int64_t count() const;
  // Starts again: no orders, a block starting at `block_start`.
  void Reset(int64_t block_start);
  // The bytes Finish() appends.
  size_t bytes() const;
  // Appends the block to `out`.
  void Finish(std::string* out) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The size at which the writer ends a block: a row of up to about 4 000
// bytes lies whole in one page of 4 096 (SQLite's default page size), a
// page to itself. A longer row keeps part of itself in a b-tree page and the
// rest in overflow pages, and the parts of rows of 5-7 kB packed their
// b-tree pages a row or two a page: a fifth of the file was unused at
// 100 000 records/s (docs/store.md, "Compact blocks").
inline constexpr size_t kCompactBlockBytes = 3900;

// Appends the compact block of `orders` (at most kOrdersPerBlock, in the
// order they are stored; `block_start` its interval's start_utc_ns) to `out`.
void EncodeCompactBlock(int64_t block_start, const std::vector<CompactOrder>& orders,
                        std::string* out);

// Decodes untrusted bytes: InvalidArgument naming the block when they are
// not what EncodeCompactBlock writes.
absl::StatusOr<std::vector<CompactOrder>> DecodeCompactBlock(int64_t block_key,
                                                             int64_t block_start,
                                                             std::string_view bytes);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_BLOCK_CODEC_H_
