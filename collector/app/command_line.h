// The collector's command-line parser (collector/app/main.cc registers its flags
// here): our own usage text, no Abseil wording. Flags are spelled with dashes
// (--order-timeout-ms); the underscore spelling (--order_timeout_ms) and a
// single leading dash are accepted silently, as earlier releases took them.
//
//   --name VALUE, --name=VALUE      a value flag (the next argument is always
//                                   its value, so --order-timeout-ms -5 is a
//                                   bad value, not a missing one)
//   --name, --name=true|false       a boolean; --no-name (or --noname) is false
//   --help, -h / --version          Parse() says so and stops
//   --                              ends the flags (nothing may follow)
//
// Every problem is an InvalidArgumentError with one line naming the flag,
// for "<program>: <message> (see --help)" and exit 2.

#ifndef TICKTRACE_COLLECTOR_COMMAND_LINE_H_
#define TICKTRACE_COLLECTOR_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ticktrace::collect {

class CommandLine {
 public:
  // `synopsis`: the "Usage:" lines (without the heading); `description`: a
  // paragraph on what the program does.
  CommandLine(std::string program, std::string synopsis, std::string description);

  // Starts a group of flags in the usage text.
  void Section(std::string title);
  // A flag with a value, written into `*out` (whose current value is the
  // default shown in the usage text unless empty). `value_name` e.g. "MS".
  // The pointers must outlive Parse().
  void AddValue(std::string name, std::string value_name, std::string* out, std::string help);
  void AddBool(std::string name, bool* out, std::string help);
  // A closing paragraph (exit codes, where the docs are).
  void Epilogue(std::string text) { epilogue_ = std::move(text); }

  enum class Outcome { kRun, kHelp, kVersion };
  // Parses argv[1..argc).
  absl::StatusOr<Outcome> Parse(int argc, const char* const* argv);

  // The usage text --help prints, lines within 80 columns.
  std::string Usage() const;
  // Every flag's canonical spelling ("--session", ...), --help and --version
  // included: what shell completion offers.
  std::vector<std::string> FlagNames() const;

 private:
  struct Flag {
    std::string name;        // with dashes, without the leading "--"
    std::string value_name;  // empty: a boolean
    std::string help;
    std::string* value = nullptr;
    bool* boolean = nullptr;
    std::string default_text;
  };
  struct Group {
    std::string title;
    std::vector<Flag> flags;
  };
  // The flag `name` (dashes or underscores) names, or null.
  Flag* Find(absl::string_view name);

  std::string program_, synopsis_, description_, epilogue_;
  std::vector<Group> groups_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_COMMAND_LINE_H_
