#include "store/sqlite/sqlite_size.h"

#include <sys/stat.h>

#include <algorithm>

namespace ticktrace::store {
namespace {

uint64_t OnDisk(const std::string& file) {
  struct stat st{};
  if (::stat(file.c_str(), &st) != 0) return 0;
  // st_blocks counts 512-byte units whatever the filesystem's block size.
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

SqliteFileBytes MeasureSqliteFiles(const std::string& path) {
  return SqliteFileBytes{.db = OnDisk(path), .wal = OnDisk(path + "-wal"),
                         .shm = OnDisk(path + "-shm")};
}

void SqliteSizeGuard::Observe(uint64_t live_bytes, const SqliteFileBytes& files) {
  if (live_after_check_ > 0 && live_bytes > live_after_check_) {
    max_step_growth_ = std::max(max_step_growth_, live_bytes - live_after_check_);
  }
  max_side_files_ = std::max(max_side_files_, files.wal + files.shm);
}

void SqliteSizeGuard::AfterCheck(uint64_t live_bytes, const SqliteFileBytes& files) {
  live_after_check_ = live_bytes;
  max_side_files_ = std::max(max_side_files_, files.wal + files.shm);
}

uint64_t SqliteSizeGuard::LiveTarget(uint64_t limit_bytes) const {
  const uint64_t room = headroom_bytes();
  return limit_bytes > room ? limit_bytes - room : 0;
}

}  // namespace ticktrace::store
