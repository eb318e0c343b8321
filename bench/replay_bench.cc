// replay_bench: a collector binary's replay of collector_bench's archive,
// measured from outside, so that two builds of the collector (before and
// after a change) replay the very same archive with the very same driver.
//
//   replay_bench --archive PATH --write-only [--records N]
//   replay_bench --collector PATH --archive PATH [--store off|sqlite|clickhouse]
//                [--detail all|tail|none] [--dir DIR]
//
// --write-only writes the archive (bench_archive.h: 3 processes, whole orders
// of 4 records, ids counting up, so every emitted order lingers and leaves its
// id in the instance memory) and a sidecar PATH.records with its record count.
// Otherwise: `PATH --replay ARCHIVE --pipeline md_rx,decide,order_sent` with
// no store (--store off), a new SQLite store in DIR, or a ClickHouse server of
// its own (tests/support/clickhouse_server.h; it shares the machine's cores),
// plus --detail when given. Wall time runs from the fork to the exit (the
// store's last commit comes before it); CPU is the collector process's user +
// system time (wait4), every thread of it. Samples are the store's `samples`
// counter of the run (stage samples computed, `total` included).
//
// Output: a line for the reader and METRIC lines (bench_util.h) for
// bench/run_all.sh; "skipped: <reason>" (and METRIC|skipped|1) when the
// ClickHouse server is not installed. Exit status 1 when the replay failed.

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "bench_archive.h"
#include "bench_process.h"
#include "bench_setup.h"
#include "bench_util.h"
#include "store/clickhouse/http_client.h"
#include "store_poll.h"
#include "tests/support/clickhouse_server.h"

namespace {

namespace tb = ticktrace::bench;
using tb::PrintMetric;

struct Options {
  std::string collector, archive, store = "sqlite", detail, dir = "/tmp";
  uint64_t records = 20'000'000;
  bool write_only = false;
};

bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--collector" && has)
      o->collector = argv[++i];
    else if (a == "--archive" && has)
      o->archive = argv[++i];
    else if (a == "--records" && has)
      o->records = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--store" && has)
      o->store = argv[++i];
    else if (a == "--detail" && has)
      o->detail = argv[++i];
    else if (a == "--dir" && has)
      o->dir = argv[++i];
    else if (a == "--write-only")
      o->write_only = true;
    else {
      std::fprintf(stderr,
                   "usage: replay_bench --archive PATH --write-only [--records N]\n"
                   "       replay_bench --collector PATH --archive PATH "
                   "[--store off|sqlite|clickhouse] [--detail all|tail|none] [--dir DIR]\n");
      return false;
    }
  }
  if (o->archive.empty()) {
    std::fprintf(stderr, "replay_bench: --archive is required\n");
    return false;
  }
  if (!o->write_only && o->collector.empty()) {
    std::fprintf(stderr, "replay_bench: --collector is required (or --write-only)\n");
    return false;
  }
  if (o->store != "off" && o->store != "sqlite" && o->store != "clickhouse") {
    std::fprintf(stderr, "replay_bench: --store '%s': off, sqlite or clickhouse\n",
                 o->store.c_str());
    return false;
  }
  if (o->write_only && !(o->records >= 4)) {
    std::fprintf(stderr, "replay_bench: --records must be at least 4\n");
    return false;
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

double MonotonicS() { return static_cast<double>(tb::MonotonicNs()) * 1e-9; }

// The store's `samples` counter of its newest run, or -1.
int64_t SqliteSamples(const std::string& db) {
  tb::StorePoll poll(db, "SELECT 1");
  return poll
      .QueryInt(
          "SELECT value FROM counters WHERE name = 'samples' AND run_id = "
          "(SELECT max(run_id) FROM runs)")
      .value_or(-1);
}

int64_t ClickHouseSamples(const ticktrace::testing::ClickHouseServer& server,
                          const std::string& database) {
  ticktrace::store::HttpClient client(
      ticktrace::store::HttpClientOptions::FromEnvironment("127.0.0.1", server.http_port()));
  absl::StatusOr<std::string> n = client.Query(
      "SELECT argMax(value, version) FROM counters WHERE name = 'samples' AND run_id = "
      "(SELECT max(run_id) FROM runs) AND version IN (SELECT batch FROM batches)",
      database);
  int64_t v = -1;
  if (!n.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*n), &v)) return -1;
  return v;
}

struct Run {
  bool ok = false;
  std::string note;
  double wall_s = 0, cpu_s = 0;
};

// The collector's replay with `store_args`; waits for its exit (up to 30 min).
Run Replay(const Options& o, const std::vector<std::string>& store_args, const std::string& log) {
  std::vector<std::string> argv = {o.collector, "--replay", o.archive, "--pipeline",
                                   "md_rx,decide,order_sent"};
  argv.insert(argv.end(), store_args.begin(), store_args.end());
  if (!o.detail.empty() && o.store != "off") {
    argv.push_back("--detail");
    argv.push_back(o.detail);
  }
  unlink(log.c_str());
  Run r;
  const double t0 = MonotonicS();
  const pid_t pid = tb::SpawnLogged(argv, log, o.dir);
  int status = 0;
  rusage ru{};
  const double give_up = t0 + 1800;
  pid_t got = 0;
  while ((got = wait4(pid, &status, WNOHANG, &ru)) == 0 && MonotonicS() < give_up) usleep(2000);
  r.wall_s = MonotonicS() - t0;
  if (got != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    r.note = "the replay did not end within 30 min";
    return r;
  }
  r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string tail = ReadFile(log);
    if (tail.size() > 300) tail = tail.substr(tail.size() - 300);
    for (char& c : tail) {
      if (c == '\n' || c == '|') c = ' ';
    }
    r.note = "collector wait status " + std::to_string(status) + ": " + tail;
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  const std::string count_path = o.archive + ".records";
  if (o.write_only) {
    tb::WriteArchive(o.archive, o.records);
    std::ofstream(count_path) << (o.records / 4) * 4 << "\n";
    std::printf("archive %s: %llu records\n", o.archive.c_str(),
                static_cast<unsigned long long>((o.records / 4) * 4));
    return 0;
  }
  uint64_t records = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(count_path)), &records)) {
    std::fprintf(stderr,
                 "replay_bench: %s: no record count (write the archive with "
                 "--write-only first)\n",
                 count_path.c_str());
    return 2;
  }
  if (!tb::CollectorFound(o.collector)) return 0;
  // The collector runs in --dir: every path it is given must be absolute.
  o.collector = tb::AbsolutePath(o.collector);
  o.archive = tb::AbsolutePath(o.archive);
  o.dir = tb::AbsolutePath(o.dir);
  const std::string tag = "replay-" + std::to_string(getpid());
  const std::string log = o.dir + "/" + tag + ".log";
  Run r;
  int64_t samples = -1;
  if (o.store == "off") {
    r = Replay(o, {"--db", ""}, log);
  } else if (o.store == "sqlite") {
    const std::string db = o.dir + "/" + tag + ".db";
    r = Replay(o, {"--db", db}, log);
    if (r.ok) samples = SqliteSamples(db);
    for (const char* suffix : {"", "-wal", "-shm", ".ttjournal", ".ttcheckpoint"}) {
      unlink((db + suffix).c_str());
    }
  } else {
    using ticktrace::testing::ClickHouseServer;
    if (std::optional<std::string> why = ClickHouseServer::SkipReason()) {
      std::printf("skipped: %s\n", why->c_str());
      std::printf("METRIC|skipped|1\nNOTE|%s\n", why->c_str());
      return 0;
    }
    absl::StatusOr<std::unique_ptr<ClickHouseServer>> server = ClickHouseServer::Start();
    if (!server.ok()) {
      std::printf("failed: the ClickHouse server did not start: %s\n",
                  std::string(server.status().message()).c_str());
      std::printf("NOTE|the ClickHouse server did not start\n");
      return 1;
    }
    r = Replay(o, {"--store", (*server)->Uri("replay")}, log);
    if (r.ok) samples = ClickHouseSamples(**server, "replay");
  }
  unlink(log.c_str());
  if (!r.ok) {
    std::printf("failed: %s\nNOTE|%s\n", r.note.c_str(), r.note.c_str());
    return 1;
  }
  std::printf(
      "%s, store %s%s%s: %llu records in %.3f s wall, %.3f CPU-s (whole process): "
      "%.2f M records/s wall, %.2f M per CPU-second",
      o.collector.c_str(), o.store.c_str(), o.detail.empty() ? "" : ", --detail ", o.detail.c_str(),
      static_cast<unsigned long long>(records), r.wall_s, r.cpu_s,
      static_cast<double>(records) / r.wall_s / 1e6, static_cast<double>(records) / r.cpu_s / 1e6);
  if (samples >= 0) {
    std::printf("; %lld samples: %.2f M samples/s wall", static_cast<long long>(samples),
                static_cast<double>(samples) / r.wall_s / 1e6);
  }
  std::printf("\n");
  PrintMetric("records", static_cast<double>(records));
  PrintMetric("wall_s", r.wall_s);
  PrintMetric("cpu_s", r.cpu_s);
  PrintMetric("records_per_s", static_cast<double>(records) / r.wall_s);
  PrintMetric("records_per_cpu_s", static_cast<double>(records) / r.cpu_s);
  if (o.store != "off") {
    if (samples < 0) {
      std::printf("NOTE|the store's samples counter could not be read\n");
      return 1;
    }
    PrintMetric("samples", static_cast<double>(samples));
    PrintMetric("samples_per_s", static_cast<double>(samples) / r.wall_s);
  }
  return 0;
}
