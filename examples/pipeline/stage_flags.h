// The flags every pipeline program shares (--session, --work-ns, --pin,
// --tsc-hz, --queue-timeout-ms), registered on the one flag parser
// (common/flags.h), and the examples' comma-separated list values.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_
#define TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "stages.h"

namespace ticktrace::examples {

// A pipeline program's flags: usage "[flags]" and `summary` as its synopsis.
CommandSpec StageCommand(std::string summary);

// The shared options' defaults: the session from DefaultSession(), `work_ns`
// of busy work per message.
StageOptions DefaultStageOptions(uint64_t work_ns);

// Registers the shared flags writing into `*options`, whose current values are
// the defaults. `options` must outlive parsing.
void AddStageFlags(BoundFlags* flags, StageOptions* options);

// Parses the command line into `flags` (usage errors and --help exit there)
// and installs the stop handlers: what every program does before its loop.
void StartStage(BoundFlags* flags, const char* program, int argc, char** argv);

// Prints "<program>: <message>" (one line, no status code name in front:
// docs/viewer.md#exit-status-and-errors) and returns kExitError for main.
int StageFailed(const char* program, const absl::Status& status);

// main's exit code once the loop ended: kExitStopped when a signal ended it.
int StageExitCode(bool stopped);

// main() of a program that takes only the shared flags: parses them (with
// `work_ns` as --work-ns's default), runs `run(options)` (an
// absl::StatusOr<Result> whose Result has `stopped`), hands the result to
// `print` and returns the exit code.
template <typename RunFn, typename PrintFn>
int StageMain(int argc, char** argv, const char* program, std::string summary, uint64_t work_ns,
              RunFn run, PrintFn print) {
  StageOptions options = DefaultStageOptions(work_ns);
  BoundFlags flags(StageCommand(std::move(summary)));
  AddStageFlags(&flags, &options);
  StartStage(&flags, program, argc, argv);
  const auto result = run(options);
  if (!result.ok()) return StageFailed(program, result.status());
  print(*result);
  return StageExitCode(result->stopped);
}

// Parses "a,b,c" into exactly `count` unsigned integers; InvalidArgument in
// the one wording (BadFlagValue) naming `flag` otherwise.
absl::Status ParseUint64List(absl::string_view flag, absl::string_view text, size_t count,
                             std::vector<uint64_t>* out);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_
