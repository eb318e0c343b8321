#include "store/sqlite/sqlite_block_sql.h"

#include <sqlite3.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_blocks.h"

namespace ticktrace::store {
namespace {

#include "store/sqlite/sqlite_block_sql_functions.inc"

int AutoRegister(sqlite3* db, const char**, const sqlite3_api_routines*) { return Register(db); }

// Programs that open stores with their own connections (the tests, the
// benches) read the views too.
[[maybe_unused]] const bool kRegisteredAtStart = [] {
  RegisterBlockSqlFunctionsEverywhere();
  return true;
}();

}  // namespace

absl::Status RegisterBlockSqlFunctions(sqlite3* db) {
  if (Register(db) != SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat("cannot register the order block functions: ", sqlite3_errmsg(db)));
  }
  return absl::OkStatus();
}

void RegisterBlockSqlFunctionsEverywhere() {
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_auto_extension(reinterpret_cast<void (*)()>(&AutoRegister));
  });
}

}  // namespace ticktrace::store
