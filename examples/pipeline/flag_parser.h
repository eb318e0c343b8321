// A small command-line parser shared by the example programs and the demo:
// `--name=value`, `--name value`, and bare `--name` for booleans. Every
// problem (an unknown flag, a missing or malformed value, a stray argument)
// is an InvalidArgumentError whose message is one line naming the flag, so
// that a program can print it and exit 2.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_FLAG_PARSER_H_
#define TICKTRACE_EXAMPLES_PIPELINE_FLAG_PARSER_H_

#include <cstdint>
#include <functional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"

namespace ticktrace::examples {

class FlagParser {
 public:
  // `program` names the program in usage text; `summary` is one line on what it does.
  FlagParser(std::string program, std::string summary);

  // Registers a flag writing into `*out`, which keeps its current value as the
  // default. The pointer must outlive Parse().
  void AddString(std::string name, std::string* out, std::string help);
  void AddUint64(std::string name, uint64_t* out, std::string help);
  void AddInt(std::string name, int* out, std::string help);
  void AddDouble(std::string name, double* out, std::string help);
  void AddBool(std::string name, bool* out, std::string help);
  // A flag with its own value parser; `parse` returns an error message
  // (without the flag's name) or an OK status.
  void AddCustom(std::string name, std::string value_name,
                 std::function<absl::Status(absl::string_view)> parse, std::string help);

  // Parses argv[1..argc). `--help` sets help_requested(), `--version`
  // version_requested(), and stops parsing.
  absl::Status Parse(int argc, const char* const* argv);
  bool help_requested() const { return help_requested_; }
  bool version_requested() const { return version_requested_; }

  // Usage text: the summary and one line per flag with its default.
  std::string Usage() const;

  // Parses, and on --help prints Usage() to stdout and exits 0 (on --version
  // "<program> <version> (<commit>)", exit 0); on an error
  // prints "<program>: <message> (see --help)" to stderr and exits 2.
  void ParseOrExit(int argc, const char* const* argv);

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty for booleans
    std::string default_text;
    std::string help;
    std::function<absl::Status(absl::string_view)> parse;
  };
  const Flag* Find(absl::string_view name) const;

  std::string program_;
  std::string summary_;
  std::vector<Flag> flags_;
  bool help_requested_ = false;
  bool version_requested_ = false;
};

// Parses "a,b,c" into exactly `count` unsigned integers.
absl::Status ParseUint64List(absl::string_view text, size_t count, std::vector<uint64_t>* out);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_FLAG_PARSER_H_
