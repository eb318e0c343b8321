// The one place that turns a parsed `--store` into a backend: a new backend
// is one more entry in BackendFor() (docs/store.md, "Adding a backend").

#include "ticktrace/store/open.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "store/clickhouse/clickhouse_reader.h"
#include "store/clickhouse/clickhouse_writer.h"
#include "store/clickhouse/http_client.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_writer.h"

namespace ticktrace::store {
namespace {

// What open.cc needs of one backend.
struct Backend {
  absl::StatusOr<std::unique_ptr<Writer>> (*open_writer)(const StoreUri&, const OpenWriterOptions&);
  absl::StatusOr<std::unique_ptr<StoreReader>> (*open_reader)(const StoreUri&, OpenMode);
  absl::Status (*check_existing)(const StoreUri&, bool group_may_write);
};

absl::StatusOr<std::unique_ptr<Writer>> OpenSqliteWriter(const StoreUri& uri,
                                                         const OpenWriterOptions& options) {
  SqliteOpenOptions o;
  o.group_readable = options.group_readable;
  o.group_may_write = options.group_may_write;
  o.on_migration = options.on_migration;
  absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(uri.path, o);
  if (!w.ok()) return w.status();
  return std::unique_ptr<Writer>(std::move(*w));
}

absl::StatusOr<std::unique_ptr<Writer>> OpenClickHouseWriter(const StoreUri& uri,
                                                             const OpenWriterOptions& options) {
  ClickHouseOptions o;
  o.http = HttpClientOptions::FromEnvironment(uri.host, uri.port);
  o.database = uri.database;
  o.on_notice = options.on_notice;
  o.open_timeout_ms = options.open_timeout_ms;
  absl::StatusOr<std::unique_ptr<ClickHouseWriter>> w = ClickHouseWriter::Open(std::move(o));
  if (!w.ok()) return w.status();
  return std::unique_ptr<Writer>(std::move(*w));
}

const Backend& BackendFor(StoreUri::Kind kind) {
  static constexpr Backend kSqlite{
      OpenSqliteWriter,
      [](const StoreUri& uri, OpenMode mode) { return internal::OpenSqliteStoreReader(uri.path, mode); },
      [](const StoreUri& uri, bool group_may_write) {
        return SqliteWriter::CheckExisting(uri.path, group_may_write);
      },
  };
  static constexpr Backend kClickHouse{
      OpenClickHouseWriter,
      [](const StoreUri& uri, OpenMode) { return internal::OpenClickHouseStoreReader(uri); },
      [](const StoreUri&, bool) { return absl::OkStatus(); },
  };
  switch (kind) {
    case StoreUri::Kind::kSqlite:
      return kSqlite;
    case StoreUri::Kind::kClickHouse:
      return kClickHouse;
  }
  return kSqlite;  // not reached: every kind has a case
}

}  // namespace

absl::StatusOr<std::unique_ptr<Writer>> OpenWriter(const StoreUri& uri,
                                                   const OpenWriterOptions& options) {
  return BackendFor(uri.kind).open_writer(uri, options);
}

absl::StatusOr<std::unique_ptr<StoreReader>> OpenReader(const StoreUri& uri, OpenMode mode) {
  return BackendFor(uri.kind).open_reader(uri, mode);
}

absl::StatusOr<std::unique_ptr<StoreReader>> StoreReader::Open(std::string_view uri_or_path,
                                                               OpenMode mode) {
  absl::StatusOr<StoreUri> uri = ParseStoreUri(uri_or_path);
  if (!uri.ok()) return uri.status();
  return OpenReader(*uri, mode);
}

absl::Status CheckExistingStore(const StoreUri& uri, bool group_may_write) {
  return BackendFor(uri.kind).check_existing(uri, group_may_write);
}

std::string LocalStatePath(const StoreUri& uri, const std::string& session) {
  if (std::optional<std::string> file = uri.local_file(); file.has_value()) return *file;
  constexpr absl::string_view kPrefix = "ticktrace-";
  std::string name = absl::StrCat(kPrefix, session, "@", uri.host, "_", uri.port, "_", uri.database);
  // One path component: anything but [A-Za-z0-9._@-] becomes '_'.
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '@' || c == '-';
    if (!ok) name[i] = '_';
  }
  return name;
}

}  // namespace ticktrace::store
