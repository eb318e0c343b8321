// Schema 3's order blocks (docs/store.md, "Order blocks"): one
// `order_blocks` row holds up to kOrdersPerBlock orders of one interval. The
// writer encodes them compactly in `orders` (sqlite_block_codec.h); blocks of
// the older encoding hold a JSON array in `orders` and their packed details
// end to end in `detail`, and still read. The views `orders` and
// `stage_latencies` read both through the SQL functions of
// sqlite_block_sql.h. One row per block instead of one row and one index
// entry per order is what makes the writer cheap; this file decodes either
// encoding, and writes the JSON one (the schema-2 migration still does).

#ifndef TICKTRACE_STORE_SQLITE_SQLITE_BLOCKS_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_BLOCKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_block_codec.h"

namespace ticktrace::store {

// Orders in one block at most; an order's key is block_key * kOrdersPerBlock
// + its position in the block.
inline constexpr int64_t kOrdersPerBlock = 256;
// order_ids holds one row per (run, id page, block): the ids of a page are
// order_id >> kIdPageBits, so a block of consecutive ids takes a row or two.
inline constexpr int kIdPageBits = 8;

inline int64_t IdPage(int64_t order_id) {
  return static_cast<int64_t>(static_cast<uint64_t>(order_id) >> kIdPageBits);
}

// One order of a block, as the store holds it.
struct BlockOrder {
  int64_t order_key = 0;
  int64_t order_id = 0;  // ids >= 2^63 as their two's-complement negative
  int64_t instance = 0;
  std::optional<int64_t> parent_order_id;
  int64_t first_utc_ns = 0;
  int64_t first_tsc = 0;
  std::optional<int64_t> total_ns;
  bool complete = false;
  std::string missing;
  uint32_t flags = 0;
  std::vector<SampleCell> cells;  // orders.samples
  std::string detail;             // the packed detail (detail.h, version 1)
};

// Appends the JSON element of one order to a block's `orders` text (the
// caller writes the enclosing brackets and commas). `samples_json` is the
// order's samples array ("[[stage_id,latency_ns,flags],...]"), `block_start`
// the block's start_utc_ns, `detail_offset`/`detail_size` where its packed
// detail lies in the block's BLOB.
void AppendBlockOrderJson(int64_t order_id, int64_t instance,
                          std::optional<int64_t> parent_order_id, int64_t first_utc_ns,
                          int64_t block_start, int64_t first_tsc, std::optional<int64_t> total_ns,
                          bool complete, std::string_view missing, uint32_t flags,
                          std::string_view samples_json, size_t detail_offset, size_t detail_size,
                          std::string* out);

// Decodes a block row (untrusted), either encoding: a compact block
// (sqlite_block_codec.h) in `orders`, or a JSON array in `orders` and the
// packed details in `detail`. InvalidArgument naming the block when the
// bytes are neither.
absl::StatusOr<std::vector<BlockOrder>> ParseBlock(int64_t block_key, int64_t block_start,
                                                   std::string_view orders_json,
                                                   std::string_view detail);

// Only the ids and instances (and first TSCs) of a block's orders: what the
// writer's exactly-once check needs, without the samples.
struct BlockId {
  int64_t order_id = 0;
  int64_t instance = 0;
  int64_t first_tsc = 0;
};
absl::StatusOr<std::vector<BlockId>> ParseBlockIds(int64_t block_key, std::string_view orders);

// The JSON array the older encoding keeps in `orders` (AppendBlockOrderJson
// per order), for a block in either encoding: what the views `orders` and
// `stage_latencies` read (sqlite_block_sql.h). Detail offsets and sizes are
// those of the orders' packed details end to end.
// `first_utc_ns - start_utc_ns` comes out right without the block's start.
absl::StatusOr<std::string> BlockOrdersJson(std::string_view orders);

// The packed details (version 1) of a block's orders, in either encoding,
// by their place in the block.
absl::StatusOr<std::vector<std::string>> BlockDetails(std::string_view orders,
                                                      std::string_view detail);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_BLOCKS_H_
