#include "store/clickhouse/clickhouse_schema.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "store/clickhouse/clickhouse_rollup.h"

namespace ticktrace::store {

const std::vector<std::string_view>& ClickHouseSchemaStatements() {
  static const std::vector<std::string_view> statements = {
#include "store/clickhouse/clickhouse_schema_sql.inc"
  };
  return statements;
}

namespace {

// The tables ClickHouseSchemaStatements creates, as a SQL list for NOT IN:
// read from the statements themselves, so that a table added there is ours
// here too (a hand-kept list missed run_notes, budget_breaches and
// stage_clocks, and a collector that looked while another was creating the
// store took it for somebody else's).
std::string OwnTablesSql() {
  constexpr std::string_view kCreate = "CREATE TABLE IF NOT EXISTS ";
  std::vector<std::string> names;
  for (std::string_view ddl : ClickHouseSchemaStatements()) {
    if (ddl.substr(0, kCreate.size()) != kCreate) continue;
    const std::string_view rest = ddl.substr(kCreate.size());
    names.push_back(ClickHouseQuote(std::string(rest.substr(0, rest.find('(')))));
  }
  return absl::StrCat("(", absl::StrJoin(names, ", "), ")");
}

}  // namespace

absl::StatusOr<int> ReadClickHouseSchemaVersion(HttpClient& client, const std::string& database) {
  const std::string store = absl::StrCat(client.where(), "/", database);
  absl::StatusOr<std::string> tables = client.Query(
      absl::StrCat("SELECT count() FROM system.tables WHERE database = ",
                   ClickHouseQuote(database), " AND name = 'meta'"),
      "");
  if (!tables.ok()) return tables.status();
  if (absl::StripAsciiWhitespace(*tables) == "0") {
    return absl::NotFoundError(absl::StrCat(store, ": no ticktrace store there yet"));
  }
  absl::StatusOr<std::string> rows = client.Query(
      "SELECT key, any(value) FROM meta FINAL WHERE key IN ('app', 'schema_version') "
      "GROUP BY key",
      database);
  if (!rows.ok()) return rows.status();
  std::string app, version;
  for (absl::string_view line : absl::StrSplit(*rows, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('\t', 1));
    if (kv.size() != 2) continue;
    (kv[0] == "app" ? app : version) = std::string(kv[1]);
  }
  if (app.empty() && version.empty()) {
    return absl::NotFoundError(absl::StrCat(store, ": meta is empty (a store being created)"));
  }
  int v = 0;
  if (app != "ticktrace" || !absl::SimpleAtoi(version, &v)) {
    return absl::FailedPreconditionError(
        absl::StrCat(store, ": not a ticktrace store (its meta table says app '", app,
                     "'); left untouched"));
  }
  return v;
}

absl::Status EnsureClickHouseSchema(HttpClient& client, const std::string& database) {
  const std::string store = absl::StrCat(client.where(), "/", database);
  absl::StatusOr<int> version = ReadClickHouseSchemaVersion(client, database);
  if (version.ok()) {
    if (*version > kClickHouseSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          store, ": store schema ", *version, " is newer than this program's (",
          kClickHouseSchemaVersion, "); use a newer ticktrace or another --store"));
    }
    // Same version: the statements below are no-ops (IF NOT EXISTS).
  } else if (!absl::IsNotFound(version.status())) {
    return version.status();
  }
  if (!version.ok()) {
    // A database that holds tables but no meta is someone else's.
    absl::StatusOr<std::string> others = client.Query(
        absl::StrCat("SELECT count() FROM system.tables WHERE database = ",
                     ClickHouseQuote(database), " AND name NOT IN ('meta')"),
        "");
    if (!others.ok()) return others.status();
    if (absl::StripAsciiWhitespace(*others) != "0") {
      // Our own tables without meta rows: a creation that was interrupted.
      absl::StatusOr<std::string> ours = client.Query(
          absl::StrCat("SELECT count() FROM system.tables WHERE database = ",
                       ClickHouseQuote(database), " AND name NOT IN ", OwnTablesSql()),
          "");
      if (!ours.ok()) return ours.status();
      if (absl::StripAsciiWhitespace(*ours) != "0") {
        return absl::FailedPreconditionError(
            absl::StrCat(store, ": the database holds tables that are not ticktrace's and no "
                                "ticktrace meta; left untouched (choose another database)"));
      }
    }
    if (absl::StatusOr<std::string> r =
            client.Query(absl::StrCat("CREATE DATABASE IF NOT EXISTS `", database, "`"), "");
        !r.ok()) {
      return r.status();
    }
  }
  for (std::string_view ddl : ClickHouseSchemaStatements()) {
    absl::StatusOr<std::string> r = client.Query(ddl, database);
    if (!r.ok()) return r.status();
  }
  if (version.ok() && *version < 2) {
    // 1 -> 2: the rollup of what the store holds, then the version.
    if (absl::Status s = BackfillMinuteRollup(client, database); !s.ok()) return s;
    absl::StatusOr<std::string> r = client.Query(
        absl::StrCat("INSERT INTO meta VALUES ('schema_version', '", kClickHouseSchemaVersion,
                     "')"),
        database);
    if (!r.ok()) return r.status();
  }
  if (!version.ok()) {
    // Meta last: a store with meta rows has all its tables. A concurrent
    // creator writes the same rows (ReplacingMergeTree keeps one).
    absl::StatusOr<std::string> r = client.Query(
        absl::StrCat("INSERT INTO meta VALUES ('app', 'ticktrace'), ('schema_version', '",
                     kClickHouseSchemaVersion, "'), ('backend', 'clickhouse')"),
        database);
    if (!r.ok()) return r.status();
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::store
