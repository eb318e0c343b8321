// Opens the store a `--store` URI names (docs/store.md, "Choosing a store"):
// sqlite:PATH (or a plain path) -> SqliteWriter, clickhouse://HOST:PORT/DB
// -> ClickHouseWriter. The collector's only way to a store::Writer; the
// caller never names a backend.

#ifndef TICKTRACE_STORE_OPEN_WRITER_H_
#define TICKTRACE_STORE_OPEN_WRITER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::store {

struct OpenWriterOptions {
  // SQLite: new files 0640 instead of 0600.
  bool group_readable = false;
  // SQLite: one line when an old store was migrated (with its backup path).
  std::function<void(const std::string&)> on_migration;
  // ClickHouse: one line when the server stops answering / answers again
  // (default: stderr). User and password come from the environment
  // (TICKTRACE_CLICKHOUSE_USER / TICKTRACE_CLICKHOUSE_PASSWORD).
  std::function<void(const std::string&)> on_notice;
  // ClickHouse: how long opening waits for a server that does not answer.
  int64_t open_timeout_ms = 15000;
};

// `uri` as --store takes it. InvalidArgument for a bad URI; otherwise what
// the backend's open says (one line naming the store).
absl::StatusOr<std::unique_ptr<Writer>> OpenWriter(const std::string& uri,
                                                   const OpenWriterOptions& options = {});

// Where the collector keeps a store's local files (journal `<it>.ttjournal`,
// checkpoint `<it>.ttcheckpoint`): a SQLite store's own path; for a
// ClickHouse store (no local file) "ticktrace-SESSION@HOST_PORT_DB" in the
// current directory, like the default sqlite store `ticktrace.db`: one per
// session and store, so several collectors on one host (other sessions, or
// other addresses of the server) never share a journal. `store` is the
// collector's db_path: a file, or a clickhouse:// URI.
std::string LocalStatePath(const std::string& store, const std::string& session);

// Asks a writer that may be waiting for its server to give up promptly
// (ClickHouse: Write() returns Unavailable; the batch stays in the journal).
// No-op for SQLite. Any thread.
void RequestWriterStop(Writer* writer);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_OPEN_WRITER_H_
