// The store seam's one door: a parsed `--store` (uri.h) in, a backend out.
// open.cc is the only file that picks a backend by the URI's kind
// (docs/store.md, "Adding a backend"); callers never name one, and ask the
// Writer or the StoreUri for anything backend-specific.

#ifndef TICKTRACE_STORE_OPEN_H_
#define TICKTRACE_STORE_OPEN_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/store/reader.h"
#include "ticktrace/store/reader_options.h"
#include "ticktrace/store/uri.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::store {

struct OpenWriterOptions {
  // SQLite: new files 0640 instead of 0600.
  bool group_readable = false;
  // SQLite: accept an existing store that its group may write (others never).
  bool group_may_write = false;
  // SQLite: one line when an old store was migrated (with its backup path).
  std::function<void(const std::string&)> on_migration;
  // ClickHouse: one line when the server stops answering / answers again
  // (default: stderr). User and password come from the environment
  // (TICKTRACE_CLICKHOUSE_USER / TICKTRACE_CLICKHOUSE_PASSWORD).
  std::function<void(const std::string&)> on_notice;
  // ClickHouse: how long opening waits for a server that does not answer.
  int64_t open_timeout_ms = 15000;
};

// Opens (creating when absent) the store `uri` names, for the collector.
// Errors are what the backend's open says (one line naming the store).
absl::StatusOr<std::unique_ptr<Writer>> OpenWriter(const StoreUri& uri,
                                                   const OpenWriterOptions& options = {});

// Opens the store `uri` names for reading (StoreReader::Open says what it
// does and how it fails).
absl::StatusOr<std::unique_ptr<StoreReader>> OpenReader(const StoreUri& uri,
                                                        OpenMode mode = OpenMode::kSnapshot);

// Checks, without creating or changing anything, that the collector could
// write the store `uri` names: OK, or NotFound when there is nothing yet
// (it will be created); else why not (one line). A store on a server is
// checked when it is opened, so this is OK for it. `group_may_write` as in
// OpenWriterOptions.
absl::Status CheckExistingStore(const StoreUri& uri, bool group_may_write = false);

// Where the collector keeps a store's local files (journal `<it>.ttjournal`,
// checkpoint `<it>.ttcheckpoint`): a local file store's own path; for a
// store on a server "ticktrace-SESSION@HOST_PORT_DB" in the current
// directory, like the default sqlite store `ticktrace.db`: one per session
// and store, so several collectors on one host (other sessions, or other
// addresses of the server) never share a journal.
std::string LocalStatePath(const StoreUri& uri, const std::string& session);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_OPEN_H_
