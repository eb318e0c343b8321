// libticktrace_sqlite: a loadable SQLite extension with the two SQL functions
// the views `orders` and `stage_latencies` read order blocks through
// (sqlite_block_sql.h), for connections this project did not open — the
// sqlite3 shell (`.load /path/libticktrace_sqlite`), Python's sqlite3, any
// program linked with plain libsqlite3 (docs/store.md, "Reading the store
// with plain SQLite").
//
// SQLite's rules for such a module (https://www.sqlite.org/loadext.html):
// it includes <sqlite3ext.h> instead of <sqlite3.h>, so that every sqlite3_*
// call below is a call through the routine table the loading connection hands
// to the entry point (SQLITE_EXTENSION_INIT2), never a link against a second
// libsqlite3; and the entry point is named after the file,
// sqlite3_ticktracesqlite_init for libticktrace_sqlite.so, so that `.load`
// finds it without being told.

#include <sqlite3ext.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/sqlite/sqlite_blocks.h"

SQLITE_EXTENSION_INIT1

namespace ticktrace::store {
namespace {

#include "store/sqlite/sqlite_block_sql_functions.inc"

}  // namespace
}  // namespace ticktrace::store

extern "C" __attribute__((visibility("default"))) int sqlite3_ticktracesqlite_init(
    sqlite3* db, char** error_message, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  const int rc = ticktrace::store::Register(db);
  if (rc != SQLITE_OK && error_message != nullptr) {
    *error_message = sqlite3_mprintf("ticktrace: cannot register the order block functions: %s",
                                     sqlite3_errmsg(db));
  }
  return rc;
}
