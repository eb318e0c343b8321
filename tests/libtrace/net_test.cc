// ticktrace/net.h on real loopback UDP sockets with the kernel's software
// timestamps: each receive time lies between the test's own CLOCK_REALTIME
// reads before the send and after the recvmsg, each send time after the
// read before its send call, and the send timestamps come back numbered in
// send order. No hardware timestamps exist on loopback.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gtest/gtest.h"
#include "ticktrace/net.h"

namespace ticktrace::net {
namespace {

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A UDP socket bound to 127.0.0.1 on a port the kernel picks.
int BoundUdp(sockaddr_in* addr) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  *addr = a;
  return fd;
}

class NetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rx_ = BoundUdp(&rx_addr_);
    tx_ = BoundUdp(&tx_addr_);
    if (rx_ < 0 || tx_ < 0) {
      std::printf("SKIP: no loopback UDP sockets here\n");
      std::exit(77);
    }
    ASSERT_EQ(connect(tx_, reinterpret_cast<sockaddr*>(&rx_addr_), sizeof(rx_addr_)), 0);
    const Status rx = EnableTimestamping(rx_);
    const Status tx = EnableTimestamping(tx_);
    ASSERT_TRUE(rx.ok()) << rx;
    ASSERT_TRUE(tx.ok()) << tx;
    // The kernel turns receive timestamps on a moment after the first socket
    // asks (net.h): wait (at most 2 s) until a packet carries one, and empty
    // the error queue of the probes' send timestamps.
    for (int tries = 0; tries < 2000; ++tries) {
      int probe = -1;
      ASSERT_EQ(send(tx_, &probe, sizeof(probe), 0), static_cast<ssize_t>(sizeof(probe)));
      ++probes_;
      PacketTime time;
      ASSERT_EQ(Receive(&time), static_cast<ssize_t>(sizeof(probe)));
      if (time.ok()) break;
      usleep(1000);
    }
    pollfd p{tx_, 0, 0};
    while (poll(&p, 1, 100) > 0 && ReadSendTime(tx_).ok()) {
    }
  }
  void TearDown() override {
    if (rx_ >= 0) close(rx_);
    if (tx_ >= 0) close(tx_);
  }

  // One recvmsg of one datagram; its receive time in *time.
  ssize_t Receive(PacketTime* time) {
    char data[64];
    alignas(cmsghdr) char control[kControlBytes];
    iovec iov{data, sizeof(data)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(rx_, &msg, 0);
    if (n >= 0) *time = ReceiveTime(msg);
    return n;
  }

  // The next send timestamp, waiting up to a second for it to be queued
  // (POLLERR: the error queue holds something).
  Result<PacketTime> NextSendTime(uint32_t* id) {
    pollfd p{tx_, 0, 0};
    poll(&p, 1, 1000);
    return ReadSendTime(tx_, id);
  }

  int rx_ = -1, tx_ = -1;
  uint32_t probes_ = 0;  // packets sent before the tests' own (send ids 0 ..)
  sockaddr_in rx_addr_{}, tx_addr_{};
};

TEST_F(NetTest, ReceiveTimesLieBetweenTheSendAndTheEndOfRecvmsg) {
  constexpr int kPackets = 50;
  for (int i = 0; i < kPackets; ++i) {
    const int64_t before_send = RealtimeNs();
    ASSERT_EQ(send(tx_, &i, sizeof(i), 0), static_cast<ssize_t>(sizeof(i)));
    PacketTime rx;
    const int64_t before_recv = RealtimeNs();
    ASSERT_EQ(Receive(&rx), static_cast<ssize_t>(sizeof(i)));
    const int64_t after_recv = RealtimeNs();
    ASSERT_TRUE(rx.ok()) << "packet " << i << " carried no receive timestamp";
    EXPECT_EQ(rx.source, TimestampSource::kSoftware) << "loopback has no hardware clock";
    EXPECT_EQ(rx.clock(), Clock::kRealtime);
    // The kernel stamped it after the send began and before recvmsg returned.
    EXPECT_GE(rx.ns, before_send) << "packet " << i;
    EXPECT_LE(rx.ns, after_recv) << "packet " << i;
    (void)before_recv;
  }
}

TEST_F(NetTest, SendTimesFollowTheSendCallInSendOrder) {
  constexpr int kPackets = 50;
  for (int i = 0; i < kPackets; ++i) {
    const int64_t before_send = RealtimeNs();
    ASSERT_EQ(send(tx_, &i, sizeof(i), 0), static_cast<ssize_t>(sizeof(i)));
    uint32_t id = 99999;
    Result<PacketTime> tx = NextSendTime(&id);
    const int64_t after_read = RealtimeNs();
    ASSERT_TRUE(tx.ok()) << "packet " << i << ": " << tx.status();
    EXPECT_EQ(tx->source, TimestampSource::kSoftware);
    EXPECT_EQ(id, probes_ + static_cast<uint32_t>(i)) << "numbered in send order";
    EXPECT_GE(tx->ns, before_send) << "packet " << i;
    EXPECT_LE(tx->ns, after_read) << "packet " << i;
    PacketTime rx;
    ASSERT_EQ(Receive(&rx), static_cast<ssize_t>(sizeof(i)));
    // On loopback the packet is received inside the send: at or after it left.
    EXPECT_GE(rx.ns, tx->ns) << "packet " << i;
  }
  uint32_t id = 0;
  Result<PacketTime> none = ReadSendTime(tx_, &id);
  EXPECT_EQ(none.status().code(), ErrorCode::kUnavailable) << "every timestamp was read";
}

TEST_F(NetTest, APacketWithoutTimestampsSaysSo) {
  msghdr msg{};
  EXPECT_FALSE(ReceiveTime(msg).ok());
  EXPECT_STREQ(TimestampSourceName(ReceiveTime(msg).source), "none");
  EXPECT_FALSE(EnableTimestamping(-1).ok());
}

}  // namespace
}  // namespace ticktrace::net
