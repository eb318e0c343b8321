// Stamps once through an installed ticktrace and checks the record arrived.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

int main() {
  ticktrace::Options options;
  options.session = "t_consumer_" + std::to_string(getpid());
  options.ring_records = 64;
  options.rings = 1;
  if (absl::Status st = ticktrace::Init(options); !st.ok()) {
    std::fprintf(stderr, "consumer: %s\n", st.ToString().c_str());
    return 1;
  }
  static const ticktrace::Tag tag("consumer");
  ticktrace::stamp(tag, 42);
  const std::string name = ticktrace::CurrentSegmentName();
  auto reader = ticktrace::SegmentReader::Open(name);
  std::vector<ticktrace::abi::Record> records;
  const bool ok = reader.ok() && (*reader)->Peek(0, 10, &records).ok() && records.size() == 1 &&
                  records[0].order_id == 42;
  (void)ticktrace::RemoveSegment(name);
  std::printf("consumer: %s\n", ok ? "record found" : "record missing");
  return ok ? 0 : 1;
}
