// StoreReader::Open: the one place that turns a --store URI into a backend.

#include "ticktrace/store/reader.h"

#include "ticktrace/store/uri.h"
#include "store/clickhouse/clickhouse_reader.h"
#include "store/sqlite/sqlite_reader.h"

namespace ticktrace::store {

absl::StatusOr<std::unique_ptr<StoreReader>> StoreReader::Open(std::string_view uri_or_path,
                                                               OpenMode mode) {
  absl::StatusOr<store::StoreUri> uri = store::ParseStoreUri(uri_or_path);
  if (!uri.ok()) return uri.status();
  switch (uri->kind) {
    case store::StoreUri::Kind::kSqlite:
      return internal::OpenSqliteStoreReader(uri->path, mode);
    case store::StoreUri::Kind::kClickHouse:
      return internal::OpenClickHouseStoreReader(*uri);
  }
  return absl::InternalError("unknown kind of store");
}

}  // namespace ticktrace::store
