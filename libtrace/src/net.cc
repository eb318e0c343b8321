#include "ticktrace/net.h"

#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <string>

namespace ticktrace::net {
namespace {

int64_t TimespecToNs(const timespec& ts) {
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

bool NonZero(const timespec& ts) { return ts.tv_sec != 0 || ts.tv_nsec != 0; }

// The timestamps of one SCM_TIMESTAMPING message: ts[2] the raw hardware
// time, ts[0] the software time (ts[1] is deprecated and always zero).
PacketTime FromTimestamping(const scm_timestamping& t) {
  PacketTime p;
  if (NonZero(t.ts[2])) {
    p.ns = TimespecToNs(t.ts[2]);
    p.source = TimestampSource::kHardware;
  } else if (NonZero(t.ts[0])) {
    p.ns = TimespecToNs(t.ts[0]);
    p.source = TimestampSource::kSoftware;
  }
  return p;
}

std::string ErrnoText(const char* what, int error) {
  return std::string(what) + ": " + strerror(error);
}

}  // namespace

const char* TimestampSourceName(TimestampSource source) {
  switch (source) {
    case TimestampSource::kSoftware: return "software";
    case TimestampSource::kHardware: return "hardware";
    default: return "none";
  }
}

Status EnableTimestamping(int fd) {
  const unsigned flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_RX_HARDWARE |
                         SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_TX_HARDWARE |
                         SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RAW_HARDWARE |
                         SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) != 0) {
    return Status(ErrorCode::kFailedPrecondition,
                  ErrnoText("setsockopt(SO_TIMESTAMPING)", errno));
  }
  return Status();
}

PacketTime ReceiveTime(const msghdr& msg) {
  // CMSG_NXTHDR takes a non-const msghdr; nothing is written through it.
  msghdr* m = const_cast<msghdr*>(&msg);
  for (cmsghdr* c = CMSG_FIRSTHDR(m); c != nullptr; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING &&
        c->cmsg_len >= CMSG_LEN(sizeof(scm_timestamping))) {
      scm_timestamping t;
      memcpy(&t, CMSG_DATA(c), sizeof(t));
      return FromTimestamping(t);
    }
  }
  return PacketTime{};
}

Result<PacketTime> ReadSendTime(int fd, uint32_t* id) {
  alignas(cmsghdr) char control[kControlBytes];
  char data[64];
  iovec iov{data, sizeof(data)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Status(ErrorCode::kUnavailable, "no send timestamp queued yet");
    }
    return Status(ErrorCode::kInternal, ErrnoText("recvmsg(MSG_ERRQUEUE)", errno));
  }
  PacketTime time;
  bool have_id = false;
  uint32_t packet_id = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING &&
        c->cmsg_len >= CMSG_LEN(sizeof(scm_timestamping))) {
      scm_timestamping t;
      memcpy(&t, CMSG_DATA(c), sizeof(t));
      time = FromTimestamping(t);
    } else if (((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) &&
               c->cmsg_len >= CMSG_LEN(sizeof(sock_extended_err))) {
      sock_extended_err e;
      memcpy(&e, CMSG_DATA(c), sizeof(e));
      if (e.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) {
        packet_id = e.ee_data;
        have_id = true;
      }
    }
  }
  if (!time.ok()) {
    return Status(ErrorCode::kNotFound, "the error queue held a message without a send timestamp");
  }
  if (id != nullptr) *id = have_id ? packet_id : 0;
  return time;
}

}  // namespace ticktrace::net
