// ticktrace-demo's orchestration: collector first, then gateway, strategy and
// feed; wait; stop everything in order; clean up; print the breakdown.
//
// Stopping, in every case (success, a failed child, a timeout, Ctrl-C):
//   1. the pipeline programs get SIGTERM (they close their queues and exit),
//      then SIGKILL after 3 s;
//   2. the collector gets SIGINT (it drains, flushes and exits 0), then
//      SIGKILL after 60 s or on a second Ctrl-C;
//   3. the session's example queues and any trace segment still in /dev/shm
//      are removed (each removal is reported).
// The children run in their own process group with a parent-death signal, so
// they also stop if the demo itself is killed.

#ifndef TICKTRACE_EXAMPLES_DEMO_DEMO_RUNNER_H_
#define TICKTRACE_EXAMPLES_DEMO_DEMO_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "demo_options.h"

namespace ticktrace::examples {

// Exit codes of ticktrace-demo.
inline constexpr int kDemoOk = 0;
inline constexpr int kDemoFailed = 1;
inline constexpr int kDemoBadInput = 2;  // bad flag, or a --db file that is not a ticktrace store
inline constexpr int kDemoInterrupted = 130;

// Makes SIGINT, SIGTERM and SIGHUP request a clean stop of the demo (a second
// one stops the collector without waiting). Call once from main().
void InstallDemoSignalHandlers();

// Runs the demo with `options`, printing to stdout (errors to stderr).
// Returns the exit code. Main thread only.
int RunDemo(const DemoOptions& options);

// The /dev/shm entries of `session`: trace segments ("ticktrace.<session>.*")
// and the example's queues ("ticktrace-example.<session>.*").
std::vector<std::string> SessionShmEntries(const std::string& session);

// True when /dev/shm/<name> is a regular file of this process's effective uid:
// the only entries the demo removes or counts as its session's (docs/security.md).
bool ShmEntryIsOurs(const std::string& name);

// Records published and not yet drained in the trace segment /dev/shm/`name`
// (0 for anything else, or a segment that cannot be opened). RemoveLeftovers
// and SweepStaleDemoSessions never unlink a segment that holds some.
uint64_t UndrainedRecords(const std::string& name);

// Removes what earlier demo runs left in /dev/shm when they were killed
// outright (SIGKILL: the children get SIGTERM and stop, but the collector may
// exit before it has removed their trace segments). Only sessions named like
// the demo's own, "demo-<time>-<pid>", whose demo process is gone, and only
// trace segments whose process is gone. Returns the names removed.
std::vector<std::string> SweepStaleDemoSessions();

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_DEMO_DEMO_RUNNER_H_
