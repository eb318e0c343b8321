#include "stage_flags.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "stage_runtime.h"

namespace ticktrace::examples {

CommandSpec StageCommand(std::string summary) {
  CommandSpec spec;
  spec.usage = {"[flags]"};
  spec.synopsis = std::move(summary);
  spec.last_value_wins = true;
  return spec;
}

StageOptions DefaultStageOptions(uint64_t work_ns) {
  StageOptions options;
  options.session = DefaultSession();
  options.work_ns = work_ns;
  return options;
}

void StartStage(BoundFlags* flags, const char* program, int argc, char** argv) {
  flags->ParseOrExit(program, argc, argv);
  InstallStopHandlers();
}

int StageFailed(const char* program, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", program, std::string(status.message()).c_str());
  return kExitError;
}

int StageExitCode(bool stopped) { return stopped ? kExitStopped : kExitOk; }

void AddStageFlags(BoundFlags* flags, StageOptions* options) {
  flags->AddString({"session", "NAME",
                    "trace session; also names the example's queues ($TICKTRACE_SESSION)"},
                   &options->session);
  flags->AddUint64({"work-ns", "NS", "busy-wait work per message, in ns"}, &options->work_ns);
  flags->AddInt({"pin", "CPU", "pin to this cpu; -1: do not pin"}, &options->pin_cpu);
  flags->AddDouble(
      {"tsc-hz", "HZ", "TSC frequency for the busy-wait; 0: calibrate at start (~0.5 s)"},
      &options->tsc_hz);
  flags->AddUint64(
      {"queue-timeout-ms", "MS", "how long to wait for the other side's queue to appear"},
      &options->queue_timeout_ms);
}

absl::Status ParseUint64List(absl::string_view flag, absl::string_view text, size_t count,
                             std::vector<uint64_t>* out) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ',');
  const std::string what = absl::StrCat(count, " comma-separated non-negative integers");
  if (parts.size() != count) return BadFlagValue(flag, what, text);
  out->clear();
  for (absl::string_view p : parts) {
    uint64_t v = 0;
    if (p.empty() || p[0] == '-' || !absl::SimpleAtoi(p, &v)) return BadFlagValue(flag, what, text);
    out->push_back(v);
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::examples
