// Test fixture: a real ClickHouse server (Debian's clickhouse-server, 18.16)
// of the test's own, on free loopback ports, with a temporary config.xml,
// users.xml and data directory. No mock of ClickHouse exists anywhere
// (a mock would not catch the server's own behaviour): tests that need a
// store start one of these.
//
//   if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
//   absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start();
//   ASSERT_TRUE(ch.ok()) << ch.status();
//   ... (*ch)->Uri("tt") ...            // "clickhouse://127.0.0.1:PORT/tt"
//   (*ch)->Stop(); (*ch)->Restart();    // same data directory, same ports
//   // the destructor stops the server and removes the directory
//
// The server process leads its own process group and gets SIGKILL when the
// test process dies (PR_SET_PDEATHSIG), so an aborted test leaves no server;
// only its temporary directory (/tmp/ticktrace_ch_*) may remain then.
//
// Thread model: one thread at a time per fixture (the test's main thread: the
// parent-death signal follows the thread that forked the server).
#ifndef TICKTRACE_TESTS_SUPPORT_CLICKHOUSE_SERVER_H_
#define TICKTRACE_TESTS_SUPPORT_CLICKHOUSE_SERVER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::testing {

class ClickHouseServer {
 public:
  struct Options {
    // Addresses the server listens on (all on the same ports). The multi-host
    // tests add the root namespace's ends of their veth pairs.
    std::vector<std::string> listen_hosts = {"127.0.0.1"};
    // How long Start()/Restart() wait for `SELECT 1` to answer.
    std::chrono::seconds start_timeout{90};
  };

  // The server binary to run: $TICKTRACE_CLICKHOUSE_SERVER when set, else
  // clickhouse-server in /usr/bin or /usr/sbin, else `clickhouse server`
  // (argv_prefix gets the "server" argument). nullopt when none is installed.
  struct Binary {
    std::vector<std::string> argv_prefix;
  };
  static std::optional<Binary> FindBinary();

  // Why a test must skip: clickhouse-server is not installed. nullopt when a
  // server can be started. Tests call it before Start():
  //   if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
  static std::optional<std::string> SkipReason();

  // Creates /tmp/ticktrace_ch_XXXXXX (config, users, data, logs), picks free
  // ports (HTTP, native TCP, interserver) and starts the server; returns once
  // `SELECT 1` answers over HTTP. A port taken between the pick and the bind
  // is retried with new ports (3 tries). FailedPrecondition when no binary;
  // Unavailable (with the server's log tail) when it does not come up.
  static absl::StatusOr<std::unique_ptr<ClickHouseServer>> Start(Options options);
  static absl::StatusOr<std::unique_ptr<ClickHouseServer>> Start() { return Start(Options{}); }

  // Stops the server (if running) and removes the temporary directory.
  ~ClickHouseServer();
  ClickHouseServer(const ClickHouseServer&) = delete;
  ClickHouseServer& operator=(const ClickHouseServer&) = delete;

  // SIGTERM, then SIGKILL after `grace`; waits until the process is gone.
  // The data directory stays. OK when it is not running.
  absl::Status Stop(std::chrono::seconds grace = std::chrono::seconds(30));
  // SIGKILL at once (a crash, for tests of a server that vanishes).
  void Kill();
  // Starts it again on the same data directory and ports; waits for SELECT 1.
  // REQUIRES: stopped (Stop() or Kill()).
  absl::Status Restart();
  bool running() const { return pid_ > 0; }

  // The first listen host (127.0.0.1 by default) and the HTTP port.
  const std::string& host() const { return options_.listen_hosts.front(); }
  int http_port() const { return http_port_; }
  int tcp_port() const { return tcp_port_; }
  // "clickhouse://HOST:PORT/DATABASE" on the first listen host, or on `host`.
  std::string Uri(std::string_view database) const;
  std::string Uri(std::string_view database, std::string_view host) const;
  // The temporary directory (config.xml, users.xml, data/, log/).
  const std::string& dir() const { return dir_; }

  // Runs `sql` over HTTP (POST, body = the query) and returns the response
  // body (TSV by default). Not a store client: for tests to create a
  // database, look at rows, and wait for readiness. Unavailable when the
  // server cannot be reached, Internal with the server's message otherwise.
  absl::StatusOr<std::string> Query(std::string_view sql) const;

  // The last `bytes` of the server's logs (stdout/stderr and error log), for
  // failure messages.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  ClickHouseServer(Options options, Binary binary, std::string dir);
  absl::Status WriteConfig() const;
  absl::Status Launch();
  absl::Status WaitReady();

  Options options_;
  Binary binary_;
  std::string dir_;
  int http_port_ = 0;
  int tcp_port_ = 0;
  int interserver_port_ = 0;
  pid_t pid_ = -1;
};

// Plain HTTP/1.0 POST of `body` to http://host:port/`target` (e.g.
// "/?query=..."), reading the whole response. Returns the body when the
// status is 200; Unavailable when the connection fails, Internal with the
// status line and the body otherwise. `timeout` bounds the whole exchange.
absl::StatusOr<std::string> HttpPost(const std::string& host, int port, std::string_view target,
                                     std::string_view body,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_SUPPORT_CLICKHOUSE_SERVER_H_
