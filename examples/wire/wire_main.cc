// The wire on the order's timeline: a UDP market-data feed, a strategy that
// receives it and sends an order by UDP to a small venue, and the venue,
// which acks with its own time. Each is a separate process (--role), on
// loopback by default or across hosts (--md-host, --venue-host).
//
//   ticktrace-example-wire --role venue    --venue-port 7702 --orders N
//   ticktrace-example-wire --role strategy --md-port 7701 --venue-host H --venue-port 7702 --orders N
//   ticktrace-example-wire --role feed     --md-host H --md-port 7701 --orders N --pace-us 200
//
// The strategy's stamps, one order per tick (order id = tick id):
//   wire_rx     the kernel's receive timestamp of the tick (stamp_at, realtime)
//   md_rx       user space has the tick (after recvmsg)
//   order_send  just before send()
//   wire_tx     the kernel's send timestamp of the order (stamp_at, realtime)
//   venue_rx    the venue's own clock when it received the order (stamp_at,
//               exchange: from the ack's message)
// Hardware timestamps are used when the NIC gives them (ticktrace/net.h).
// Run it all under a collector with examples/wire/run_wire.sh.

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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
long long Num(const std::string& name, long long def) {
  const std::string v = Arg(name);
  return v.empty() ? def : std::atoll(v.c_str());
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Tick {
  uint64_t id;
};
struct Ack {
  uint64_t id;
  int64_t venue_rx_ns;  // the venue's CLOCK_REALTIME when the order arrived
};

// A UDP socket bound to `port` on every address (0: any port).
int BoundUdp(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::perror("wire: bind");
    std::exit(1);
  }
  return fd;
}

sockaddr_in Address(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "wire: %s is not an IPv4 address\n", host.c_str());
    std::exit(2);
  }
  return a;
}

int Feed() {
  const int fd = BoundUdp(0);
  const sockaddr_in to = Address(Arg("md-host", "127.0.0.1"), static_cast<int>(Num("md-port", 7701)));
  const long long orders = Num("orders", 1000);
  const long long pace_us = Num("pace-us", 200);
  for (long long n = 1; n <= orders; ++n) {
    const Tick t{static_cast<uint64_t>(n)};
    if (sendto(fd, &t, sizeof(t), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) < 0) {
      std::perror("wire feed: sendto");
      return 1;
    }
    usleep(static_cast<useconds_t>(pace_us));
  }
  return 0;
}

int Venue() {
  const int fd = BoundUdp(static_cast<int>(Num("venue-port", 7702)));
  const long long orders = Num("orders", 1000);
  for (long long n = 0; n < orders; ++n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 3000) <= 0) break;  // the strategy is done (or lost orders)
    uint64_t id = 0;
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    if (recvfrom(fd, &id, sizeof(id), 0, reinterpret_cast<sockaddr*>(&from), &len) !=
        static_cast<ssize_t>(sizeof(id))) {
      continue;
    }
    const Ack ack{id, RealtimeNs()};
    sendto(fd, &ack, sizeof(ack), 0, reinterpret_cast<sockaddr*>(&from), len);
  }
  return 0;
}

int Strategy() {
  static const ticktrace::Tag wire_rx("wire_rx"), md_rx("md_rx"), order_send("order_send"),
      wire_tx("wire_tx"), venue_rx("venue_rx"), decide("decide");
  ticktrace::AttachThisThread();
  const int md = BoundUdp(static_cast<int>(Num("md-port", 7701)));
  const int order = BoundUdp(0);
  const sockaddr_in venue =
      Address(Arg("venue-host", "127.0.0.1"), static_cast<int>(Num("venue-port", 7702)));
  if (connect(order, reinterpret_cast<const sockaddr*>(&venue), sizeof(venue)) != 0) {
    std::perror("wire strategy: connect");
    return 1;
  }
  for (int fd : {md, order}) {
    if (ticktrace::Status s = ticktrace::net::EnableTimestamping(fd); !s.ok()) {
      std::fprintf(stderr, "wire strategy: %s\n", s.message().c_str());
      return 1;
    }
  }
  // The kernel turns receive timestamps on a moment after the first socket
  // asks (ticktrace/net.h): probe the md socket with packets to itself until
  // one comes back timestamped (at most 2 s), so that the first ticks have one.
  {
    sockaddr_in self{};
    socklen_t len = sizeof(self);
    getsockname(md, reinterpret_cast<sockaddr*>(&self), &len);
    self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int probe = BoundUdp(0);
    for (int tries = 0; tries < 2000; ++tries) {
      const Tick t{0};
      sendto(probe, &t, sizeof(t), 0, reinterpret_cast<const sockaddr*>(&self), sizeof(self));
      Tick got{};
      alignas(cmsghdr) char control[ticktrace::net::kControlBytes];
      iovec iov{&got, sizeof(got)};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      if (recvmsg(md, &msg, 0) == sizeof(got) && ticktrace::net::ReceiveTime(msg).ok()) break;
      usleep(1000);
    }
    close(probe);
  }
  const long long orders = Num("orders", 1000);
  long long without_rx = 0, without_tx = 0;
  const char* rx_source = "none";
  for (long long n = 0; n < orders; ++n) {
    Tick tick{};
    alignas(cmsghdr) char control[ticktrace::net::kControlBytes];
    iovec iov{&tick, sizeof(tick)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    pollfd wait_md{md, POLLIN, 0};
    if (poll(&wait_md, 1, 3000) <= 0) {  // the feed stopped (or ticks were lost)
      std::printf("wire strategy: no tick for 3 s after %lld: stopping\n", n);
      break;
    }
    if (recvmsg(md, &msg, 0) != static_cast<ssize_t>(sizeof(tick))) continue;
    ticktrace::stamp(md_rx, tick.id);
    const ticktrace::net::PacketTime rx = ticktrace::net::ReceiveTime(msg);
    if (rx.ok()) {
      ticktrace::stamp_at(wire_rx, tick.id, rx.ns, rx.clock());
      rx_source = ticktrace::net::TimestampSourceName(rx.source);
    } else {
      ++without_rx;
    }
    {
      ticktrace::Span s(decide, tick.id);  // the strategy's own work
      volatile uint64_t x = tick.id;
      for (int i = 0; i < 200; ++i) x = x * 6364136223846793005ull + 1;
    }
    ticktrace::stamp(order_send, tick.id);
    if (send(order, &tick.id, sizeof(tick.id), 0) != static_cast<ssize_t>(sizeof(tick.id))) {
      continue;
    }
    // The send timestamp is queued once the packet has left: wait for it
    // (POLLERR), up to 100 ms.
    pollfd p{order, 0, 0};
    ticktrace::Result<ticktrace::net::PacketTime> tx = ticktrace::net::ReadSendTime(order);
    for (int tries = 0; !tx.ok() && tries < 100; ++tries) {
      poll(&p, 1, 1);
      tx = ticktrace::net::ReadSendTime(order);
    }
    if (tx.ok()) {
      ticktrace::stamp_at(wire_tx, tick.id, tx->ns, tx->clock());
    } else {
      ++without_tx;
    }
    Ack ack{};
    pollfd in{order, POLLIN, 0};
    if (poll(&in, 1, 1000) > 0 && recv(order, &ack, sizeof(ack), 0) == sizeof(ack)) {
      ticktrace::stamp_at(venue_rx, ack.id, ack.venue_rx_ns, ticktrace::Clock::kExchange);
    }
  }
  std::printf("wire strategy: %lld orders; receive timestamps: %s (%lld without), %lld without a "
              "send timestamp\n",
              orders, rx_source, without_rx, without_tx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      std::fprintf(stderr, "wire: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
    g_args[k.substr(2)] = argv[i + 1];
  }
  const std::string role = Arg("role");
  if (role == "feed") return Feed();
  if (role == "venue") return Venue();
  if (role == "strategy") return Strategy();
  std::fprintf(stderr, "wire: --role feed|strategy|venue\n");
  return 2;
}
