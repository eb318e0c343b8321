// store::StoreReader::Open as the viewer's commands use it: read-only, never creates
// files, refuses what is not a ticktrace store of a known schema, takes a
// path or a --store URI. (The reader's rows: sqlite_store_reader_test.cc.)
#include "ticktrace/store/reader.h"

#include <sqlite3.h>

#include <fstream>

#include "store/sqlite/sqlite_writer.h"
#include "gtest/gtest.h"
#include "store_fixture.h"

namespace ticktrace::view {
namespace {

bool Contains(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(StoreOpenTest, MissingFileIsNotFoundAndNotCreated) {
  testing::TempDir dir;
  const std::string path = dir.File("missing.db");
  auto store = store::StoreReader::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsNotFound(store.status())) << store.status();
  EXPECT_TRUE(Contains(store.status(), "missing.db: no such file")) << store.status();
  EXPECT_TRUE(dir.List().empty());
}

TEST(StoreOpenTest, NotSqlite) {
  testing::TempDir dir;
  WriteText(dir.File("text.db"), std::string(4096, 'x'));
  auto store = store::StoreReader::Open(dir.File("text.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(Contains(store.status(), "not an SQLite database")) << store.status();
  WriteText(dir.File("short.db"), "hello");
  EXPECT_TRUE(Contains(store::StoreReader::Open(dir.File("short.db")).status(), "not an SQLite database"));
  WriteText(dir.File("empty.db"), "");
  EXPECT_TRUE(Contains(store::StoreReader::Open(dir.File("empty.db")).status(), "not a ticktrace store"));
  EXPECT_TRUE(Contains(store::StoreReader::Open(dir.path()).status(), "is a directory"));
}

TEST(StoreOpenTest, SqliteButNotTicktrace) {
  testing::TempDir dir;
  const std::string path = dir.File("other.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = store::StoreReader::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(Contains(store.status(), "not a ticktrace store (no meta table)")) << store.status();

  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE meta(key TEXT, value TEXT);"
                               "INSERT INTO meta VALUES('app','other');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_TRUE(Contains(store::StoreReader::Open(path).status(), "meta.app is not 'ticktrace'"));
}

TEST(StoreOpenTest, NewerSchemaIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("future.db");
  testing::WriteKnownStore(path);
  testing::ExecSql(path, "UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  const testing::FileSnapshot snap = testing::Snapshot(path);
  auto store = store::StoreReader::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status()));
  EXPECT_TRUE(Contains(store.status(), "schema version 5 is newer")) << store.status();
  EXPECT_TRUE(testing::Snapshot(path) == snap);
}

TEST(StoreOpenTest, ReadsKnownStoreWithoutLeavingFilesOrChangingIt) {
  testing::TempDir dir;
  const std::string path = dir.File("known.db");
  testing::WriteKnownStore(path);
  const std::vector<std::string> before = dir.List();
  EXPECT_EQ(before, std::vector<std::string>{"known.db"});
  const testing::FileSnapshot snap = testing::Snapshot(path);
  {
    auto store = store::StoreReader::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->schema_version(), 4);
    auto runs = (*store)->ListRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    EXPECT_EQ((*runs)[1].pipeline, "md,strategy,gateway");
    EXPECT_EQ((*runs)[1].spread_ppm, 1.5);
    auto latest = (*store)->GetRun(std::nullopt);
    ASSERT_TRUE(latest.ok());
    EXPECT_EQ(latest->run_id, 2);
    EXPECT_TRUE(absl::IsNotFound((*store)->GetRun(5).status()));
  }
  EXPECT_EQ(dir.List(), before);
  EXPECT_TRUE(testing::Snapshot(path) == snap);
}

TEST(StoreOpenTest, LiveModeReadsWhileAWriterHoldsTheStore) {
  testing::TempDir dir;
  const std::string path = dir.File("live.db");
  store::RunMeta run;
  const std::unique_ptr<store::Writer> writer = testing::OpenWriterWithRun(path, "live", &run);
  ASSERT_NE(writer, nullptr);
  for (store::OpenMode mode : {store::OpenMode::kLive, store::OpenMode::kSnapshot}) {
    auto store = store::StoreReader::Open(path, mode);
    ASSERT_TRUE(store.ok()) << store.status();
    auto got = (*store)->GetRun(std::nullopt);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->session, "live");
    EXPECT_FALSE(got->ended_utc_ns.has_value());
  }
}

TEST(StoreOpenTest, PathsWithUriCharacters) {
  testing::TempDir dir;
  const std::string path = dir.File("odd ?name#%.db");
  testing::WriteKnownStore(path);
  auto store = store::StoreReader::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->path(), path);
}

TEST(StoreOpenTest, StoreUrisNameTheSameStore) {
  testing::TempDir dir;
  const std::string path = dir.File("known.db");
  testing::WriteKnownStore(path);
  for (const std::string& uri : {path, "sqlite:" + path}) {
    auto store = store::StoreReader::Open(uri);
    ASSERT_TRUE(store.ok()) << uri << ": " << store.status();
    EXPECT_EQ((*store)->path(), path);
    EXPECT_EQ((*store)->GetRun(std::nullopt)->session, "known");
  }
  // A ClickHouse server that does not answer (nothing listens on port 1).
  auto clickhouse = store::StoreReader::Open("clickhouse://127.0.0.1:1/ticktrace");
  ASSERT_FALSE(clickhouse.ok());
  EXPECT_TRUE(absl::IsUnavailable(clickhouse.status())) << clickhouse.status();
  EXPECT_TRUE(Contains(clickhouse.status(), "clickhouse://127.0.0.1:1/ticktrace"))
      << clickhouse.status();
  EXPECT_EQ(dir.List(), std::vector<std::string>{"known.db"});
}

}  // namespace
}  // namespace ticktrace::view
