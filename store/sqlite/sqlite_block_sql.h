// The SQL functions through which the views `orders` and `stage_latencies`
// read order blocks of either encoding (sqlite_blocks.h):
//   ticktrace_block_orders(orders)            the block's orders as the JSON
//       array of the older encoding (the text itself for such a block);
//   ticktrace_order_detail(orders, detail, i) the packed detail (version 1)
//       of the block's i-th order.
// A connection without them cannot read the views (plain sqlite3 reports "no
// such function"); every connection of this library has them, and so has
// every connection a program linked with it opens (sqlite3_auto_extension).
// Other programs load them from libticktrace_sqlite (sqlite_extension.cc),
// built from the same bodies (sqlite_block_sql_functions.inc).

#ifndef TICKTRACE_STORE_SQLITE_SQLITE_BLOCK_SQL_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_BLOCK_SQL_H_

#include "absl/status/status.h"

struct sqlite3;

namespace ticktrace::store {

// Registers the functions on `db`.
absl::Status RegisterBlockSqlFunctions(sqlite3* db);

// Registers them on every connection this process opens from now on; once,
// however often it is called.
void RegisterBlockSqlFunctionsEverywhere();

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_BLOCK_SQL_H_
