// A traced process for the collector's live tests. Uses only ticktrace/trace.h.
//
//   --session S [--ring N] --mode chain|spin|migrate ...
//
// chain: one stage of a multi-process pipeline joined by pipes (8-byte order ids).
//   --role first|middle|last --in-fd N --out-fd N --orders N --in-tag A --out-tag B
//   --work-ns W        busy work between the two stamps (in-thread stage)
//   --handoff-work-ns H busy work after the second stamp, before passing the order on
//   --pace-us P        first stage: pause between orders
//   --cpu C            pin to this cpu
//   --tsc-hz HZ        busy-wait on the TSC at this frequency (else CLOCK_MONOTONIC)
// spin: stamps tags a and b (--tag-a, --tag-b rename them) for orders
//   F..F+N-1 (--first-id F, default 1); with --start-utc-ns T, order n's
//   first stamp waits for CLOCK_REALTIME T + (n - 1) x pace (two hosts'
//   producers in step, for the multi-host tests), else
//   pausing --pace-ns between orders (busy), and after each order stores how
//   many orders are done in the 8-byte file --progress (mmap), so a test that
//   SIGKILLs it knows what was certainly published.
//   --work-ns W between the two stamps, and every --slow-every K-th order
//   (n % K == 0) --slow-work-ns S instead: a known latency distribution.
// migrate: N spans 'moved' whose thread is moved from cpu 0 to cpu 1 between
//   begin and end (sched_setaffinity), and N spans 'pinned' that stay on cpu 0.
// udp: N orders over loopback UDP with the kernel's software timestamps
//   (ticktrace/net.h): order n is sent as a datagram, received --gap-us later
//   (md_rx stamped after recvmsg, then wire_rx at the packet's receive time),
//   then order_send is stamped and the order sent on a second socket, and
//   wire_tx stamped at its send timestamp. Writes one line per order to
//   --out: "id before_send_ns rx_ns after_md_rx_ns before_order_send_ns tx_ns"
//   (CLOCK_REALTIME reads of its own around the calls).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "ticktrace/net.h"
#include "ticktrace/trace.h"

namespace {

std::map<std::string, std::string> g_args;

std::string Arg(const std::string& name, const std::string& def = "") {
  auto it = g_args.find(name);
  return it == g_args.end() ? def : it->second;
}
long long Num(const std::string& name, long long def = 0) {
  const std::string v = Arg(name);
  return v.empty() ? def : std::atoll(v.c_str());
}

int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Busy-waits `ns` nanoseconds. With --tsc-hz (the kernel's TSC frequency,
// given by the test, independent of the collector's own calibration) it spins
// on the TSC, whose read costs ~10 ns, so the injected work is exact to tens
// of ns; otherwise on CLOCK_MONOTONIC.
double g_tsc_hz = 0;

void BusyNs(int64_t ns) {
  if (ns <= 0) return;
  if (g_tsc_hz > 0) {
    const uint64_t ticks = static_cast<uint64_t>(static_cast<double>(ns) * g_tsc_hz / 1e9);
    const uint64_t start = ticktrace::ReadTsc();
    while (ticktrace::ReadTsc() - start < ticks) {
    }
    return;
  }
  const int64_t end = MonoNs() + ns;
  while (MonoNs() < end) {
  }
}

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// Moves all `n` bytes at `c` through `io` (read or write), again after
// EINTR; false at end of file or on an error.
template <typename Byte, typename Io>
bool TransferAll(Io io, int fd, Byte* c, size_t n) {
  while (n > 0) {
    const ssize_t r = io(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  return TransferAll(::read, fd, static_cast<char*>(p), n);
}

bool WriteAll(int fd, const void* p, size_t n) {
  return TransferAll(::write, fd, static_cast<const char*>(p), n);
}

int Chain() {
  const std::string role = Arg("role");
  const int in_fd = static_cast<int>(Num("in-fd", -1));
  const int out_fd = static_cast<int>(Num("out-fd", -1));
  const uint64_t orders = static_cast<uint64_t>(Num("orders", 100));
  const int64_t work_ns = Num("work-ns");
  const int64_t handoff_ns = Num("handoff-work-ns");
  const int64_t pace_us = Num("pace-us");
  if (Arg("cpu") != "" && !Pin(static_cast<int>(Num("cpu")))) return 3;
  ticktrace::Tag in_tag(Arg("in-tag", "in"));
  ticktrace::Tag out_tag(Arg("out-tag", "out"));
  auto stage = [&](uint64_t id) {
    ticktrace::stamp(in_tag, id);
    BusyNs(work_ns);
    ticktrace::stamp(out_tag, id);
    BusyNs(handoff_ns);
    if (out_fd >= 0 && !WriteAll(out_fd, &id, sizeof(id))) std::exit(4);
  };
  if (role == "first") {
    for (uint64_t id = 1; id <= orders; ++id) {
      stage(id);
      if (pace_us > 0) usleep(static_cast<useconds_t>(pace_us));
    }
  } else {
    uint64_t id;
    while (ReadAll(in_fd, &id, sizeof(id))) stage(id);
  }
  if (out_fd >= 0) close(out_fd);
  return 0;
}

int Spin() {
  const uint64_t orders = static_cast<uint64_t>(Num("orders", 1000000000));
  const uint64_t first_id = static_cast<uint64_t>(Num("first-id", 1));
  const int64_t pace_ns = Num("pace-ns", 1000);
  const std::string progress_path = Arg("progress");
  std::atomic<uint64_t>* progress = nullptr;
  if (!progress_path.empty()) {
    const int fd = open(progress_path.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 8) != 0) return 5;
    void* p = mmap(nullptr, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return 5;
    progress = static_cast<std::atomic<uint64_t>*>(p);
  }
  ticktrace::Tag a(Arg("tag-a", "a").c_str());
  ticktrace::Tag b(Arg("tag-b", "b").c_str());
  const int64_t start_utc_ns = Num("start-utc-ns", 0);
  const int64_t work_ns = Num("work-ns", 0);
  const uint64_t slow_every = static_cast<uint64_t>(Num("slow-every", 0));
  const int64_t slow_work_ns = Num("slow-work-ns", 0);
  for (uint64_t n = 1; n <= orders; ++n) {
    const uint64_t id = first_id + n - 1;
    if (start_utc_ns > 0) {
      const int64_t due = start_utc_ns + static_cast<int64_t>(n - 1) * pace_ns;
      for (;;) {
        timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec >= due) break;
      }
    }
    ticktrace::stamp(a, id);
    BusyNs(slow_every > 0 && n % slow_every == 0 ? slow_work_ns : work_ns);
    ticktrace::stamp(b, id);
    // After both stamps returned: both are published (release store of write_index).
    // The count of orders done, whatever the first id.
    if (progress != nullptr) progress->store(n, std::memory_order_release);
    if (start_utc_ns == 0) BusyNs(pace_ns);
  }
  return 0;
}

int Migrate() {
  const uint64_t orders = static_cast<uint64_t>(Num("orders", 200));
  ticktrace::Tag moved("moved");
  ticktrace::Tag pinned("pinned");
  for (uint64_t id = 1; id <= orders; ++id) {
    if (!Pin(0)) return 3;
    {
      ticktrace::Span s(moved, id);
      if (!Pin(1)) return 3;  // the kernel moves us before the call returns
      BusyNs(2000);
    }
    if (!Pin(0)) return 3;
    {
      ticktrace::Span s(pinned, 1000000 + id);
      BusyNs(2000);
    }
  }
  return 0;
}

}  // namespace

int64_t RealNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A UDP socket on 127.0.0.1 (a port the kernel picks), timestamping enabled.
int TimestampedUdp(sockaddr_in* addr) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !ticktrace::net::EnableTimestamping(fd).ok()) {
    return -1;
  }
  *addr = a;
  return fd;
}

int Udp() {
  static const ticktrace::Tag wire_rx("wire_rx"), md_rx("md_rx"), order_send("order_send"),
      wire_tx("wire_tx");
  ticktrace::AttachThisThread();
  sockaddr_in md_addr{}, order_addr{}, venue_addr{};
  const int md = TimestampedUdp(&md_addr);
  const int order = TimestampedUdp(&order_addr);
  const int venue = TimestampedUdp(&venue_addr);
  if (md < 0 || order < 0 || venue < 0 ||
      connect(md, reinterpret_cast<sockaddr*>(&md_addr), sizeof(md_addr)) != 0 ||
      connect(order, reinterpret_cast<sockaddr*>(&venue_addr), sizeof(venue_addr)) != 0) {
    std::perror("producer: udp sockets");
    return 1;
  }
  // The kernel switches software receive timestamps on for the whole system
  // shortly after the first socket asks (net.h): wait until a packet carries one.
  for (int tries = 0; tries < 2000; ++tries) {
    uint64_t probe = 0;
    alignas(cmsghdr) char control[ticktrace::net::kControlBytes];
    iovec iov{&probe, sizeof(probe)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (send(md, &probe, sizeof(probe), 0) != static_cast<ssize_t>(sizeof(probe)) ||
        recvmsg(md, &msg, 0) != static_cast<ssize_t>(sizeof(probe))) {
      return 1;
    }
    while (ticktrace::net::ReadSendTime(md).ok()) {
    }
    if (ticktrace::net::ReceiveTime(msg).ok()) break;
    usleep(1000);
  }
  FILE* out = std::fopen(Arg("out").c_str(), "w");
  if (out == nullptr) return 1;
  const long long orders = Num("orders", 100);
  const long long gap_us = Num("gap-us", 200);
  for (long long n = 1; n <= orders; ++n) {
    const uint64_t id = static_cast<uint64_t>(n);
    const int64_t before_send = RealNs();
    if (send(md, &id, sizeof(id), 0) != static_cast<ssize_t>(sizeof(id))) return 1;
    (void)ticktrace::net::ReadSendTime(md);  // this socket's own send stamps: not needed
    const int64_t until = MonoNs() + gap_us * 1000;
    while (MonoNs() < until) {
    }
    uint64_t got = 0;
    alignas(cmsghdr) char control[ticktrace::net::kControlBytes];
    iovec iov{&got, sizeof(got)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(md, &msg, 0) != static_cast<ssize_t>(sizeof(got))) return 1;
    ticktrace::stamp(md_rx, got);
    const int64_t after_md_rx = RealNs();
    const ticktrace::net::PacketTime rx = ticktrace::net::ReceiveTime(msg);
    if (!rx.ok()) {
      std::fprintf(stderr, "producer: order %llu: no receive timestamp (msg_flags 0x%x, %zu control bytes)\n",
                   static_cast<unsigned long long>(got), msg.msg_flags,
                   static_cast<size_t>(msg.msg_controllen));
    }
    if (rx.ok()) ticktrace::stamp_at(wire_rx, got, rx.ns, rx.clock());
    const int64_t before_order_send = RealNs();
    ticktrace::stamp(order_send, got);
    if (send(order, &got, sizeof(got), 0) != static_cast<ssize_t>(sizeof(got))) return 1;
    ticktrace::Result<ticktrace::net::PacketTime> tx = ticktrace::net::ReadSendTime(order);
    for (int tries = 0; !tx.ok() && tries < 1000; ++tries) {
      usleep(100);
      tx = ticktrace::net::ReadSendTime(order);
    }
    if (tx.ok()) ticktrace::stamp_at(wire_tx, got, tx->ns, tx->clock());
    uint64_t at_venue = 0;
    if (recv(venue, &at_venue, sizeof(at_venue), 0) != static_cast<ssize_t>(sizeof(at_venue))) {
      return 1;
    }
    std::fprintf(out, "%llu %lld %lld %lld %lld %lld\n", static_cast<unsigned long long>(got),
                 static_cast<long long>(before_send), static_cast<long long>(rx.ok() ? rx.ns : 0),
                 static_cast<long long>(after_md_rx), static_cast<long long>(before_order_send),
                 static_cast<long long>(tx.ok() ? tx->ns : 0));
  }
  std::fclose(out);
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) return 2;
    g_args[k.substr(2)] = argv[i + 1];
  }
  ticktrace::Options options;
  options.session = Arg("session", "default");
  options.ring_records = static_cast<uint32_t>(Num("ring", 1 << 16));
  if (ticktrace::Status s = ticktrace::Init(options); !s.ok()) {
    std::fprintf(stderr, "producer: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  g_tsc_hz = std::atof(Arg("tsc-hz", "0").c_str());
  const std::string mode = Arg("mode");
  if (mode == "chain") return Chain();
  if (mode == "spin") return Spin();
  if (mode == "migrate") return Migrate();
  if (mode == "udp") return Udp();
  return 2;
}
