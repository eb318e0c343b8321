// libFuzzer target: arbitrary bytes presented as a segment. Whatever they
// hold, the reader must return a Status or read within bounds — ASan and
// UBSan (built in) turn any out-of-bounds read or undefined behaviour into a
// crash that libFuzzer reports.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Segments are mapped page-aligned; the header holds atomics that need alignment.
  auto* base = static_cast<uint8_t*>(std::aligned_alloc(ticktrace::abi::kCacheLineSize,
                                                        (size + 63) / 64 * 64 + 64));
  if (base == nullptr) return 0;
  if (size > 0) std::memcpy(base, data, size);
  // Any pid works: the header's pid must match the name, and the fuzzer can find 4242.
  auto reader = ticktrace::SegmentReader::OpenMemory("ticktrace.fuzz.4242", base, size);
  if (reader.ok()) {
    ticktrace::SegmentReader& r = **reader;
    (void)r.counters();
    auto tags = r.Tags();
    const uint32_t tag_count = tags.ok() ? static_cast<uint32_t>(tags->size()) : 0;
    std::vector<ticktrace::abi::Record> records;
    for (uint32_t slot = 0; slot < r.info().slot_count; ++slot) {
      (void)r.Slot(slot);
      records.clear();
      auto end = r.Peek(slot, 1024, &records);
      for (const auto& record : records) (void)ticktrace::ValidateRecord(record, tag_count);
      if (end.ok()) r.Commit(slot, *end);
      (void)r.FreeIfDrained(slot);
    }
  }
  std::free(base);
  return 0;
}
