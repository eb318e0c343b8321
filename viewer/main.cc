// ticktrace-view: reads a ticktrace store. All logic is in ticktrace::view.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "viewer/cli/commands.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  return ticktrace::view::RunViewer(args, std::cout, std::cerr, ::isatty(STDOUT_FILENO) != 0);
}
