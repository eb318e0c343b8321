// docs/store.md's SQL is the store's schema: a database made from the
// store library's own DDL (store::SqliteSchemaSql(), what the collector's
// SqliteWriter creates) and one made from the ```sql block of docs/store.md
// have the same tables, columns, indexes and views. A change to either
// without the other fails here.
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_schema.h"
#include "gtest/gtest.h"
#include "store_fixture.h"

namespace ticktrace::view {
namespace {

// One line per table column, index, view and trigger, normalised:
// case-folded types, defaults as SQLite reports them, columns in declared
// order, a view's or trigger's SQL with its whitespace collapsed.
class Schema {
 public:
  explicit Schema(sqlite3* db) {
    for (const auto& row : Query(db, "SELECT type, name, tbl_name, sql FROM sqlite_master "
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
        lines_.push_back(type + " " + name + ": " + Collapse(row[3]));
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
  static std::string Collapse(const std::string& sql) {
    std::string out;
    for (char c : sql) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!out.empty() && out.back() != ' ') out += ' ';
      } else {
        out += c;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
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

// A fresh in-memory database with `sql` run on it; `what` names it in failures.
sqlite3* MakeDatabase(const std::string& sql, const std::string& what) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << what << "'s SQL does not run: " << (error != nullptr ? error : "?");
  sqlite3_free(error);
  return db;
}

TEST(StoreSchemaTest, TheStoreLibrarysDdlIsTheSchemaOfDocsStoreMd) {
  absl::StatusOr<std::string> docs_sql = testing::SchemaSqlFromDocs();
  ASSERT_TRUE(docs_sql.ok()) << docs_sql.status();
  sqlite3* library = MakeDatabase(store::SqliteSchemaSql(), "store::SqliteSchemaSql()");
  sqlite3* docs = MakeDatabase(*docs_sql, "docs/store.md");
  const Schema from_library(library);
  const Schema from_docs(docs);
  sqlite3_close(library);
  sqlite3_close(docs);

  // Schema 3's tables and views are all there (a sanity check of the
  // normalisation itself: it must see them), from
  // store/sqlite/sqlite_schema_sql.inc by hand.
  const std::string text = from_library.Text();
  for (const char* expected : {"table meta column 0 key TEXT", "table intervals column",
                               "table interval_detail column", "table order_blocks column",
                               "table order_ids column", "view orders",
                               "view stage_latencies"}) {
    EXPECT_NE(text.find(expected), std::string::npos)
        << "missing: " << expected << "\n" << text;
  }
  EXPECT_EQ(from_library.lines(), from_docs.lines())
      << "docs/store.md's ```sql block differs from store::SqliteSchemaSql() (store/sqlite/"
         "sqlite_schema_sql.inc)\nlibrary:\n"
      << from_library.Text() << "docs/store.md:\n" << from_docs.Text();
}

}  // namespace
}  // namespace ticktrace::view
