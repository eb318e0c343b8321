// Command-line parsing for ticktrace-view's subcommands: "--flag value",
// "--flag=value", boolean "--flag", positionals, and generated --help text.
//
// absl::ParseCommandLine is process-global and has no subcommands, so the
// viewer parses its own small grammar. Every error is InvalidArgument (a
// usage error: exit status 2).
#ifndef TICKTRACE_VIEW_ARGS_H_
#define TICKTRACE_VIEW_ARGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::view {

// One flag of a subcommand.
struct FlagSpec {
  std::string name;        // without the dashes: "db"
  std::string value_name;  // "PATH"; empty for a boolean flag
  std::string help;
  bool required = false;
  bool hidden = false;  // accepted but not listed in --help (test hooks)
};

// A subcommand: its flags, its positionals and its help text.
struct CommandSpec {
  std::string name;
  std::string brief;        // a few words for the list of subcommands
  std::string synopsis;     // what it shows, a sentence or two
  std::string description;  // a paragraph after the flags; may be empty
  std::vector<FlagSpec> flags;
  std::string positional_name;  // e.g. "ID"; empty when none are taken
  std::string example;
};

// The parsed command line of one subcommand.
class ParsedArgs {
 public:
  // True when the flag was given.
  bool Has(absl::string_view name) const { return values_.count(std::string(name)) > 0; }
  // The flag's value, or nullopt when not given (or a boolean flag).
  std::optional<std::string> Value(absl::string_view name) const;
  // The flag's value parsed as an integer >= `min`; nullopt when not given.
  // InvalidArgument naming the flag when it is not such an integer.
  absl::StatusOr<std::optional<int64_t>> IntValue(absl::string_view name, int64_t min) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  friend absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                              const std::vector<std::string>& args);
  std::map<std::string, std::optional<std::string>> values_;
  std::vector<std::string> positionals_;
};

// Parses `args` (the words after the subcommand) against `spec`:
// unknown flags, missing values, repeated or missing required flags and
// unexpected positionals are errors. A word that looks like a negative
// number is a positional, not a flag.
absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                     const std::vector<std::string>& args);

// True when `args` asks for help (--help or -h anywhere before "--").
bool WantsHelp(const std::vector<std::string>& args);

// The --help text of `spec`, for program `program`.
std::string CommandHelp(absl::string_view program, const CommandSpec& spec);

// The flags that name the store a subcommand reads: --store URI (sqlite:PATH,
// a plain path, or clickhouse://HOST:PORT/DB) and --db PATH, its short form.
FlagSpec StoreFlag();
FlagSpec DbFlag();

// The store `args` names, parsed (store::ParseStoreUri), as store::OpenReader
// takes it: --store URI, or --db PATH (a SQLite file). InvalidArgument when
// neither or both are given, or when the URI does not parse. The flags are
// --`store_flag` and --`db_flag` (diff's baseline: against-store, against-db).
absl::StatusOr<store::StoreUri> StoreUriFromArgs(const ParsedArgs& args,
                                                 absl::string_view store_flag = "store",
                                                 absl::string_view db_flag = "db");

// Parses a decimal integer that may be a 64-bit order ID: a signed value,
// or an unsigned one above INT64_MAX, kept as its two's-complement bits
// (the store keeps order IDs in SQLite's signed INTEGER).
std::optional<int64_t> ParseOrderId(absl::string_view text);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_ARGS_H_
