// scaling_bench: stamp cost and throughput as rings per process and processes
// grow (1, 2, 4, 8 each way).
//
//   scaling_bench [--seconds 1.5] [--configs 1x1,1x2,1x4,1x8,2x1,4x1,8x1]
//
// A config PxT runs P processes (fork) of T writer threads each: P x T rings,
// every ring in its process's own segment, one writer per ring. All writers
// start at one CLOCK_MONOTONIC instant and stop at another. A writer loops:
// a batch of 4096 stamps timed with CLOCK_MONOTONIC, then (untimed) it drains
// its own ring through its own SegmentReader, so no ring ever fills and no
// stamp takes the drop path (checked: dropped must be 0).
//
// Reported per config:
//   ns/stamp      median and mean over all writers' batches (a batch's time /
//                 4096). The median is the cost when the writer runs; the mean
//                 also holds batches in which the writer was preempted.
//   stamps/s      all writers' stamps / wall time of the phase: aggregate
//                 throughput, with draining and preemption included.
//   per writer    that / (P x T).
//   CPU obtained  user + system time of the config's processes / phase wall
//                 time (includes their start-up): how much of the 2 shared
//                 cores the writers actually got.
//   stamps per CPU-s  all stamps / that CPU time: throughput per core used,
//                 draining included, independent of how much CPU was free.
// The machine has 2 (shared) cores: beyond 2 writers they are oversubscribed,
// so the aggregate cannot grow and each writer gets a share of 2 cores; what
// should stay flat is the median cost, i.e. rings do not slow each other.

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_setup.h"
#include "bench_util.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace {

namespace tb = ticktrace::bench;
using tb::SleepUntil;

constexpr int kBatch = 4096;
constexpr uint32_t kRingRecords = 1u << 14;

struct WriterResult {
  uint64_t stamps = 0;
  uint64_t dropped = 0;
  std::vector<double> batch_ns_per_stamp;
  bool ok = true;
};

__attribute__((noinline)) void Batch(const ticktrace::Tag& tag, uint64_t base) {
  for (int i = 0; i < kBatch; ++i) ticktrace::stamp(tag, base + static_cast<uint64_t>(i));
}

void Writer(const ticktrace::Tag& tag, int64_t start_ns, int64_t end_ns, WriterResult* out) {
  ticktrace::stamp(tag, 0);  // attach: the slow path, before the start
  tb::OwnRingDrainer drainer;
  if (!drainer.Attach()) {
    out->ok = false;
    return;
  }
  drainer.Drain();
  out->batch_ns_per_stamp.reserve(1u << 16);
  SleepUntil(start_ns);
  uint64_t base = 1;
  while (tb::MonotonicNs() < end_ns) {
    const int64_t t0 = tb::MonotonicNs();
    Batch(tag, base);
    const int64_t t1 = tb::MonotonicNs();
    base += kBatch;
    out->stamps += kBatch;
    if (out->batch_ns_per_stamp.size() < out->batch_ns_per_stamp.capacity()) {
      out->batch_ns_per_stamp.push_back(static_cast<double>(t1 - t0) / kBatch);
    }
    drainer.Drain();
  }
  out->dropped = drainer.Slot().dropped;
  drainer.Close();
}

// One process of a config: T writers; writes one line per writer to `fd`:
// "w <stamps> <dropped> <ok> <ns> <ns> ...".
int RunProcess(int threads, int64_t start_ns, int64_t end_ns, int fd) {
  if (!ticktrace::bench::InitTracing("Init", "scaling" + std::to_string(getppid()), kRingRecords,
                                     static_cast<uint32_t>(threads) + 1)) {
    return 1;
  }
  static const ticktrace::Tag tag{"scale"};
  std::vector<WriterResult> results(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back(Writer, std::cref(tag), start_ns, end_ns, &results[static_cast<size_t>(t)]);
  }
  for (std::thread& t : ts) t.join();
  std::string text;
  for (const WriterResult& r : results) {
    text += "w " + std::to_string(r.stamps) + " " + std::to_string(r.dropped) + " " +
            (r.ok ? "1" : "0");
    char buf[32];
    for (double x : r.batch_ns_per_stamp) {
      std::snprintf(buf, sizeof buf, " %.3f", x);
      text += buf;
    }
    text += "\n";
  }
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  (void)ticktrace::RemoveSegment(ticktrace::CurrentSegmentName());
  return 0;
}

struct ConfigResult {
  int processes = 0, threads = 0;
  uint64_t stamps = 0, dropped = 0;
  bool ok = true;
  double wall_s = 0;
  double cpu_s = 0;  // user + system time of the config's processes (whole lifetime)
  tb::Summary cost;
};

ConfigResult RunConfig(int processes, int threads, double seconds) {
  ConfigResult cr;
  cr.processes = processes;
  cr.threads = threads;
  // Start after every process has forked, attached and drained.
  const int64_t start_ns = tb::MonotonicNs() + 300'000'000 + 20'000'000 * processes;
  const int64_t end_ns = start_ns + static_cast<int64_t>(seconds * 1e9);
  rusage ru0{};
  getrusage(RUSAGE_CHILDREN, &ru0);
  std::vector<std::pair<pid_t, int>> kids;
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (pipe(fds) != 0) {
      std::perror("pipe");
      std::exit(1);
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      _exit(RunProcess(threads, start_ns, end_ns, fds[1]));
    }
    close(fds[1]);
    kids.emplace_back(pid, fds[0]);
  }
  std::vector<double> all;
  for (auto& [pid, fd] : kids) {
    std::string text;
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) cr.ok = false;
    std::istringstream lines(text);
    std::string line;
    int writers = 0;
    while (std::getline(lines, line)) {
      std::istringstream in(line);
      std::string w;
      unsigned long long stamps = 0, dropped = 0;
      int ok = 0;
      in >> w >> stamps >> dropped >> ok;
      ++writers;
      cr.stamps += stamps;
      cr.dropped += dropped;
      if (!ok) cr.ok = false;
      double x;
      while (in >> x) all.push_back(x);
    }
    if (writers != threads) cr.ok = false;
  }
  cr.wall_s = static_cast<double>(end_ns - start_ns) * 1e-9;
  rusage ru1{};
  getrusage(RUSAGE_CHILDREN, &ru1);
  const auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; };
  cr.cpu_s = secs(ru1.ru_utime) - secs(ru0.ru_utime) + secs(ru1.ru_stime) - secs(ru0.ru_stime);
  cr.cost = tb::Summarize(all);
  return cr;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.5;
  std::string configs = "1x1,1x2,1x4,1x8,2x1,4x1,8x1";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--configs" && i + 1 < argc) {
      configs = argv[++i];
    } else {
      std::fprintf(stderr, "usage: scaling_bench [--seconds S] [--configs PxT,...]\n");
      return 2;
    }
  }
  std::vector<std::pair<int, int>> list;
  {
    std::istringstream in(configs);
    std::string tok;
    while (std::getline(in, tok, ',')) {
      int p = 0, t = 0;
      if (std::sscanf(tok.c_str(), "%dx%d", &p, &t) == 2 && p > 0 && t > 0) list.emplace_back(p, t);
    }
  }
  double load0[3] = {0, 0, 0};
  getloadavg(load0, 3);
  std::vector<ConfigResult> results;
  for (const auto& [p, t] : list) results.push_back(RunConfig(p, t, seconds));
  double load1[3] = {0, 0, 0};
  getloadavg(load1, 3);

  const ConfigResult* one = nullptr;
  for (const ConfigResult& r : results) {
    if (r.processes == 1 && r.threads == 1) one = &r;
  }
  std::printf("%.1f s per config; batches of %d stamps; rings of %u records drained by their "
              "writer between batches; 2 vCPUs (shared with other work: load %.2f -> %.2f).\n\n",
              seconds, kBatch, kRingRecords, load0[0], load1[0]);
  std::printf("| processes x rings | writers | ns/stamp median | mean | p99 (batch) | "
              "median / 1x1 | stamps/s (all) | per writer | CPU obtained | stamps per CPU-s | dropped |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  bool ok = true;
  for (const ConfigResult& r : results) {
    const double rate = static_cast<double>(r.stamps) / r.wall_s;
    const int writers = r.processes * r.threads;
    std::printf("| %d x %d | %d%s | %.2f | %.2f | %.2f | %.2f | %.1f M | %.1f M | %.2f cores | %.1f M | %llu |\n",
                r.processes, r.threads, writers, writers > 2 ? " (oversubscribed)" : "",
                r.cost.p50, r.cost.mean, r.cost.p99,
                one && one->cost.p50 > 0 ? r.cost.p50 / one->cost.p50 : 0, rate * 1e-6,
                rate * 1e-6 / writers, r.cpu_s / r.wall_s,
                r.cpu_s > 0 ? static_cast<double>(r.stamps) / r.cpu_s * 1e-6 : 0.0,
                static_cast<unsigned long long>(r.dropped));
    ok = ok && r.ok && r.dropped == 0;
  }
  std::printf("\n");
  if (!ok) std::printf("- problem: a writer failed or dropped records (see stderr)\n\n");
  return ok ? 0 : 1;
}
