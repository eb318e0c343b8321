// A traced process for the reliability tests. Uses only ticktrace/trace.h.
//
//   rel_producer --session S [--ring N] [--rings N] --mode seq|churn ...
//
// seq: --threads T threads; thread t stamps tags "a" then "b" for orders
//   base + (t << 32) + 1 .. + N (N = --orders, 0: forever), sleeping --pace-us
//   every --pace-every orders (0: full speed). After each stamp returns, the
//   thread stores how many records it attempted into the 8-byte cell t of
//   the --progress file (mmap). SIGTERM ends every thread's loop after its
//   current order (--orders 0 and SIGTERM: run at full speed until told to
//   stop). At exit each thread prints "thread <t> tid <tid> attempted <n>"
//   and the process "elapsed_ns <ns>" and its footprint (TraceStatus:
//   "footprint segment_bytes <n> reserved_bytes <n> rings_claimed <n>");
//   with --start-when PATH the threads start only once PATH exists (the
//   segment exists before: Init creates it); with --hold 1 the process then stays
//   (alive, segment in place) until SIGTERM.
// churn: --waves W of --threads T threads each, all alive at once (a barrier),
//   each stamping --records R records (R-1 with tags a/b, the last one with a
//   tag that found the tag table full), then exiting; --gap-ms between waves.
//   Before the first wave it registers --extra-tags X more tags, so that the
//   table (abi capacity) overflows. Prints "attempted <n>", "threads <n>",
//   "tags_constructed <n>", "rejected_tag_id <id>".

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ticktrace/trace.h"

namespace {

std::map<std::string, std::string> g_args;

std::string Arg(const std::string& name, const std::string& def = "") {
  auto it = g_args.find(name);
  return it == g_args.end() ? def : it->second;
}
uint64_t Num(const std::string& name, uint64_t def = 0) {
  const std::string v = Arg(name);
  return v.empty() ? def : std::strtoull(v.c_str(), nullptr, 0);
}

int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::mutex g_print_mu;

// Set by SIGTERM. Relaxed: a flag polled once per order; nothing is published through it.
std::atomic<bool> g_stop{false};
extern "C" void OnTerm(int) { g_stop.store(true, std::memory_order_relaxed); }

// The 8-byte progress cells of `threads` threads, or null without --progress.
std::atomic<uint64_t>* MapProgress(uint32_t threads) {
  const std::string path = Arg("progress");
  if (path.empty()) return nullptr;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, 8 * threads) != 0) std::exit(5);
  void* p = mmap(nullptr, 8 * threads, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) std::exit(5);
  return static_cast<std::atomic<uint64_t>*>(p);
}

int Seq() {
  const uint32_t threads = static_cast<uint32_t>(Num("threads", 1));
  const uint64_t orders = Num("orders", 0);
  const uint64_t base = Num("base", 0);
  const uint64_t pace_every = Num("pace-every", 0);
  const uint64_t pace_us = Num("pace-us", 0);
  std::atomic<uint64_t>* progress = MapProgress(threads);
  if (const std::string start_when = Arg("start-when"); !start_when.empty()) {
    while (access(start_when.c_str(), F_OK) != 0) usleep(10000);
  }
  static ticktrace::Tag a("a");
  static ticktrace::Tag b("b");
  struct sigaction sa = {};
  sa.sa_handler = OnTerm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  const int64_t start_ns = MonoNs();
  auto body = [&](uint32_t t) {
    uint64_t attempted = 0;
    const uint64_t first = base + (uint64_t{t} << 32);
    for (uint64_t i = 1; (orders == 0 || i <= orders) && !g_stop.load(std::memory_order_relaxed);
         ++i) {
      ticktrace::stamp(a, first + i);
      ++attempted;
      // Relaxed is enough: the reader (the test) looks only after this process is dead.
      if (progress != nullptr) progress[t].store(attempted, std::memory_order_relaxed);
      ticktrace::stamp(b, first + i);
      ++attempted;
      if (progress != nullptr) progress[t].store(attempted, std::memory_order_relaxed);
      if (pace_every != 0 && i % pace_every == 0) usleep(static_cast<useconds_t>(pace_us));
    }
    std::lock_guard<std::mutex> lock(g_print_mu);
    std::printf("thread %u tid %ld attempted %llu\n", t, static_cast<long>(syscall(SYS_gettid)),
                static_cast<unsigned long long>(attempted));
  };
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < threads; ++t) pool.emplace_back(body, t);
  body(0);
  for (std::thread& th : pool) th.join();
  std::printf("elapsed_ns %lld\n", static_cast<long long>(MonoNs() - start_ns));
  const ticktrace::TracerStatus status = ticktrace::TraceStatus();
  std::printf("footprint segment_bytes %llu reserved_bytes %llu rings_claimed %u\n",
              static_cast<unsigned long long>(status.segment_bytes),
              static_cast<unsigned long long>(status.reserved_bytes), status.rings_claimed);
  std::fflush(stdout);
  if (Num("hold") != 0) {
    while (!g_stop.load(std::memory_order_relaxed)) usleep(10000);
  }
  return 0;
}

int Churn() {
  const uint32_t waves = static_cast<uint32_t>(Num("waves", 10));
  const uint32_t threads = static_cast<uint32_t>(Num("threads", 6));
  const uint64_t records = Num("records", 100);
  const uint64_t gap_ms = Num("gap-ms", 20);
  const uint32_t extra_tags = static_cast<uint32_t>(Num("extra-tags", 0));
  if (records < 2) return 2;
  static ticktrace::Tag a("a");
  static ticktrace::Tag b("b");
  std::vector<std::unique_ptr<ticktrace::Tag>> extra;
  for (uint32_t i = 0; i < extra_tags; ++i) {
    extra.push_back(std::make_unique<ticktrace::Tag>("extra_" + std::to_string(i)));
  }
  const ticktrace::Tag& last = extra.empty() ? b : *extra.back();
  uint64_t attempted = 0;
  for (uint32_t w = 0; w < waves; ++w) {
    std::barrier sync(threads);
    std::vector<std::thread> pool;
    for (uint32_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, w, t] {
        sync.arrive_and_wait();  // every thread of the wave is alive before any traces
        const uint64_t order_base = (uint64_t{w} << 40) + (uint64_t{t} << 32);
        for (uint64_t i = 0; i + 1 < records; ++i) {
          ticktrace::stamp(i % 2 == 0 ? a : b, order_base + i / 2 + 1);
        }
        ticktrace::stamp(last, order_base + records);
        sync.arrive_and_wait();  // nobody exits (retires its slot) before all have traced
      });
    }
    for (std::thread& th : pool) th.join();
    attempted += uint64_t{threads} * records;
    usleep(static_cast<useconds_t>(gap_ms * 1000));
  }
  std::printf("attempted %llu\nthreads %llu\ntags_constructed %u\nrejected_tag_id %u\n",
              static_cast<unsigned long long>(attempted),
              static_cast<unsigned long long>(uint64_t{waves} * threads), extra_tags + 2,
              unsigned{last.id()});
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0) return 2;
    g_args[k.substr(2)] = argv[i + 1];
  }
  ticktrace::Options options;
  options.session = Arg("session", "default");
  options.ring_records = static_cast<uint32_t>(Num("ring", 1 << 16));
  options.rings = static_cast<uint32_t>(Num("rings", 64));
  if (ticktrace::Status s = ticktrace::Init(options); !s.ok()) {
    std::fprintf(stderr, "rel_producer: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  const std::string mode = Arg("mode");
  if (mode == "seq") return Seq();
  if (mode == "churn") return Churn();
  return 2;
}
