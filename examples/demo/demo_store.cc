#include "demo_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ticktrace/store/open.h"
#include "ticktrace/store/reader.h"

// The demo reads the store through the viewer's StoreReader (the store seam,
// docs/store.md): no SQL of its own beyond recognising a file.

namespace ticktrace::examples {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

// A live collector may be writing: read what is committed.
absl::StatusOr<std::unique_ptr<store::StoreReader>> OpenStore(const store::StoreUri& uri) {
  return store::OpenReader(uri, store::OpenMode::kLive);
}

}  // namespace

StoreFileKind ClassifyStoreFile(const std::string& path, std::string* why) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return StoreFileKind::kAbsent;
  if (!S_ISREG(st.st_mode)) {
    *why = "it is not a regular file";
    return StoreFileKind::kOther;
  }
  char header[16] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(header, sizeof(header)) || std::memcmp(header, "SQLite format 3", 16) != 0) {
    *why = "it is not an SQLite file";
    return StoreFileKind::kOther;
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    *why = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return StoreFileKind::kOther;
  }
  sqlite3_busy_timeout(db.get(), 5000);
  sqlite3_stmt* s = nullptr;
  bool ours = false;
  if (sqlite3_prepare_v2(db.get(), "SELECT value FROM meta WHERE key = 'app'", -1, &s, nullptr) ==
          SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(s, 0);
    ours = t != nullptr && std::strcmp(reinterpret_cast<const char*>(t), "ticktrace") == 0;
  }
  sqlite3_finalize(s);
  if (!ours) {
    *why = "it is an SQLite database but not a ticktrace store";
    return StoreFileKind::kOther;
  }
  return StoreFileKind::kTicktraceStore;
}

absl::StatusOr<std::optional<store::RunRow>> FindRun(const store::StoreUri& uri,
                                                     const std::string& session) {
  struct stat st;
  // A file store that is not there yet (a store on a server is no file).
  if (const std::optional<std::string> file = uri.local_file();
      file.has_value() && stat(file->c_str(), &st) != 0) {
    return std::optional<store::RunRow>();
  }
  // While the collector creates the store, opening it may fail: not yet.
  absl::StatusOr<std::unique_ptr<store::StoreReader>> store = OpenStore(uri);
  if (!store.ok()) return std::optional<store::RunRow>();
  absl::StatusOr<std::vector<store::RunRow>> runs = (*store)->ListRuns();
  if (!runs.ok()) return std::optional<store::RunRow>();
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    if (it->session == session) return std::optional<store::RunRow>(*it);
  }
  return std::optional<store::RunRow>();
}

absl::StatusOr<DemoRunFigures> ReadRunSummary(const store::StoreUri& uri, int64_t run_id) {
  absl::StatusOr<std::unique_ptr<store::StoreReader>> store = OpenStore(uri);
  if (!store.ok()) return store.status();
  DemoRunFigures summary;
  absl::StatusOr<store::RunRow> run = (*store)->GetRun(run_id);
  if (!run.ok()) return run.status();
  summary.run = *std::move(run);
  absl::StatusOr<std::vector<store::StageStatsRow>> stages = (*store)->StageStats(run_id);
  if (!stages.ok()) return stages.status();
  summary.stages = *std::move(stages);
  absl::StatusOr<std::map<std::string, int64_t>> counters = (*store)->Counters(run_id);
  if (!counters.ok()) return counters.status();
  summary.counters = *std::move(counters);
  return summary;
}

absl::StatusOr<uint64_t> SlowestOrder(const store::StoreUri& uri, int64_t run_id) {
  absl::StatusOr<std::unique_ptr<store::StoreReader>> store = OpenStore(uri);
  if (!store.ok()) return store.status();
  absl::StatusOr<std::vector<store::RankedOrder>> slowest =
      (*store)->FindSlowest(run_id, "total", 1);
  if (!slowest.ok()) return slowest.status();
  if (slowest->empty()) return uint64_t{0};
  return static_cast<uint64_t>(slowest->front().order_id);
}

}  // namespace ticktrace::examples
