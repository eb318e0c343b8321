#include "ticktrace/store/open.h"

#include "store/clickhouse/clickhouse_writer.h"
#include "store/clickhouse/http_client.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::store {

absl::StatusOr<std::unique_ptr<Writer>> OpenWriter(const std::string& uri_text,
                                                   const OpenWriterOptions& options) {
  absl::StatusOr<StoreUri> uri = ParseStoreUri(uri_text);
  if (!uri.ok()) return uri.status();
  if (uri->kind == StoreUri::Kind::kSqlite) {
    SqliteOpenOptions o;
    o.group_readable = options.group_readable;
    o.on_migration = options.on_migration;
    absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(uri->path, o);
    if (!w.ok()) return w.status();
    return std::unique_ptr<Writer>(std::move(*w));
  }
  ClickHouseOptions o;
  o.http = HttpClientOptions::FromEnvironment(uri->host, uri->port);
  o.database = uri->database;
  o.on_notice = options.on_notice;
  o.open_timeout_ms = options.open_timeout_ms;
  absl::StatusOr<std::unique_ptr<ClickHouseWriter>> w = ClickHouseWriter::Open(std::move(o));
  if (!w.ok()) return w.status();
  return std::unique_ptr<Writer>(std::move(*w));
}

std::string LocalStatePath(const std::string& store, const std::string& session) {
  if (store.rfind("clickhouse://", 0) != 0) return store;
  absl::StatusOr<StoreUri> uri = ParseStoreUri(store);
  std::string name = "ticktrace-" + session + "@";
  if (uri.ok()) {
    name += uri->host + "_" + std::to_string(uri->port) + "_" + uri->database;
  } else {
    name += store.substr(13);
  }
  // One path component: anything but [A-Za-z0-9._@-] becomes '_'.
  for (size_t i = std::string("ticktrace-").size(); i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '@' || c == '-';
    if (!ok) name[i] = '_';
  }
  return name;
}

void RequestWriterStop(Writer* writer) {
  if (auto* ch = dynamic_cast<ClickHouseWriter*>(writer); ch != nullptr) ch->RequestStop();
}

}  // namespace ticktrace::store
