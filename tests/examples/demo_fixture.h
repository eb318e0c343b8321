// The fixture shared by the demo tests: a temp dir, a fresh session and store,
// a way to run ticktrace-demo, and the "nothing left behind" check. Whatever
// the test did, its destructors kill what still runs in the session and
// remove the session's /dev/shm entries and the temp dir.

#ifndef TICKTRACE_TESTS_EXAMPLES_DEMO_FIXTURE_H_
#define TICKTRACE_TESTS_EXAMPLES_DEMO_FIXTURE_H_

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "demo_runner.h"
#include "example_test_util.h"
#include "gtest/gtest.h"

namespace ticktrace::examples::testing {

// Runs one SQL query returning (text, integer) rows.
inline std::map<std::string, int64_t> QueryPairs(const std::string& db_path, const std::string& sql) {
  std::map<std::string, int64_t> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sqlite3_errmsg(db) << " in " << sql;
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* key = sqlite3_column_text(stmt, 0);
      out[key != nullptr ? reinterpret_cast<const char*>(key) : ""] = sqlite3_column_int64(stmt, 1);
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

class DemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    ASSERT_FALSE(dir_.empty());
    SetSession(absl::StrCat("demo-test-", getpid(), "-", ++counter_));
    db_ = dir_ + "/demo.db";
  }

  // The session the test's programs use; cleaned up at the end.
  void SetSession(const std::string& session) {
    session_ = session;
    cleanup_.set_session(session);
  }

  bool NeedCollector() const { return HaveProgram("ticktrace-collector"); }

  std::vector<std::string> DemoArgs(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"--session", session_, "--db", db_, "--bin-dir",
                                     testing::BinDir()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Nothing of the session may outlive the demo: no /dev/shm entry, no process.
  void ExpectNothingLeftBehind() const {
    EXPECT_TRUE(SessionShmEntries(session_).empty())
        << "left in /dev/shm: " << absl::StrJoin(SessionShmEntries(session_), ", ");
    EXPECT_TRUE(ProcessesWithArgument(session_).empty()) << "processes of the session still run";
  }

  static inline int counter_ = 0;
  // Destroyed in reverse order: the session's processes and segments go
  // first, then the directory.
  ScopedTempDir temp_;
  ScopedSessionCleanup cleanup_;
  std::string dir_;
  std::string session_;
  std::string db_;
};

}  // namespace ticktrace::examples::testing

#endif  // TICKTRACE_TESTS_EXAMPLES_DEMO_FIXTURE_H_
