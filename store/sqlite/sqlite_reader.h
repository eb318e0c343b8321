// The SQLite backend of StoreReader (store_reader.h). Private to the viewer
// library: StoreReader::Open (store_reader.cc) is its only caller.
#ifndef TICKTRACE_VIEW_SRC_SQLITE_STORE_READER_H_
#define TICKTRACE_VIEW_SRC_SQLITE_STORE_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::store::internal {

// Opens the SQLite store at `path` for reading (schema 2; a schema-1 store
// is migrated first, see StoreReader::Open).
absl::StatusOr<std::unique_ptr<StoreReader>> OpenSqliteStoreReader(const std::string& path,
                                                                   OpenMode mode);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_VIEW_SRC_SQLITE_STORE_READER_H_
