// One command-line grammar, help layout and error wording for every program
// of ours: the collector, each viewer subcommand, the demo and the example
// pipeline's programs. A program describes its flags in a table
// (CommandSpec), then either reads the parsed words (ParseArgs -> ParsedArgs,
// as the viewer's subcommands do) or binds flags to its variables
// (BoundFlags, as the collector and the examples do).
//
//   --name VALUE, --name=VALUE    a value flag; the next word is always its
//                                 value, so --order-timeout-ms -5 is a bad
//                                 value, not a missing one
//   --name, --name=true|false     a boolean; --no-name is false
//   -name, --name_with_underscores  accepted silently, as earlier releases
//                                 (Abseil's flags) took them
//   --help, -h / --version        anywhere before "--": the usage text, or
//                                 "<program> <version> (<commit>)"
//   --                            ends the flags: what follows is positional
//   -5                            a word like a negative number is positional
//
// Every problem is an InvalidArgumentError whose message is one line naming
// the flag ("unknown flag '--x'", "--x needs a value (N)", "--x given twice",
// "--x: expected true or false, got 'maybe'", "unexpected argument 'y'"), for
// "<program>: <message> (see --help)" and exit status 2.

#ifndef TICKTRACE_COMMON_FLAGS_H_
#define TICKTRACE_COMMON_FLAGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ticktrace {

// One flag in a table.
struct FlagSpec {
  std::string name;        // with dashes, without the leading "--": "order-timeout-ms"
  std::string value_name;  // "MS"; empty for a boolean flag
  std::string help;
  bool required = false;
  bool hidden = false;       // accepted but not listed in --help (test hooks)
  std::string default_text{};  // shown as "(default: ...)" unless empty
  std::string section{};      // the heading it is listed under; empty: "flags"
  bool repeated = false;      // a value flag that may be given again (--budget A --budget B)
};

// A program's or a subcommand's command line: its flags and its help text.
struct CommandSpec {
  std::string name;         // a subcommand ("summary"); empty for a program's own flags
  std::string brief;        // a few words for a list of subcommands
  std::string synopsis;     // what it does, a sentence or two, after the usage line
  std::string description;  // a paragraph after the flags; may be empty
  std::vector<FlagSpec> flags;
  std::string positional_name;  // e.g. "ID": exactly one is taken; empty: none
  std::string example;
  // The usage lines after "usage: <program> "; empty: one line generated
  // from the flags ("summary [--run N] --db PATH ID").
  std::vector<std::string> usage{};
  // A value flag given twice: the last one counts (the collector, the
  // examples: wrappers append to a base command line) instead of an error.
  bool last_value_wins = false;
};

// The parsed command line of one CommandSpec.
class ParsedArgs {
 public:
  // True when the value flag was given, or the boolean flag is on.
  bool Has(absl::string_view name) const { return values_.count(std::string(name)) > 0; }
  // The flag's value, or nullopt when not given (or a boolean flag); a
  // repeated flag's last.
  std::optional<std::string> Value(absl::string_view name) const;
  // Every value of a repeated flag (FlagSpec::repeated), in the order given.
  std::vector<std::string> Values(absl::string_view name) const;
  // True when the boolean flag was turned off (--no-name, --name=false).
  bool IsOff(absl::string_view name) const { return off_.count(std::string(name)) > 0; }
  // The flag's value parsed as an integer >= `min`; nullopt when not given.
  // InvalidArgument naming the flag when it is not such an integer.
  absl::StatusOr<std::optional<int64_t>> IntValue(absl::string_view name, int64_t min) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  friend absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                              const std::vector<std::string>& args);
  std::map<std::string, std::optional<std::string>> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
  std::vector<std::string> positionals_;
  std::set<std::string> off_;
};

// Parses `args` (the words after the program, or after the subcommand)
// against `spec`: unknown flags, missing values, repeated value flags
// (unless spec.last_value_wins), missing required flags and unexpected
// positionals are errors. --help, -h and --version are not flags here: ask
// WantsHelp / WantsVersion first.
absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                     const std::vector<std::string>& args);

// True when `args` asks for help (--help or -h) / the version (--version)
// anywhere before "--".
bool WantsHelp(const std::vector<std::string>& args);
bool WantsVersion(const std::vector<std::string>& args);

// The --help text of `spec` for `program`: "usage: <program> [<name>] ...",
// the synopsis, the flags by section with --help and --version, the
// description and the example; lines within 80 columns where words allow.
std::string CommandHelp(absl::string_view program, const CommandSpec& spec);

// One value in the common wording: "<flag>: expected <what>, got '<text>'".
absl::Status BadFlagValue(absl::string_view flag, absl::string_view what, absl::string_view text);
// "--flag" parsed as a number; BadFlagValue otherwise.
absl::StatusOr<int64_t> ParseIntFlag(absl::string_view flag, absl::string_view text);
absl::StatusOr<uint64_t> ParseUintFlag(absl::string_view flag, absl::string_view text);
absl::StatusOr<double> ParseDoubleFlag(absl::string_view flag, absl::string_view text);

// Flags bound to the caller's variables, for a program's main(): each Add*
// registers a flag of spec() that writes into `*out` when given; `*out`'s
// value at registration is the default --help shows. The pointers must
// outlive Parse().
class BoundFlags {
 public:
  explicit BoundFlags(CommandSpec spec) : spec_(std::move(spec)) {}

  void AddString(FlagSpec flag, std::string* out);
  void AddInt(FlagSpec flag, int* out);
  void AddUint64(FlagSpec flag, uint64_t* out);
  void AddDouble(FlagSpec flag, double* out);
  void AddBool(FlagSpec flag, bool* out);
  // A value flag that may be given again (--budget A --budget B): every
  // value, in the order given.
  void AddRepeated(FlagSpec flag, std::vector<std::string>* out);
  // A flag with its own parser of the value; `parse` gets the flag ("--x")
  // and the text, and returns InvalidArgument in BadFlagValue's wording.
  void AddCustom(FlagSpec flag,
                 std::function<absl::Status(absl::string_view flag, absl::string_view text)> parse);

  enum class Outcome { kRun, kHelp, kVersion };
  // Parses argv[1..argc) into the bound variables, in the order they were
  // added (a flag that implies another, like the demo's --cpus, comes after it).
  absl::StatusOr<Outcome> Parse(int argc, const char* const* argv);

  // Parse(), and on --help prints CommandHelp() to stdout and exits 0, on
  // --version prints VersionLine(program) and exits 0, on an error
  // ExitWithUsageError(). Returns only to run.
  void ParseOrExit(absl::string_view program, int argc, const char* const* argv);

  const CommandSpec& spec() const { return spec_; }

 private:
  using ValueParser = std::function<absl::Status(absl::string_view, absl::string_view)>;
  struct Binding {
    std::string name;
    bool* boolean = nullptr;  // a boolean flag
    std::vector<std::string>* values = nullptr;  // a repeated flag
    ValueParser parse;  // else: takes the value
  };
  void Add(FlagSpec flag, std::string default_text, ValueParser parse);

  CommandSpec spec_;
  std::vector<Binding> bindings_;
};

// Prints "<program>: <message> (see --help)" on stderr and exits 2.
[[noreturn]] void ExitWithUsageError(absl::string_view program, absl::string_view message);

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_FLAGS_H_
