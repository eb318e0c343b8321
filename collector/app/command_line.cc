#include "collector/app/command_line.h"

#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ticktrace::collect {
namespace {

constexpr size_t kUsageWidth = 80;       // usage lines fit a default terminal
constexpr size_t kUsageHelpColumn = 30;  // where a flag's description starts

std::string CanonicalFlagName(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

// Appends `text` word-wrapped into lines of at most kUsageWidth: the first goes on
// after `used` characters already on the line, the others indented by `indent`.
void AppendWrapped(absl::string_view text, size_t used, size_t indent, std::string* out) {
  size_t col = used;
  bool line_empty = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line_empty && col + 1 + word.size() > kUsageWidth) {
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

bool ParseBoolText(std::string v, bool* out) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"true", "1", "yes", "t", "y"}) {
    if (v == yes) return *out = true, true;
  }
  for (const char* no : {"false", "0", "no", "f", "n"}) {
    if (v == no) return *out = false, true;
  }
  return false;
}

}  // namespace

CommandLine::CommandLine(std::string program, std::string synopsis, std::string description)
    : program_(std::move(program)),
      synopsis_(std::move(synopsis)),
      description_(std::move(description)) {}

void CommandLine::Section(std::string title) { groups_.push_back(Group{std::move(title), {}}); }

void CommandLine::AddValue(std::string name, std::string value_name, std::string* out,
                           std::string help) {
  if (groups_.empty()) Section("Options");
  groups_.back().flags.push_back(
      Flag{std::move(name), std::move(value_name), std::move(help), out, nullptr, *out});
}

void CommandLine::AddBool(std::string name, bool* out, std::string help) {
  if (groups_.empty()) Section("Options");
  groups_.back().flags.push_back(
      Flag{std::move(name), "", std::move(help), nullptr, out, *out ? "true" : ""});
}

CommandLine::Flag* CommandLine::Find(absl::string_view name) {
  const std::string canonical = CanonicalFlagName(name);
  for (Group& g : groups_) {
    for (Flag& f : g.flags) {
      if (f.name == canonical) return &f;
    }
  }
  return nullptr;
}

absl::StatusOr<CommandLine::Outcome> CommandLine::Parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) {
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", argv[i + 1], "'"));
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
    const absl::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const absl::string_view name = body.substr(0, eq);
    const bool has_value = eq != absl::string_view::npos;
    const absl::string_view inline_value = has_value ? body.substr(eq + 1) : absl::string_view();
    const std::string canonical = CanonicalFlagName(name);
    if (canonical == "help" || canonical == "h") return Outcome::kHelp;
    if (canonical == "version") return Outcome::kVersion;

    Flag* flag = Find(name);
    bool negated = false;
    if (flag == nullptr && canonical.rfind("no", 0) == 0) {
      // --no-include-flagged, or Abseil's --noinclude_flagged.
      absl::string_view rest = name.substr(2);
      if (!rest.empty() && (rest[0] == '-' || rest[0] == '_')) rest.remove_prefix(1);
      Flag* f = rest.empty() ? nullptr : Find(rest);
      if (f != nullptr && f->boolean != nullptr) {
        flag = f;
        negated = true;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", arg.substr(0, arg.find('='))));
    }
    if (flag->boolean != nullptr) {
      bool v = true;
      if (has_value && !ParseBoolText(std::string(inline_value), &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag->name, " '", inline_value, "': not true or false"));
      }
      *flag->boolean = negated ? !v : v;
      continue;
    }
    if (has_value) {
      *flag->value = std::string(inline_value);
    } else if (i + 1 < argc) {
      *flag->value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", flag->name, " needs a value"));
    }
  }
  return Outcome::kRun;
}

std::string CommandLine::Usage() const {
  std::string out = "Usage:\n";
  for (absl::string_view line : absl::StrSplit(synopsis_, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, "  ", line, "\n");
  }
  out.push_back('\n');
  AppendWrapped(description_, 0, 0, &out);
  for (const Group& g : groups_) {
    absl::StrAppend(&out, "\n", g.title, ":\n");
    for (const Flag& f : g.flags) {
      std::string left = absl::StrCat("  --", f.name);
      if (!f.value_name.empty()) absl::StrAppend(&left, " ", f.value_name);
      std::string help = f.help;
      if (!f.default_text.empty()) absl::StrAppend(&help, " (default: ", f.default_text, ")");
      if (left.size() + 2 > kUsageHelpColumn) {
        absl::StrAppend(&out, left, "\n", std::string(kUsageHelpColumn, ' '));
      } else {
        absl::StrAppend(&out, left, std::string(kUsageHelpColumn - left.size(), ' '));
      }
      AppendWrapped(help, kUsageHelpColumn, kUsageHelpColumn, &out);
    }
  }
  absl::StrAppend(&out, "\nOther:\n");
  absl::StrAppend(&out, "  --help", std::string(kUsageHelpColumn - 8, ' '),
                  "print this text and exit\n");
  absl::StrAppend(&out, "  --version", std::string(kUsageHelpColumn - 11, ' '),
                  "print the version and the git commit, then exit\n");
  if (!epilogue_.empty()) {
    out.push_back('\n');
    AppendWrapped(epilogue_, 0, 0, &out);
  }
  return out;
}

std::vector<std::string> CommandLine::FlagNames() const {
  std::vector<std::string> out;
  for (const Group& g : groups_) {
    for (const Flag& f : g.flags) out.push_back("--" + f.name);
  }
  out.push_back("--help");
  out.push_back("--version");
  return out;
}

}  // namespace ticktrace::collect
