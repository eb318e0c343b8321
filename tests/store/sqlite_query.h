// One integer from an SQLite store, read the way a user's plain SQL reads it:
// on a fresh read-only connection, beside whatever the writer holds open.
#ifndef TICKTRACE_TESTS_STORE_SQLITE_QUERY_H_
#define TICKTRACE_TESTS_STORE_SQLITE_QUERY_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace ticktrace::store {

// The first column of the first row of `sql`; -1 (and a test failure) when
// it cannot be read.
inline int64_t QueryInt(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    v = sqlite3_column_int64(s, 0);
  } else {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

}  // namespace ticktrace::store

#endif  // TICKTRACE_TESTS_STORE_SQLITE_QUERY_H_
