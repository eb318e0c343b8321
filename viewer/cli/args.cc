#include "viewer/cli/args.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::view {

FlagSpec StoreFlag() {
  return {"store", "URI",
          "the store: sqlite:PATH (an SQLite file written by ticktrace-collector) or a plain "
          "path; or clickhouse://HOST:PORT/DB (a ClickHouse server: docs/clickhouse.md)"};
}

FlagSpec DbFlag() { return {"db", "PATH", "the SQLite store at PATH (short for --store sqlite:PATH)"}; }

absl::StatusOr<store::StoreUri> StoreUriFromArgs(const ParsedArgs& args,
                                                 absl::string_view store_flag,
                                                 absl::string_view db_flag) {
  const std::optional<std::string> uri = args.Value(store_flag);
  const std::optional<std::string> db = args.Value(db_flag);
  if (uri.has_value() && db.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", db_flag, " and --", store_flag, " both name a store; give one"));
  }
  if (!uri.has_value() && !db.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("needs --", db_flag, " PATH or --", store_flag, " URI"));
  }
  if (db.has_value()) {
    if (db->empty()) return absl::InvalidArgumentError(absl::StrCat("--", db_flag, ": empty path"));
    return store::StoreUri::LocalFile(*db);
  }
  return store::ParseStoreUri(*uri);
}

std::optional<int64_t> ParseOrderId(absl::string_view text) {
  int64_t signed_value = 0;
  if (absl::SimpleAtoi(text, &signed_value)) return signed_value;
  uint64_t unsigned_value = 0;
  if (!text.empty() && text[0] != '-' && text[0] != '+' &&
      absl::SimpleAtoi(text, &unsigned_value)) {
    return static_cast<int64_t>(unsigned_value);
  }
  return std::nullopt;
}

}  // namespace ticktrace::view
