// ticktrace-collector: parses flags (collector/app/command_line.h), then runs the
// collector (collector/app/collector.h).
// Exit codes: 0 done (and --help, --version); 1 runtime error (bad file, store
// not ours, calibration, a busy --metrics-listen port with --metrics-required);
// 2 usage error (unknown
// flag, bad value). Errors are one line on stderr.

#include <malloc.h>

#include <iostream>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "collector/app/collector.h"
#include "collector/app/command_line.h"
#include "collector/app/options.h"
#include "collector/metrics/metrics_server.h"
#include "common/flags.h"
#include "ticktrace/version.h"

namespace {

using ticktrace::collect::kCollectorProgram;

// Starts the --metrics-listen endpoint in `*server` and says where it is.
// A bad address is a usage error (exit 2); a port in use (or any other bind
// error) is returned, for the caller to judge by --metrics-required.
absl::Status StartMetrics(const std::string& listen,
                          std::optional<ticktrace::metrics::MetricsServer>* server) {
  absl::StatusOr<ticktrace::metrics::ListenAddress> address =
      ticktrace::metrics::ParseListenAddress(listen);
  if (!address.ok()) ticktrace::ExitWithUsageError(kCollectorProgram, address.status().message());
  server->emplace(std::string(ticktrace::kVersion), std::string(ticktrace::kGitCommit));
  if (absl::Status s = (*server)->Start(*address); !s.ok()) return s;
  std::string host = address->host.empty() ? "0.0.0.0" : address->host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::cout << kCollectorProgram << ": metrics at http://" << host << ":" << (*server)->port()
            << "/metrics\n"
            << std::flush;
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // Keep freed memory instead of returning it to the kernel: the drain loop
  // and the store writer reuse large buffers, and a page fault costs tens of
  // microseconds on a VM.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);

  const ticktrace::collect::CollectorFlags flags =
      ticktrace::collect::ParseFlagsOrExit(argc, argv);
  absl::StatusOr<ticktrace::collect::CollectorOptions> options =
      ticktrace::collect::OptionsFromFlags(flags);
  if (!options.ok()) ticktrace::ExitWithUsageError(kCollectorProgram, options.status().message());

  std::optional<ticktrace::metrics::MetricsServer> metrics;
  absl::Status s = absl::OkStatus();
  if (!flags.metrics_listen.empty()) {
    s = StartMetrics(flags.metrics_listen, &metrics);
    if (!s.ok() && !flags.metrics_required) {
      // Someone else holding the port must not stop the tracing: collect
      // without the endpoint, and say so once.
      std::cerr << kCollectorProgram << ": " << s.message()
                << "; collecting without /metrics (--metrics-required makes this fatal)\n";
      metrics.reset();
      s = absl::OkStatus();
    }
    options->metrics = metrics.has_value() ? &*metrics : nullptr;
  } else if (flags.metrics_required) {
    ticktrace::ExitWithUsageError(kCollectorProgram, "--metrics-required needs --metrics-listen");
  }
  if (s.ok()) s = ticktrace::collect::RunCollector(*options);
  if (!s.ok()) {
    std::cerr << kCollectorProgram << ": " << s.message() << "\n";
    return 1;
  }
  return 0;
}
