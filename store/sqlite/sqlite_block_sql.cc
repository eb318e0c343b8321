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

std::string_view ValueBytes(sqlite3_value* v) {
  const void* p = sqlite3_value_blob(v);
  const int n = sqlite3_value_bytes(v);
  return p == nullptr ? std::string_view() : std::string_view(static_cast<const char*>(p), n);
}

void BlockOrdersFn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
    sqlite3_result_value(ctx, argv[0]);  // the older encoding's JSON text (or NULL)
    return;
  }
  absl::StatusOr<std::string> json = BlockOrdersJson(ValueBytes(argv[0]));
  if (!json.ok()) {
    const std::string message(json.status().message());
    sqlite3_result_error(ctx, message.c_str(), -1);
    return;
  }
  sqlite3_result_text64(ctx, json->data(), json->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

// The last block ticktrace_order_detail decoded on this connection: the view
// asks for each of its orders in turn.
struct DetailCache {
  std::string orders, detail;
  std::vector<std::string> details;
  bool valid = false;
};

void OrderDetailFn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* cache = static_cast<DetailCache*>(sqlite3_user_data(ctx));
  const std::string_view orders = ValueBytes(argv[0]), detail = ValueBytes(argv[1]);
  const sqlite3_int64 position = sqlite3_value_int64(argv[2]);
  if (!cache->valid || cache->orders != orders || cache->detail != detail) {
    cache->valid = false;
    absl::StatusOr<std::vector<std::string>> details = BlockDetails(orders, detail);
    if (!details.ok()) {
      const std::string message(details.status().message());
      sqlite3_result_error(ctx, message.c_str(), -1);
      return;
    }
    cache->orders.assign(orders);
    cache->detail.assign(detail);
    cache->details = *std::move(details);
    cache->valid = true;
  }
  if (position < 0 || static_cast<size_t>(position) >= cache->details.size()) {
    sqlite3_result_null(ctx);
    return;
  }
  const std::string& d = cache->details[static_cast<size_t>(position)];
  sqlite3_result_blob64(ctx, d.data(), d.size(), SQLITE_TRANSIENT);
}

constexpr int kFlags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;

int Register(sqlite3* db) {
  int rc = sqlite3_create_function_v2(db, "ticktrace_block_orders", 1, kFlags, nullptr,
                                      BlockOrdersFn, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_create_function_v2(
      db, "ticktrace_order_detail", 3, kFlags, new DetailCache, OrderDetailFn, nullptr, nullptr,
      [](void* p) { delete static_cast<DetailCache*>(p); });
}

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
