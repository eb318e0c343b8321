// Which store: `--store sqlite:PATH` (the default, `sqlite:ticktrace.db`;
// `--db PATH` is its short form) or `--store clickhouse://HOST:PORT/DATABASE`
// (docs/store.md, "Choosing a store").

#ifndef TICKTRACE_STORE_URI_H_
#define TICKTRACE_STORE_URI_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ticktrace::store {

struct StoreUri {
  enum class Kind { kSqlite, kClickHouse };
  Kind kind = Kind::kSqlite;
  std::string path;  // sqlite
  std::string host;  // clickhouse
  int port = 8123;
  std::string database = "ticktrace";

  // The URI again, for messages ("sqlite:/x/y.db").
  std::string ToString() const;
};

// Parses `--store`. InvalidArgument (one line) for an unknown scheme, an
// empty path, a bad port.
absl::StatusOr<StoreUri> ParseStoreUri(std::string_view text);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_URI_H_
