// ticktrace-view's subcommands: flag specs, help text and dispatch. main()
// only calls RunViewer(); tests may call it too.
#ifndef TICKTRACE_VIEW_COMMANDS_H_
#define TICKTRACE_VIEW_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ticktrace::view {

// Exit statuses of ticktrace-view.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;  // missing file, not a store, unknown run/stage/order
inline constexpr int kExitUsageError = 2;    // bad flag, bad value, bad time
inline constexpr int kExitBudgetBreach = 1;  // check: a budget is breached (nothing failed)

// Runs the subcommand named by args[0] with the rest of `args` (argv without
// the program name). Reports go to `out`; an error is one line
// "ticktrace-view: ..." on `err`. Returns the exit status. `stdout_is_tty`
// lets top redraw in place. Call from the main thread (top handles SIGINT).
int RunViewer(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              bool stdout_is_tty = false);

// The exit status for a failed command: kExitUsageError for
// InvalidArgument, kExitRuntimeError otherwise.
int ExitStatusFor(const absl::Status& status);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_COMMANDS_H_
