// ticktrace-demo: runs the example pipeline under the collector and prints
// where the time went. See demo_runner.h for what it does, and --help.

#include <cstdio>

#include "demo_options.h"
#include "demo_runner.h"
#include "ticktrace/version.h"

int main(int argc, char** argv) {
  using namespace ticktrace::examples;
  absl::StatusOr<ParsedDemoFlags> parsed = ParseDemoFlags(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "ticktrace-demo: %s (see --help)\n",
                 std::string(parsed.status().message()).c_str());
    return kDemoBadInput;
  }
  if (parsed->help) {
    std::fputs(parsed->usage.c_str(), stdout);
    return kDemoOk;
  }
  if (parsed->version) {
    std::printf("%s\n", ticktrace::VersionLine("ticktrace-demo").c_str());
    return kDemoOk;
  }
  InstallDemoSignalHandlers();
  return RunDemo(parsed->options);
}
