// ClickHouseServer (clickhouse_server.h): a real clickhouse-server per test
// fixture, on free ports, in a temporary directory.

#include "tests/support/clickhouse_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ticktrace::testing {
namespace {

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// A port nobody listens on right now: bind port 0 on loopback, read it, close.
// Another process may take it before the server binds; Start() retries then.
absl::StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("picking a free port: ", strerror(e)));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Decodes a chunked transfer-encoded body.
std::string Dechunk(std::string_view body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos) break;
    std::string_view size_hex = body.substr(pos, eol - pos);
    if (const size_t semi = size_hex.find(';'); semi != std::string_view::npos) {
      size_hex = size_hex.substr(0, semi);
    }
    const unsigned long n = std::strtoul(std::string(size_hex).c_str(), nullptr, 16);
    if (n == 0) break;
    pos = eol + 2;
    out.append(body.substr(pos, n));
    pos += n + 2;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> HttpPost(const std::string& host, int port, std::string_view target,
                                     std::string_view body, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) {
    return absl::UnavailableError(absl::StrCat("http://", host, ":", port, ": cannot resolve"));
  }
  const int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) {
    freeaddrinfo(res);
    return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
  }
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int c = connect(fd, res->ai_addr, res->ai_addrlen);
  const int connect_errno = errno;
  freeaddrinfo(res);
  if (c != 0) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("http://", host, ":", port, ": ", strerror(connect_errno)));
  }
  const std::string request =
      absl::StrCat("POST ", std::string(target), " HTTP/1.0\r\nHost: ", host, ":", port,
                   "\r\nConnection: close\r\nContent-Length: ", body.size(), "\r\n\r\n") +
      std::string(body);
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      const int e = errno;
      close(fd);
      return absl::UnavailableError(absl::StrCat("http://", host, ":", port, ": send: ",
                                                 strerror(e)));
    }
    sent += static_cast<size_t>(n);
  }
  std::string response;
  char buf[65536];
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      close(fd);
      return absl::UnavailableError(absl::StrCat("http://", host, ":", port, ": recv: ",
                                                 strerror(e)));
    }
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t header_end = response.find("\r\n\r\n");
  if (header_end == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("http://", host, ":", port, ": incomplete response (", response.size(),
                     " bytes)"));
  }
  const std::string headers = response.substr(0, header_end);
  std::string content = response.substr(header_end + 4);
  if (absl::StrContains(absl::AsciiStrToLower(headers), "transfer-encoding: chunked")) {
    content = Dechunk(content);
  }
  const std::string status_line = headers.substr(0, headers.find("\r\n"));
  if (!absl::StrContains(status_line, " 200 ")) {
    return absl::InternalError(absl::StrCat(status_line, ": ", absl::StripAsciiWhitespace(content)));
  }
  return content;
}

std::optional<ClickHouseServer::Binary> ClickHouseServer::FindBinary() {
  if (const char* env = getenv("TICKTRACE_CLICKHOUSE_SERVER"); env && *env) {
    if (IsExecutable(env)) return Binary{{env}};
    return std::nullopt;
  }
  for (const char* path : {"/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server"}) {
    if (IsExecutable(path)) return Binary{{path}};
  }
  if (IsExecutable("/usr/bin/clickhouse")) return Binary{{"/usr/bin/clickhouse", "server"}};
  return std::nullopt;
}

std::optional<std::string> ClickHouseServer::SkipReason() {
  if (FindBinary()) return std::nullopt;
  if (const char* env = getenv("TICKTRACE_CLICKHOUSE_SERVER"); env && *env) {
    return absl::StrCat("TICKTRACE_CLICKHOUSE_SERVER=", env, " is not an executable");
  }
  return std::string(
      "clickhouse-server is not installed (no /usr/bin/clickhouse-server, "
      "/usr/sbin/clickhouse-server or /usr/bin/clickhouse): apt-get install clickhouse-server");
}

ClickHouseServer::ClickHouseServer(Options options, Binary binary, std::string dir)
    : options_(std::move(options)), binary_(std::move(binary)), dir_(std::move(dir)) {}

absl::StatusOr<std::unique_ptr<ClickHouseServer>> ClickHouseServer::Start(Options options) {
  std::optional<Binary> binary = FindBinary();
  if (!binary) return absl::FailedPreconditionError(*SkipReason());
  if (options.listen_hosts.empty()) options.listen_hosts = {"127.0.0.1"};
  char tmpl[] = "/tmp/ticktrace_ch_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp /tmp/ticktrace_ch_*: ", strerror(errno)));
  }
  std::unique_ptr<ClickHouseServer> server(
      new ClickHouseServer(std::move(options), std::move(*binary), tmpl));
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    for (int* port : {&server->http_port_, &server->tcp_port_, &server->interserver_port_}) {
      absl::StatusOr<int> p = PickFreePort();
      if (!p.ok()) return p.status();
      *port = *p;
    }
    if (server->http_port_ == server->tcp_port_ || server->tcp_port_ == server->interserver_port_ ||
        server->http_port_ == server->interserver_port_) {
      continue;
    }
    if (absl::Status s = server->WriteConfig(); !s.ok()) return s;
    last = server->Launch();
    if (last.ok()) last = server->WaitReady();
    if (last.ok()) return server;
    server->Kill();
  }
  return last;
}

ClickHouseServer::~ClickHouseServer() {
  if (running()) {
    absl::Status s = Stop(std::chrono::seconds(30));
    (void)s;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

absl::Status ClickHouseServer::WriteConfig() const {
  std::error_code ec;
  for (const char* sub : {"data", "tmp", "log", "user_files", "format_schemas"}) {
    std::filesystem::create_directories(absl::StrCat(dir_, "/", sub), ec);
    if (ec) return absl::InternalError(absl::StrCat(dir_, "/", sub, ": ", ec.message()));
  }
  std::string listen;
  for (const std::string& h : options_.listen_hosts) {
    absl::StrAppend(&listen, "  <listen_host>", h, "</listen_host>\n");
  }
  // Small caches: several servers may run at once on a small machine.
  const std::string config = absl::StrCat(
      "<?xml version=\"1.0\"?>\n<yandex>\n"
      "  <logger><level>warning</level><log>", dir_, "/log/server.log</log><errorlog>", dir_,
      "/log/server.err.log</errorlog><size>10M</size><count>1</count></logger>\n"
      "  <http_port>", http_port_, "</http_port>\n"
      "  <tcp_port>", tcp_port_, "</tcp_port>\n"
      "  <interserver_http_port>", interserver_port_, "</interserver_http_port>\n",
      listen,
      "  <path>", dir_, "/data/</path>\n"
      "  <tmp_path>", dir_, "/tmp/</tmp_path>\n"
      "  <user_files_path>", dir_, "/user_files/</user_files_path>\n"
      "  <format_schema_path>", dir_, "/format_schemas/</format_schema_path>\n"
      "  <users_config>", dir_, "/users.xml</users_config>\n"
      "  <default_profile>default</default_profile>\n"
      "  <default_database>default</default_database>\n"
      "  <timezone>UTC</timezone>\n"
      "  <mark_cache_size>268435456</mark_cache_size>\n"
      "  <uncompressed_cache_size>268435456</uncompressed_cache_size>\n"
      "  <max_concurrent_queries>100</max_concurrent_queries>\n"
      "  <mlock_executable>false</mlock_executable>\n"
      "</yandex>\n");
  // One user, `default`, no password, from anywhere the server listens (the
  // listen hosts are loopback and the tests' own veth addresses).
  const std::string users =
      "<?xml version=\"1.0\"?>\n<yandex>\n"
      "  <profiles><default><max_memory_usage>4000000000</max_memory_usage>"
      "<log_queries>0</log_queries></default></profiles>\n"
      "  <users><default><password></password><networks><ip>::/0</ip></networks>"
      "<profile>default</profile><quota>default</quota></default></users>\n"
      "  <quotas><default><interval><duration>3600</duration><queries>0</queries>"
      "<errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows>"
      "<execution_time>0</execution_time></interval></default></quotas>\n"
      "</yandex>\n";
  for (const auto& [name, text] : {std::pair{"config.xml", &config}, {"users.xml", &users}}) {
    const std::string path = absl::StrCat(dir_, "/", name);
    std::ofstream out(path, std::ios::trunc);
    out << *text;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("writing ", path));
  }
  return absl::OkStatus();
}

absl::Status ClickHouseServer::Launch() {
  std::vector<std::string> argv = binary_.argv_prefix;
  argv.push_back(absl::StrCat("--config-file=", dir_, "/config.xml"));
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string out_log = absl::StrCat(dir_, "/log/stdout.log");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    // Async-signal-safe only from here to exec.
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(126);
    if (getppid() != parent) _exit(126);
    const int log = open(out_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    if (chdir(dir_.c_str()) != 0) _exit(125);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  pid_ = pid;
  return absl::OkStatus();
}

absl::Status ClickHouseServer::WaitReady() {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  absl::Status last;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat(
          "clickhouse-server exited at start (status ", status, ") on HTTP port ", http_port_,
          "; log:\n", LogTail()));
    }
    absl::StatusOr<std::string> r =
        HttpPost(host(), http_port_, "/", "SELECT 1", std::chrono::milliseconds(2000));
    if (r.ok() && absl::StripAsciiWhitespace(*r) == "1") return absl::OkStatus();
    last = r.ok() ? absl::InternalError(absl::StrCat("SELECT 1 answered '", *r, "'")) : r.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::UnavailableError(absl::StrCat("clickhouse-server on HTTP port ", http_port_,
                                             " did not answer SELECT 1 within ",
                                             options_.start_timeout.count(), " s (", last.message(),
                                             "); log:\n", LogTail()));
}

absl::Status ClickHouseServer::Stop(std::chrono::seconds grace) {
  if (pid_ <= 0) return absl::OkStatus();
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      Kill();
      return absl::DeadlineExceededError(absl::StrCat(
          "clickhouse-server did not stop within ", grace.count(), " s of SIGTERM; killed"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid_, SIGKILL);  // anything it started
  pid_ = -1;
  return absl::OkStatus();
}

void ClickHouseServer::Kill() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

absl::Status ClickHouseServer::Restart() {
  if (running()) {
    return absl::FailedPreconditionError("ClickHouseServer::Restart: the server is running");
  }
  // The ports were ours until Stop(); a server just killed may leave its
  // sockets in TIME_WAIT, which ClickHouse's SO_REUSEADDR listen tolerates.
  absl::Status s = Launch();
  if (s.ok()) s = WaitReady();
  return s;
}

std::string ClickHouseServer::Uri(std::string_view database) const {
  return Uri(database, host());
}

std::string ClickHouseServer::Uri(std::string_view database, std::string_view host) const {
  return absl::StrCat("clickhouse://", std::string(host), ":", http_port_, "/",
                      std::string(database));
}

absl::StatusOr<std::string> ClickHouseServer::Query(std::string_view sql) const {
  return HttpPost(host(), http_port_, "/", sql);
}

std::string ClickHouseServer::LogTail(size_t bytes) const {
  std::string all;
  for (const char* name : {"stdout.log", "server.err.log"}) {
    std::string text = ReadAll(absl::StrCat(dir_, "/log/", name));
    if (text.size() > bytes) text = text.substr(text.size() - bytes);
    if (!text.empty()) absl::StrAppend(&all, "--- ", name, " ---\n", text);
  }
  return all.empty() ? std::string("(no log)") : all;
}

}  // namespace ticktrace::testing
