// The kernel's (or the NIC's) packet timestamps, for stamp_at: when a packet
// really arrived, and when a sent one really left (docs/api.md, "Timestamps
// from other clocks"). Linux's SO_TIMESTAMPING, wrapped:
//
//   ticktrace::net::EnableTimestamping(fd);            // once per socket
//   char control[ticktrace::net::kControlBytes];       // recvmsg's msg_control
//   ... recvmsg(fd, &msg, 0) ...
//   ticktrace::net::PacketTime rx = ticktrace::net::ReceiveTime(msg);
//   if (rx.ok()) ticktrace::stamp_at(wire_rx, id, rx.ns, rx.clock());
//   ... send(fd, ...) ...
//   ticktrace::Result<ticktrace::net::PacketTime> tx = ticktrace::net::ReadSendTime(fd);
//   if (tx.ok()) ticktrace::stamp_at(wire_tx, id, tx->ns, tx->clock());
//
// Hardware timestamps (the NIC's PTP hardware clock) are preferred when the
// packet carries one, and PacketTime::source says which one it got. The NIC
// gives them only once its driver has been told to (SIOCSHWTSTAMP, e.g.
// `hwstamp_ctl -i eth0 -r 1 -t 1`, which needs root); they are in the PHC's
// timescale, which phc2sys keeps on CLOCK_REALTIME (or TAI: then subtract the
// UTC offset before stamp_at). Software timestamps are CLOCK_REALTIME.
//
// The kernel switches software receive timestamps on for the whole system a
// moment after the first socket asks (a deferred switch): packets received
// in the first milliseconds after EnableTimestamping may carry none, and
// ReceiveTime says so (source kNone). Send a packet or two first if the
// first ones matter.
//
// Not the hot path: these are system calls and control-message parsing, made
// where the program already calls recvmsg/send. Any thread may call them on
// its own sockets.

#ifndef TICKTRACE_NET_H_
#define TICKTRACE_NET_H_

#include <sys/socket.h>
#include <time.h>  // before linux/errqueue.h, whose scm_timestamping holds timespecs

#include <linux/errqueue.h>

#include <cstddef>
#include <cstdint>

#include "ticktrace/status.h"
#include "ticktrace/trace.h"

namespace ticktrace::net {

enum class TimestampSource : uint8_t {
  kNone = 0,      // the packet carried no timestamp
  kSoftware = 1,  // the kernel's, CLOCK_REALTIME
  kHardware = 2,  // the NIC's PTP hardware clock (raw)
};

// "none", "software" or "hardware".
const char* TimestampSourceName(TimestampSource source);

struct PacketTime {
  int64_t ns = 0;  // since the Unix epoch, in the source's timescale
  TimestampSource source = TimestampSource::kNone;

  bool ok() const { return source != TimestampSource::kNone; }
  // The clock to give stamp_at: kPhc for hardware, kRealtime for software.
  Clock clock() const {
    return source == TimestampSource::kHardware ? Clock::kPhc : Clock::kRealtime;
  }
};

// Room for the control messages a timestamped recvmsg or error-queue read
// returns (the timestamps, and the error-queue's extended error).
inline constexpr size_t kControlBytes =
    CMSG_SPACE(sizeof(scm_timestamping)) + CMSG_SPACE(sizeof(sock_extended_err) + 64) + 64;

// Enables SO_TIMESTAMPING on `fd` (UDP or TCP): software and hardware stamps
// for received packets, and for sent ones through the error queue (ids
// counted from 0, timestamps only: the packet is not looped back). Error
// (with errno's text) when the kernel refuses.
Status EnableTimestamping(int fd);

// The receive timestamp among `msg`'s control messages (after recvmsg on a
// socket EnableTimestamping enabled): hardware if present, else software;
// source kNone when there is neither.
PacketTime ReceiveTime(const msghdr& msg);

// Reads one send timestamp from `fd`'s error queue without waiting. `id`
// (if given) receives the sent packet's number (0 for the first send after
// EnableTimestamping). Unavailable when none is queued yet (the packet may
// not have left: try again), another error when the read failed.
Result<PacketTime> ReadSendTime(int fd, uint32_t* id = nullptr);

}  // namespace ticktrace::net

#endif  // TICKTRACE_NET_H_
