// A hostile neighbour for the ring-damage test: a process that publishes a
// segment of its own in a session (the real layout, ticktrace/abi.h, built
// by CraftSegment) whose rings have impossible indices, and rewrites those
// indices every 2 ms for as long as it runs, as an attacker resets them
// after each collector commit.
//
//   hostile_ring --session S
//
// Slot 0 (wrap):      read_index 2^64 - 8, write_index 8: 16 records "waiting"
//                     by unsigned subtraction, an index range that wraps 2^64.
// Slot 1 (backwards): read_index 0, write_index 16, records 0..15 holding the
//                     intruder orders kIntruderOrderBase + 1..8 (stamps a, b):
//                     drained once, then read_index is put back to 0.
// Slot 2 (too many):  read_index 0, write_index 1000 in a 256-record ring.
// Slot 3 (write behind read): read_index 100, write_index 50.
// Prints "segment <name>" once the segment is in place; exits on SIGTERM.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/reliability/safety_util.h"

namespace {

namespace abi = ticktrace::abi;

constexpr uint32_t kSlots = 4;
constexpr uint32_t kRing = 256;
constexpr uint64_t kIndices[kSlots][2] = {  // {read_index, write_index}
    {~uint64_t{0} - 7, 8},
    {0, 16},
    {0, 1000},
    {100, 50},
};

// Relaxed: a flag polled every 2 ms; nothing is published through it.
std::atomic<bool> g_stop{false};
extern "C" void OnTerm(int) { g_stop.store(true, std::memory_order_relaxed); }

abi::SlotControl* Slot(uint8_t* base, uint32_t slot) {
  const auto* h = reinterpret_cast<const abi::SegmentHeader*>(base);
  return reinterpret_cast<abi::SlotControl*>(base + h->slots_offset + slot * h->slot_stride);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--session") {
    std::fprintf(stderr, "usage: hostile_ring --session S\n");
    return 2;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  const uint32_t pid = static_cast<uint32_t>(getpid());
  // Slot 0's intruder orders come from CraftSegment (none: its records are
  // never meant to be read); the other slots are claimed and filled here.
  std::string bytes = ticktrace::reliability::CraftSegment(pid, 0, "hostile", kSlots, kRing);
  auto* base = reinterpret_cast<uint8_t*>(bytes.data());
  for (uint32_t s = 1; s < kSlots; ++s) {
    abi::SlotControl* c = Slot(base, s);
    c->state.store(abi::kSlotOwned, std::memory_order_relaxed);
    c->tid = pid;
    c->generation.store(1, std::memory_order_relaxed);
    std::strcpy(c->thread_name, "intruder");
  }
  auto* records = reinterpret_cast<abi::Record*>(reinterpret_cast<uint8_t*>(Slot(base, 1)) +
                                                 sizeof(abi::SlotControl));
  for (uint32_t i = 0; i < 8; ++i) {
    for (uint32_t stage = 0; stage < 2; ++stage) {
      abi::Record& r = records[2 * i + stage];
      r.tsc = 1'000'000 + uint64_t{i} * 10'000 + stage * 2'500;
      r.order_id = ticktrace::reliability::kIntruderOrderBase + i + 1;
      r.aux = abi::kAuxUnknown;
      r.tag_id = static_cast<uint16_t>(stage);
      r.kind = abi::kStamp;
    }
  }
  for (uint32_t s = 0; s < kSlots; ++s) {
    Slot(base, s)->read_index.store(kIndices[s][0], std::memory_order_relaxed);
    Slot(base, s)->write_index.store(kIndices[s][1], std::memory_order_relaxed);
  }
  // Written whole under a name the collector ignores, then renamed into
  // place: the collector never sees half a segment.
  char session_name[256];
  std::snprintf(session_name, sizeof(session_name), "ticktrace.%s.%u", argv[2], pid);
  const std::string tmp = std::string("/dev/shm/.hostile.") + std::to_string(pid);
  const std::string path = std::string("/dev/shm/") + session_name;
  const int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      rename(tmp.c_str(), path.c_str()) != 0) {
    std::perror("hostile_ring: cannot publish the segment");
    return 1;
  }
  void* p = mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return 1;
  auto* live = static_cast<uint8_t*>(p);
  std::printf("segment %s\n", session_name);
  std::fflush(stdout);
  while (!g_stop.load(std::memory_order_relaxed)) {
    for (uint32_t s = 0; s < kSlots; ++s) {
      // Release: the records of slot 1 stay published for a reader that sees
      // write_index (the same order a producer uses).
      Slot(live, s)->read_index.store(kIndices[s][0], std::memory_order_relaxed);
      Slot(live, s)->write_index.store(kIndices[s][1], std::memory_order_release);
    }
    usleep(2000);
  }
  munmap(p, bytes.size());
  return 0;
}
