// docs/store.md's SQL is the store's schema: a store created by the real
// collector code (collect::Store::OpenOrCreate, its own DDL) and a database
// made from the ```sql block of docs/store.md (what the viewer's fixture
// uses) have the same tables, columns and indexes. A change to either
// without the other fails here.
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collector/store.h"
#include "gtest/gtest.h"
#include "store_fixture.h"

namespace ticktrace::view {
namespace {

// One line per table, column and index, normalised: case-folded types,
// defaults as SQLite reports them, columns in declared order.
class Schema {
 public:
  explicit Schema(sqlite3* db) {
    for (const auto& row : Query(db, "SELECT type, name, tbl_name FROM sqlite_master "
                                     "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")) {
      const std::string& type = row[0];
      const std::string& name = row[1];
      if (type == "table") {
        for (const auto& col : Query(db, "PRAGMA table_info(\"" + name + "\")")) {
          // cid, name, type, notnull, dflt_value, pk
          std::string decl = col[2];
          for (char& c : decl) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          lines_.push_back("table " + name + " column " + col[0] + " " + col[1] + " " + decl +
                           " notnull=" + col[3] + " default=" + col[4] + " pk=" + col[5]);
        }
      } else if (type == "index") {
        std::string columns;
        for (const auto& col : Query(db, "PRAGMA index_info(\"" + name + "\")")) {
          columns += (columns.empty() ? "" : ",") + col[2];  // seqno, cid, name
        }
        lines_.push_back("index " + name + " on " + row[2] + "(" + columns + ")");
      } else {
        lines_.push_back(type + " " + name);  // a view or trigger: neither is documented
      }
    }
    // Primary keys and UNIQUE constraints make automatic indexes; list them
    // by table and columns (their names are SQLite's own).
    for (const auto& row : Query(db, "SELECT name, tbl_name FROM sqlite_master "
                                     "WHERE type = 'index' AND name LIKE 'sqlite_autoindex_%'")) {
      std::string columns;
      for (const auto& col : Query(db, "PRAGMA index_info(\"" + row[0] + "\")")) {
        columns += (columns.empty() ? "" : ",") + col[2];
      }
      lines_.push_back("key of " + row[1] + "(" + columns + ")");
    }
    std::sort(lines_.begin(), lines_.end());
  }
  const std::vector<std::string>& lines() const { return lines_; }
  std::string Text() const {
    std::string out;
    for (const std::string& l : lines_) out += l + "\n";
    return out;
  }

 private:
  static std::vector<std::vector<std::string>> Query(sqlite3* db, const std::string& sql) {
    std::vector<std::vector<std::string>> rows;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "bad SQL: " << sql << ": " << sqlite3_errmsg(db);
      return rows;
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const unsigned char* t = sqlite3_column_text(s, i);
        row.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "NULL");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return rows;
  }
  std::vector<std::string> lines_;
};

TEST(StoreSchemaTest, TheCollectorsStoreHasTheSchemaOfDocsStoreMd) {
  testing::TempDir dir;
  const std::string collector_db = dir.File("collector.db");
  {
    auto store = collect::Store::OpenOrCreate(collector_db);
    ASSERT_TRUE(store.ok()) << store.status();
  }
  absl::StatusOr<std::string> docs_sql = testing::SchemaSqlFromDocs();
  ASSERT_TRUE(docs_sql.ok()) << docs_sql.status();

  sqlite3* collector = nullptr;
  ASSERT_EQ(sqlite3_open_v2(collector_db.c_str(), &collector, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3* docs = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &docs), SQLITE_OK);
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(docs, docs_sql->c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << "docs/store.md's SQL does not run: " << (error != nullptr ? error : "?");

  const Schema from_collector(collector);
  const Schema from_docs(docs);
  sqlite3_close(collector);
  sqlite3_close(docs);

  // The documented tables and indexes are all there (a sanity check of the
  // normalisation itself: it must see them).
  const std::string text = from_docs.Text();
  for (const char* expected :
       {"table meta column 0 key TEXT notnull=0 default=NULL pk=1",
        "table stage_stats column 15 samples_all INTEGER notnull=0 default=NULL pk=0",
        "table stamps column 11 flags INTEGER notnull=1 default=0 pk=0",
        "index samples_by_order on samples(run_id,order_id)",
        "index stamps_by_order on stamps(run_id,order_id)",
        "key of orders(run_id,order_id)"}) {
    EXPECT_NE(text.find(std::string(expected) + "\n"), std::string::npos)
        << "missing: " << expected << "\n" << text;
  }
  EXPECT_EQ(from_collector.lines(), from_docs.lines())
      << "collector:\n" << from_collector.Text() << "docs/store.md:\n" << from_docs.Text();
}

}  // namespace
}  // namespace ticktrace::view
