#include "common/flags.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ticktrace/version.h"

namespace ticktrace {
namespace {

constexpr size_t kHelpWidth = 80;       // help lines fit a default terminal
constexpr size_t kMaxHelpColumn = 32;   // where a flag's description starts, at most

bool LooksLikeNegativeNumber(absl::string_view word) {
  return word.size() >= 2 && word[0] == '-' && std::isdigit(static_cast<unsigned char>(word[1]));
}

std::string CanonicalName(absl::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

const FlagSpec* FindFlag(const CommandSpec& spec, absl::string_view canonical) {
  for (const FlagSpec& f : spec.flags) {
    if (f.name == canonical) return &f;
  }
  return nullptr;
}

// The flag a word's name (without dashes, before any '=') names, and
// whether it is a boolean's negation (--no-name, Abseil's --noname); null
// when none.
const FlagSpec* Resolve(const CommandSpec& spec, absl::string_view name, bool* negated) {
  const std::string canonical = CanonicalName(name);
  *negated = false;
  if (const FlagSpec* f = FindFlag(spec, canonical)) return f;
  if (!absl::StartsWith(canonical, "no")) return nullptr;
  absl::string_view rest = absl::string_view(canonical).substr(2);
  if (absl::StartsWith(rest, "-")) rest.remove_prefix(1);
  const FlagSpec* f = rest.empty() ? nullptr : FindFlag(spec, rest);
  if (f == nullptr || !f->value_name.empty()) return nullptr;
  *negated = true;
  return f;
}

// Appends `text` word-wrapped into lines of at most kHelpWidth: the first
// goes on after `used` characters already on the line, the others indented
// by `indent`.
void AppendWrapped(absl::string_view text, size_t used, size_t indent, std::string* out) {
  size_t col = used;
  bool line_empty = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line_empty && col + 1 + word.size() > kHelpWidth) {
      absl::StrAppend(out, "\n", std::string(indent, ' '));
      col = indent;
      line_empty = true;
    }
    if (!line_empty) {
      out->push_back(' ');
      ++col;
    }
    absl::StrAppend(out, word);
    col += word.size();
    line_empty = false;
  }
  out->push_back('\n');
}

// `text` with its own line breaks kept: a line that fits stays as written,
// a longer one is wrapped; in a table ("  name    what it is") the
// continuation lines start under the second column.
void AppendParagraph(absl::string_view text, std::string* out) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() <= kHelpWidth) {
      absl::StrAppend(out, line, "\n");
      continue;
    }
    const size_t indent = line.find_first_not_of(' ');
    const size_t gap = line.find("  ", indent);
    const size_t column = gap == absl::string_view::npos ? 0 : line.find_first_not_of(' ', gap);
    if (indent == 0 || column == absl::string_view::npos || column >= kMaxHelpColumn) {
      AppendWrapped(line, 0, 0, out);
      continue;
    }
    absl::StrAppend(out, line.substr(0, column));
    AppendWrapped(line.substr(column), column, column, out);
  }
}

std::string FlagItem(const FlagSpec& f) {
  return absl::StrCat("--", f.name, f.value_name.empty() ? "" : " ", f.value_name);
}

// "  --name VALUE      help (default: x)", wrapped.
void AppendFlagLine(const std::string& item, const std::string& help, size_t column,
                    std::string* out) {
  const std::string left = absl::StrCat("  ", item);
  if (left.size() + 2 > column) {
    absl::StrAppend(out, left, "\n", std::string(column, ' '));
  } else {
    absl::StrAppend(out, left, std::string(column - left.size(), ' '));
  }
  AppendWrapped(help, column, column, out);
}

// The usage lines: the spec's own, or one generated from its flags.
std::vector<std::string> UsageLines(const CommandSpec& spec) {
  if (!spec.usage.empty()) return spec.usage;
  std::string line;
  for (const FlagSpec& f : spec.flags) {
    if (f.hidden) continue;
    absl::StrAppend(&line, line.empty() ? "" : " ",
                    f.required ? FlagItem(f) : absl::StrCat("[", FlagItem(f), "]"));
  }
  if (!spec.positional_name.empty()) absl::StrAppend(&line, " ", spec.positional_name);
  return {line};
}

// The flag table of the help text, by section in order of first appearance.
void AppendFlagSections(const CommandSpec& spec, std::string* out) {
  size_t column = 0;
  std::vector<std::string> sections;
  for (const FlagSpec& f : spec.flags) {
    if (f.hidden) continue;
    column = std::max(column, FlagItem(f).size() + 4);
    if (std::find(sections.begin(), sections.end(), f.section) == sections.end()) {
      sections.push_back(f.section);
    }
  }
  column = std::clamp<size_t>(column, 13, kMaxHelpColumn);  // "  --version" fits
  const bool untitled = std::find(sections.begin(), sections.end(), "") != sections.end();
  if (!untitled) sections.push_back("");  // --help and --version under "other"
  for (const std::string& section : sections) {
    absl::StrAppend(out, "\n", section.empty() ? (untitled ? "flags" : "other") : section, ":\n");
    for (const FlagSpec& f : spec.flags) {
      if (f.hidden || f.section != section) continue;
      std::string help = f.help;
      if (!f.default_text.empty()) absl::StrAppend(&help, " (default: ", f.default_text, ")");
      if (f.repeated) absl::StrAppend(&help, " (may be given more than once)");
      AppendFlagLine(FlagItem(f), help, column, out);
    }
    if (section.empty()) {
      AppendFlagLine("--help", "print this text and exit", column, out);
      AppendFlagLine("--version", "print the version and the git commit, then exit", column, out);
    }
  }
}

// A value flag's value: after '=', or the next word (always: -5 is a value).
absl::StatusOr<std::string> TakeValue(const FlagSpec& flag, std::optional<std::string> inline_value,
                                      const std::vector<std::string>& args, size_t* i) {
  if (inline_value.has_value()) return *std::move(inline_value);
  if (*i + 1 >= args.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag.name, " needs a value (", flag.value_name, ")"));
  }
  return args[++*i];
}

absl::Status CheckRequired(const CommandSpec& spec, const ParsedArgs& parsed) {
  const std::string who = spec.name.empty() ? "" : absl::StrCat("'", spec.name, "' ");
  for (const FlagSpec& f : spec.flags) {
    if (f.required && !parsed.Has(f.name)) {
      return absl::InvalidArgumentError(absl::StrCat(who, "needs ", FlagItem(f)));
    }
  }
  const size_t n = parsed.positionals().size();
  if (!spec.positional_name.empty() && n != 1) {
    return absl::InvalidArgumentError(
        n == 0 ? absl::StrCat(who, "needs ", spec.positional_name)
               : absl::StrCat(who, "takes one ", spec.positional_name, ", got ", n));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string> ParsedArgs::Value(absl::string_view name) const {
  const auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ParsedArgs::Values(absl::string_view name) const {
  const auto it = repeated_.find(std::string(name));
  return it == repeated_.end() ? std::vector<std::string>{} : it->second;
}

absl::StatusOr<std::optional<int64_t>> ParsedArgs::IntValue(absl::string_view name,
                                                            int64_t min) const {
  const std::optional<std::string> text = Value(name);
  if (!text.has_value()) return std::optional<int64_t>();
  int64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v) || v < min) {
    return BadFlagValue(absl::StrCat("--", name), absl::StrCat("an integer >= ", min), *text);
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
    if (flags_done || word.size() < 2 || word[0] != '-' || LooksLikeNegativeNumber(word)) {
      if (spec.positional_name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", word, "'"));
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
    bool negated = false;
    const FlagSpec* flag = Resolve(spec, body, &negated);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", word.substr(0, word.find('=')), "'"));
    }
    if (flag->value_name.empty()) {
      if (inline_value.has_value() && *inline_value != "true" && *inline_value != "false") {
        return BadFlagValue(absl::StrCat("--", flag->name), "true or false", *inline_value);
      }
      const bool on = (!inline_value.has_value() || *inline_value == "true") != negated;
      if (on) {
        parsed.values_[flag->name] = std::nullopt;
        parsed.off_.erase(flag->name);
      } else {
        parsed.values_.erase(flag->name);
        parsed.off_.insert(flag->name);
      }
      continue;
    }
    if (parsed.values_.count(flag->name) > 0 && !spec.last_value_wins && !flag->repeated) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag->name, " given twice"));
    }
    absl::StatusOr<std::string> value = TakeValue(*flag, std::move(inline_value), args, &i);
    if (!value.ok()) return value.status();
    if (flag->repeated) parsed.repeated_[flag->name].push_back(*value);
    parsed.values_[flag->name] = *std::move(value);
  }
  if (absl::Status s = CheckRequired(spec, parsed); !s.ok()) return s;
  return parsed;
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h" || a == "-help") return true;
  }
  return false;
}

bool WantsVersion(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--version" || a == "-version") return true;
  }
  return false;
}

std::string CommandHelp(absl::string_view program, const CommandSpec& spec) {
  const std::string head =
      absl::StrCat(program, spec.name.empty() ? "" : " ", spec.name);
  std::string out;
  bool first = true;
  for (const std::string& line : UsageLines(spec)) {
    const std::string lead = absl::StrCat(first ? "usage: " : "       ", head, " ");
    out += lead;
    AppendWrapped(line, lead.size(), lead.size(), &out);
    first = false;
  }
  if (!spec.synopsis.empty()) {
    out.push_back('\n');
    AppendParagraph(spec.synopsis, &out);
  }
  AppendFlagSections(spec, &out);
  if (!spec.description.empty()) {
    out.push_back('\n');
    AppendParagraph(spec.description, &out);
  }
  if (!spec.example.empty()) absl::StrAppend(&out, "\nexample:\n  ", spec.example, "\n");
  return out;
}

absl::Status BadFlagValue(absl::string_view flag, absl::string_view what, absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": expected ", what, ", got '", text, "'"));
}

absl::StatusOr<int64_t> ParseIntFlag(absl::string_view flag, absl::string_view text) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) return BadFlagValue(flag, "an integer", text);
  return v;
}

absl::StatusOr<uint64_t> ParseUintFlag(absl::string_view flag, absl::string_view text) {
  uint64_t v = 0;
  if (text.empty() || text[0] == '-' || !absl::SimpleAtoi(text, &v)) {
    return BadFlagValue(flag, "a non-negative integer", text);
  }
  return v;
}

absl::StatusOr<double> ParseDoubleFlag(absl::string_view flag, absl::string_view text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v)) return BadFlagValue(flag, "a number", text);
  return v;
}

namespace {

// One typed Add*: `parse` is one of the Parse*Flag functions above.
template <typename T, typename Parse>
std::function<absl::Status(absl::string_view, absl::string_view)> Typed(T* out, Parse parse) {
  return [out, parse](absl::string_view flag, absl::string_view text) -> absl::Status {
    auto v = parse(flag, text);
    if (!v.ok()) return v.status();
    *out = static_cast<T>(*v);
    return absl::OkStatus();
  };
}

}  // namespace

void BoundFlags::Add(FlagSpec flag, std::string default_text, ValueParser parse) {
  if (flag.default_text.empty()) flag.default_text = std::move(default_text);
  bindings_.push_back({flag.name, nullptr, nullptr, std::move(parse)});
  spec_.flags.push_back(std::move(flag));
}

void BoundFlags::AddString(FlagSpec flag, std::string* out) {
  Add(std::move(flag), *out, [out](absl::string_view, absl::string_view text) {
    *out = std::string(text);
    return absl::OkStatus();
  });
}

void BoundFlags::AddInt(FlagSpec flag, int* out) {
  Add(std::move(flag), absl::StrCat(*out),
      [out](absl::string_view flag_name, absl::string_view text) -> absl::Status {
        int v = 0;
        if (!absl::SimpleAtoi(text, &v)) return BadFlagValue(flag_name, "an integer", text);
        *out = v;
        return absl::OkStatus();
      });
}

void BoundFlags::AddUint64(FlagSpec flag, uint64_t* out) {
  Add(std::move(flag), absl::StrCat(*out), Typed(out, ParseUintFlag));
}

void BoundFlags::AddDouble(FlagSpec flag, double* out) {
  Add(std::move(flag), absl::StrCat(*out), Typed(out, ParseDoubleFlag));
}

void BoundFlags::AddBool(FlagSpec flag, bool* out) {
  flag.value_name.clear();
  if (flag.default_text.empty() && *out) flag.default_text = "true";
  bindings_.push_back({flag.name, out, nullptr, nullptr});
  spec_.flags.push_back(std::move(flag));
}

void BoundFlags::AddRepeated(FlagSpec flag, std::vector<std::string>* out) {
  flag.repeated = true;
  bindings_.push_back({flag.name, nullptr, out, nullptr});
  spec_.flags.push_back(std::move(flag));
}

void BoundFlags::AddCustom(FlagSpec flag, ValueParser parse) {
  Add(std::move(flag), "", std::move(parse));
}

absl::StatusOr<BoundFlags::Outcome> BoundFlags::Parse(int argc, const char* const* argv) {
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (WantsHelp(args)) return Outcome::kHelp;
  if (WantsVersion(args)) return Outcome::kVersion;
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(spec_, args);
  if (!parsed.ok()) return parsed.status();
  for (const Binding& b : bindings_) {
    if (b.boolean != nullptr) {
      if (parsed->Has(b.name)) *b.boolean = true;
      if (parsed->IsOff(b.name)) *b.boolean = false;
      continue;
    }
    if (b.values != nullptr) {
      if (parsed->Has(b.name)) *b.values = parsed->Values(b.name);
      continue;
    }
    if (const std::optional<std::string> v = parsed->Value(b.name)) {
      if (absl::Status s = b.parse(absl::StrCat("--", b.name), *v); !s.ok()) return s;
    }
  }
  return Outcome::kRun;
}

void BoundFlags::ParseOrExit(absl::string_view program, int argc, const char* const* argv) {
  const absl::StatusOr<Outcome> outcome = Parse(argc, argv);
  if (!outcome.ok()) ExitWithUsageError(program, outcome.status().message());
  if (*outcome == Outcome::kHelp) {
    std::fputs(CommandHelp(program, spec_).c_str(), stdout);
    std::exit(0);
  }
  if (*outcome == Outcome::kVersion) {
    std::printf("%s\n", VersionLine(std::string(program)).c_str());
    std::exit(0);
  }
}

void ExitWithUsageError(absl::string_view program, absl::string_view message) {
  std::fprintf(stderr, "%s: %s (see --help)\n", std::string(program).c_str(),
               std::string(message).c_str());
  std::exit(2);
}

}  // namespace ticktrace
