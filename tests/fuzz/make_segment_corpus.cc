// Writes seed inputs for segment_reader_fuzzer: real segments made by
// libtrace (small geometry), with records of every kind, saved as files.
// Usage: make_segment_corpus <output-dir>

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_segment_corpus <output-dir>\n");
    return 2;
  }
  ticktrace::Options options;
  options.session = "fuzzseed";
  options.ring_records = 8;
  options.rings = 2;
  if (!ticktrace::Init(options).ok()) return 1;
  static const ticktrace::Tag a("stage_a"), b("stage_b");
  ticktrace::stamp(a, 1);
  ticktrace::stamp_rdtscp(b, 1);
  { ticktrace::Span span(a, 2); }
  ticktrace::link(3, 1);
  std::thread([&] { for (int i = 0; i < 12; ++i) ticktrace::stamp(b, i); }).join();
  const std::string name = ticktrace::CurrentSegmentName();
  auto reader = ticktrace::SegmentReader::Open(name);
  if (!reader.ok()) return 1;
  // Present it under the fuzzer's fixed pid.
  std::string bytes(reinterpret_cast<const char*>((*reader)->base_for_testing()),
                    (*reader)->info().segment_size);
  const uint32_t pid = 4242;
  std::memcpy(bytes.data() + offsetof(ticktrace::abi::SegmentHeader, pid), &pid, sizeof(pid));
  std::ofstream(std::string(argv[1]) + "/valid_segment", std::ios::binary) << bytes;
  std::ofstream(std::string(argv[1]) + "/header_only", std::ios::binary)
      << bytes.substr(0, sizeof(ticktrace::abi::SegmentHeader));
  (void)ticktrace::RemoveSegment(name);
  return 0;
}
