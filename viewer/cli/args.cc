#include "viewer/cli/args.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::view {
namespace {

bool LooksLikeNegativeNumber(absl::string_view word) {
  return word.size() >= 2 && word[0] == '-' && std::isdigit(static_cast<unsigned char>(word[1]));
}

const FlagSpec* FindFlag(const CommandSpec& spec, absl::string_view name) {
  for (const FlagSpec& f : spec.flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> ParsedArgs::Value(absl::string_view name) const {
  const auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::optional<int64_t>> ParsedArgs::IntValue(absl::string_view name,
                                                            int64_t min) const {
  const std::optional<std::string> text = Value(name);
  if (!text.has_value()) return std::optional<int64_t>();
  int64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v) || v < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected an integer >= ", min, ", got '", *text, "'"));
  }
  return std::optional<int64_t>(v);
}

absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                     const std::vector<std::string>& args) {
  ParsedArgs parsed;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (!flags_done && word == "--") {
      flags_done = true;
      continue;
    }
    if (flags_done || word.empty() || word[0] != '-' || word == "-" ||
        LooksLikeNegativeNumber(word)) {
      if (spec.positional_name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", spec.name, "' takes no argument '", word, "'"));
      }
      parsed.positionals_.push_back(word);
      continue;
    }
    absl::string_view body = word;
    body.remove_prefix(absl::StartsWith(body, "--") ? 2 : 1);
    std::optional<std::string> inline_value;
    if (const size_t eq = body.find('='); eq != absl::string_view::npos) {
      inline_value = std::string(body.substr(eq + 1));
      body = body.substr(0, eq);
    }
    const FlagSpec* flag = FindFlag(spec, body);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", word, "' for '", spec.name, "'"));
    }
    if (parsed.values_.count(flag->name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag->name, " given twice"));
    }
    if (flag->value_name.empty()) {
      if (inline_value.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag->name, " takes no value"));
      }
      parsed.values_[flag->name] = std::nullopt;
      continue;
    }
    if (!inline_value.has_value()) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag->name, " needs a value (", flag->value_name, ")"));
      }
      inline_value = args[++i];
    }
    parsed.values_[flag->name] = std::move(inline_value);
  }
  for (const FlagSpec& f : spec.flags) {
    if (f.required && parsed.values_.count(f.name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("'", spec.name, "' needs --", f.name,
                                                     f.value_name.empty() ? "" : " ",
                                                     f.value_name));
    }
  }
  if (!spec.positional_name.empty() && parsed.positionals_.size() != 1) {
    return absl::InvalidArgumentError(
        parsed.positionals_.empty()
            ? absl::StrCat("'", spec.name, "' needs ", spec.positional_name)
            : absl::StrCat("'", spec.name, "' takes one ", spec.positional_name, ", got ",
                           parsed.positionals_.size()));
  }
  return parsed;
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

std::string CommandHelp(absl::string_view program, const CommandSpec& spec) {
  std::string usage = absl::StrCat("usage: ", program, " ", spec.name);
  for (const FlagSpec& f : spec.flags) {
    if (f.hidden) continue;
    std::string item = absl::StrCat("--", f.name, f.value_name.empty() ? "" : " ", f.value_name);
    absl::StrAppend(&usage, " ", f.required ? item : absl::StrCat("[", item, "]"));
  }
  if (!spec.positional_name.empty()) absl::StrAppend(&usage, " ", spec.positional_name);
  std::string out = absl::StrCat(usage, "\n\n", spec.synopsis, "\n\nflags:\n");
  size_t width = 0;
  for (const FlagSpec& f : spec.flags) {
    if (f.hidden) continue;
    width = std::max(width, f.name.size() + f.value_name.size() + 3);
  }
  for (const FlagSpec& f : spec.flags) {
    if (f.hidden) continue;
    std::string item = absl::StrCat("--", f.name, f.value_name.empty() ? "" : " ", f.value_name);
    item.resize(std::max(item.size(), width), ' ');
    absl::StrAppend(&out, "  ", item, "  ", f.help, "\n");
  }
  absl::StrAppend(&out, "  --help", std::string(width > 6 ? width - 6 : 0, ' '),
                  "  this text\n");
  if (!spec.description.empty()) absl::StrAppend(&out, "\n", spec.description, "\n");
  if (!spec.example.empty()) absl::StrAppend(&out, "\nexample:\n  ", spec.example, "\n");
  return out;
}

FlagSpec StoreFlag() {
  return {"store", "URI",
          "the store: sqlite:PATH (an SQLite file written by ticktrace-collector) or a plain "
          "path; or clickhouse://HOST:PORT/DB (a ClickHouse server: docs/clickhouse.md)"};
}

FlagSpec DbFlag() { return {"db", "PATH", "the SQLite store at PATH (short for --store sqlite:PATH)"}; }

absl::StatusOr<store::StoreUri> StoreUriFromArgs(const ParsedArgs& args,
                                                 absl::string_view store_flag,
                                                 absl::string_view db_flag) {
  const std::optional<std::string> uri = args.Value(store_flag);
  const std::optional<std::string> db = args.Value(db_flag);
  if (uri.has_value() && db.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", db_flag, " and --", store_flag, " both name a store; give one"));
  }
  if (!uri.has_value() && !db.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("needs --", db_flag, " PATH or --", store_flag, " URI"));
  }
  if (db.has_value()) {
    if (db->empty()) return absl::InvalidArgumentError(absl::StrCat("--", db_flag, ": empty path"));
    return store::StoreUri::LocalFile(*db);
  }
  return store::ParseStoreUri(*uri);
}

std::optional<int64_t> ParseOrderId(absl::string_view text) {
  int64_t signed_value = 0;
  if (absl::SimpleAtoi(text, &signed_value)) return signed_value;
  uint64_t unsigned_value = 0;
  if (!text.empty() && text[0] != '-' && text[0] != '+' &&
      absl::SimpleAtoi(text, &unsigned_value)) {
    return static_cast<int64_t>(unsigned_value);
  }
  return std::nullopt;
}

}  // namespace ticktrace::view
