// ticktrace-demo: runs the example pipeline under the collector and prints
// where the time went. See demo_runner.h for what it does, and --help.

#include "demo_options.h"
#include "demo_runner.h"

int main(int argc, char** argv) {
  using namespace ticktrace::examples;
  const DemoOptions options = ParseDemoFlagsOrExit(argc, argv);
  InstallDemoSignalHandlers();
  return RunDemo(options);
}
