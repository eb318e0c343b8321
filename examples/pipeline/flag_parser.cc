#include "flag_parser.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "ticktrace/version.h"

namespace ticktrace::examples {

FlagParser::FlagParser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void FlagParser::AddString(std::string name, std::string* out, std::string help) {
  flags_.push_back({std::move(name), "TEXT", out->empty() ? "" : absl::StrCat("\"", *out, "\""),
                    std::move(help),
                    [out](absl::string_view v) {
                      *out = std::string(v);
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddUint64(std::string name, uint64_t* out, std::string help) {
  flags_.push_back({std::move(name), "N", absl::StrCat(*out), std::move(help),
                    [out](absl::string_view v) {
                      if (!absl::SimpleAtoi(v, out) || v.empty() || v[0] == '-') {
                        return absl::InvalidArgumentError(
                            absl::StrCat("expected a non-negative integer, got '", v, "'"));
                      }
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddInt(std::string name, int* out, std::string help) {
  flags_.push_back({std::move(name), "N", absl::StrCat(*out), std::move(help),
                    [out](absl::string_view v) {
                      if (!absl::SimpleAtoi(v, out)) {
                        return absl::InvalidArgumentError(
                            absl::StrCat("expected an integer, got '", v, "'"));
                      }
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddDouble(std::string name, double* out, std::string help) {
  flags_.push_back({std::move(name), "X", absl::StrCat(*out), std::move(help),
                    [out](absl::string_view v) {
                      if (!absl::SimpleAtod(v, out)) {
                        return absl::InvalidArgumentError(
                            absl::StrCat("expected a number, got '", v, "'"));
                      }
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddBool(std::string name, bool* out, std::string help) {
  flags_.push_back({std::move(name), "", *out ? "true" : "false", std::move(help),
                    [out](absl::string_view v) {
                      if (!absl::SimpleAtob(v, out)) {
                        return absl::InvalidArgumentError(
                            absl::StrCat("expected true or false, got '", v, "'"));
                      }
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddCustom(std::string name, std::string value_name,
                           std::function<absl::Status(absl::string_view)> parse,
                           std::string help) {
  flags_.push_back({std::move(name), std::move(value_name), "", std::move(help),
                    std::move(parse)});
}

const FlagParser::Flag* FlagParser::Find(absl::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status FlagParser::Parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    if (arg == "--version") {
      version_requested_ = true;
      return absl::OkStatus();
    }
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
    arg.remove_prefix(2);
    absl::string_view name = arg;
    absl::string_view value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); eq != absl::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!has_value) {
      if (flag->value_name.empty()) {
        value = "true";  // a bare boolean
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, ": missing value (", flag->value_name, ")"));
      }
    }
    if (absl::Status s = flag->parse(value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

std::string FlagParser::Usage() const {
  std::string out = absl::StrCat("usage: ", program_, " [flags]\n", summary_, "\n\nflags:\n");
  for (const Flag& f : flags_) {
    const std::string head =
        f.value_name.empty() ? absl::StrCat("--", f.name)
                             : absl::StrCat("--", f.name, "=", f.value_name);
    absl::StrAppendFormat(&out, "  %-28s %s", head, f.help);
    if (!f.default_text.empty()) absl::StrAppend(&out, " (default: ", f.default_text, ")");
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  --help                       this text\n");
  absl::StrAppend(&out, "  --version                    the version and git commit it was built from\n");
  return out;
}

void FlagParser::ParseOrExit(int argc, const char* const* argv) {
  const absl::Status s = Parse(argc, argv);
  if (help_requested_) {
    std::fputs(Usage().c_str(), stdout);
    std::exit(0);
  }
  if (version_requested_) {
    std::printf("%s\n", VersionLine(program_).c_str());
    std::exit(0);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program_.c_str(),
                 std::string(s.message()).c_str());
    std::exit(2);
  }
}

absl::Status ParseUint64List(absl::string_view text, size_t count, std::vector<uint64_t>* out) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ',');
  if (parts.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", count, " comma-separated integers, got '", text, "'"));
  }
  out->clear();
  for (absl::string_view p : parts) {
    uint64_t v = 0;
    if (p.empty() || p[0] == '-' || !absl::SimpleAtoi(p, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a non-negative integer, got '", p, "' in '", text, "'"));
    }
    out->push_back(v);
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::examples
