// Which store: `--store sqlite:PATH` (the default, `sqlite:ticktrace.db`;
// `--db PATH` is its short form) or `--store clickhouse://HOST:PORT/DATABASE`
// (docs/store.md, "Choosing a store").

#ifndef TICKTRACE_STORE_URI_H_
#define TICKTRACE_STORE_URI_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ticktrace::store {

// A parsed `--store`: travels as this value, never as text. Only store/
// looks at `kind` (open.cc picks the backend by it); everyone else asks the
// accessors, so no file outside store/ tests a scheme.
struct StoreUri {
  enum class Kind { kSqlite, kClickHouse };
  Kind kind = Kind::kSqlite;
  std::string path;  // sqlite
  std::string host;  // clickhouse
  int port = 8123;
  std::string database = "ticktrace";

  // The SQLite store in the file `path` (the `--db PATH` form).
  static StoreUri LocalFile(std::string path);

  // The file that is the store, for a store kept in one local file
  // (SQLite); nullopt for a store on a server (ClickHouse).
  std::optional<std::string> local_file() const;

  // The URI again, for messages and for passing it on as `--store`
  // ("sqlite:/x/y.db"); ParseStoreUri(ToString()) gives this value back.
  std::string ToString() const;
};

// Parses `--store`. InvalidArgument (one line) for an unknown scheme, an
// empty path, a bad port.
absl::StatusOr<StoreUri> ParseStoreUri(std::string_view text);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_URI_H_
