#include "ticktrace/store/uri.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ticktrace::store {

StoreUri StoreUri::LocalFile(std::string path) {
  StoreUri uri;
  uri.path = std::move(path);
  return uri;
}

std::optional<std::string> StoreUri::local_file() const {
  switch (kind) {
    case Kind::kSqlite:
      return path;
    case Kind::kClickHouse:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string StoreUri::ToString() const {
  if (kind == Kind::kSqlite) {
    // "sqlite://" is taken off when parsed: a path that starts with "//"
    // keeps it by being written "sqlite:////...".
    return absl::StrCat(absl::StartsWith(path, "//") ? "sqlite://" : "sqlite:", path);
  }
  return absl::StrCat("clickhouse://", host, ":", port, "/", database);
}

absl::StatusOr<StoreUri> ParseStoreUri(std::string_view text_in) {
  const absl::string_view text(text_in.data(), text_in.size());
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--store '", text, "': ", why));
  };
  StoreUri uri;
  if (absl::StartsWith(text, "sqlite:")) {
    uri.path = std::string(text.substr(7));
    if (absl::StartsWith(uri.path, "//")) uri.path = uri.path.substr(2);  // sqlite:///abs
    if (uri.path.empty()) return bad("no file after 'sqlite:'");
    return uri;
  }
  if (absl::StartsWith(text, "clickhouse://")) {
    uri.kind = StoreUri::Kind::kClickHouse;
    absl::string_view rest = text.substr(13);
    const size_t slash = rest.find('/');
    absl::string_view authority = rest.substr(0, slash);
    if (slash != absl::string_view::npos) {
      const absl::string_view db = rest.substr(slash + 1);
      if (!db.empty()) uri.database = std::string(db);
    }
    for (char c : uri.database) {
      if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_')) {
        return bad("the database name may hold only letters, digits and '_'");
      }
    }
    const size_t colon = authority.rfind(':');
    uri.host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) {
      if (!absl::SimpleAtoi(authority.substr(colon + 1), &uri.port) || uri.port <= 0 ||
          uri.port > 65535) {
        return bad("the port must be a number from 1 to 65535");
      }
    }
    if (uri.host.empty()) return bad("no host after 'clickhouse://'");
    return uri;
  }
  if (text.find("://") != absl::string_view::npos) {
    return bad("unknown kind of store (sqlite:PATH or clickhouse://HOST:PORT/DATABASE)");
  }
  if (text.empty()) return bad("empty");
  uri.path = std::string(text);  // a plain path: SQLite (the --db form)
  return uri;
}

}  // namespace ticktrace::store
