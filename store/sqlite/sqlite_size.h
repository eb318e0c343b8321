// What a SQLite store takes on disk, and how far its live content may grow
// so that its files stay within a size limit (--retain-detail SIZE, the
// default limit: docs/operations.md#retention-and-disk).
//
// The files. A store in WAL mode is three files: the database, its
// write-ahead log (-wal) and the log's shared-memory index (-shm). A
// rollback journal (-journal) exists only while a transaction runs outside
// WAL mode, which the writer never does, so it is not counted (it would be
// the size of the pages one transaction changes). What counts is what the
// filesystem reserved: st_blocks x 512 of each file, not st_size (a sparse
// -shm reserves less than its size; a preallocated file more).
//
// Why the database file is not its content. SQLite never shrinks the file
// when rows are deleted: their pages go to the freelist, and later inserts
// take pages from the freelist before they extend the file. So the file is
// as large as the most pages its content ever used at once, and a store
// whose detail is retired as fast as it arrives stops growing. The limit is
// therefore held on the live pages (page_count - freelist_count): retire the
// oldest detail while the live pages, plus what one more step can add, would
// not fit beside the WAL and -shm.
//
// What one step can add, measured rather than assumed (SqliteSizeGuard):
//   - the live bytes one write transaction adds (the check runs after every
//     transaction), the largest seen so far;
//   - the WAL: it grows until a checkpoint copies it into the database and a
//     later transaction starts it again from the top, and is then cut back
//     to journal_size_limit. With the writer's settings (checkpoint at 1000
//     pages, journal_size_limit 4 MiB) it peaks at about 4 MiB plus one
//     transaction, unless a reader holds a snapshot open (the viewer's live
//     view) and so stops the checkpoint from finishing; the largest WAL and
//     -shm seen so far are kept free.
//
// Not used: auto_vacuum=INCREMENTAL. It would give pages back to the
// filesystem, but only when set before the tables are created (an existing
// store needs a full VACUUM to switch) and every incremental_vacuum moves
// pages from the end of the file into the holes, rewriting them through the
// WAL; reusing the freelist costs nothing.

#ifndef TICKTRACE_STORE_SQLITE_SQLITE_SIZE_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_SIZE_H_

#include <cstdint>
#include <string>

namespace ticktrace::store {

// Bytes on disk of a SQLite store's files; a file that does not exist is 0.
struct SqliteFileBytes {
  uint64_t db = 0;
  uint64_t wal = 0;
  uint64_t shm = 0;
  uint64_t total() const { return db + wal + shm; }
};

// st_blocks x 512 of `path`, `path`-wal and `path`-shm. Any thread.
SqliteFileBytes MeasureSqliteFiles(const std::string& path);

// The writer's memory of how much room one step of writing needs beside the
// live pages (see above). Writer thread only.
class SqliteSizeGuard {
 public:
  // A size check after a transaction: the live bytes now, and the files.
  // The growth since the last check (AfterCheck) and the WAL and -shm on
  // disk are remembered when they are the largest seen.
  void Observe(uint64_t live_bytes, const SqliteFileBytes& files);
  // After the check's retirement: the live bytes (the next check measures
  // the growth from there) and the files (retirement's own transactions
  // grow the WAL too).
  void AfterCheck(uint64_t live_bytes, const SqliteFileBytes& files);
  // The live bytes the store may hold so that its files stay within
  // `limit_bytes` after one more step (0 when the room needed is the whole
  // limit or more).
  uint64_t LiveTarget(uint64_t limit_bytes) const;
  // The room kept for one step: the largest growth of one transaction plus
  // the largest WAL and -shm seen.
  uint64_t headroom_bytes() const { return max_step_growth_ + max_side_files_; }

 private:
  uint64_t live_after_check_ = 0;  // 0: no check yet
  uint64_t max_step_growth_ = 0;
  uint64_t max_side_files_ = 0;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_SIZE_H_
