// Sample and stamp flags: one bit each, as stored in samples.flags,
// orders.flags (the OR of its samples') and the packed stamps (docs/store.md,
// "Flags"). The only definition; the collector, the viewer and the tests use
// these.

#ifndef TICKTRACE_STORE_FLAGS_H_
#define TICKTRACE_STORE_FLAGS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ticktrace::store {

inline constexpr uint32_t kFlagMigrated = 1;     // a span's two ends on different cores
inline constexpr uint32_t kFlagNegative = 2;     // below zero beyond the cores' skew bound
inline constexpr uint32_t kFlagCrossCore = 4;    // the two ends read on different cores
inline constexpr uint32_t kFlagSaturated = 8;    // a span of 2^32 ticks or more: a lower bound
inline constexpr uint32_t kFlagSkew = 16;        // cross-core, below zero within the bound
inline constexpr uint32_t kFlagOutOfOrder = 32;  // same core below zero, or against the pipeline
inline constexpr uint32_t kFlagLate = 64;        // arrived after its order was emitted
inline constexpr uint32_t kFlagCrossHost = 128;  // ends on two hosts: from UTC, not the TSC
// An end read by another clock (stamp_at: a kernel or NIC packet timestamp, a
// venue's time), placed through the UTC anchors; it carries that clock's
// uncertainty. Marks the sample, which stays in the percentiles.
inline constexpr uint32_t kFlagExternal = 256;

// Kept out of the percentiles unless the run includes flagged samples.
inline constexpr uint32_t kFlagsExcludedByDefault =
    kFlagMigrated | kFlagNegative | kFlagOutOfOrder | kFlagSaturated;

struct FlagName {
  uint32_t bit;
  std::string_view name;  // also the column name of its count in intervals
};

// Every flag, lowest bit first.
inline constexpr std::array<FlagName, 8> kFlagNames = {{
    {kFlagMigrated, "migrated"},
    {kFlagNegative, "negative"},
    {kFlagCrossCore, "cross_core"},
    {kFlagSaturated, "saturated"},
    {kFlagSkew, "skew"},
    {kFlagOutOfOrder, "out_of_order"},
    {kFlagLate, "late"},
    {kFlagCrossHost, "cross_host"},
}};

// Every flag a sample may carry: kFlagNames and external, which is not
// counted per interval (so has no column there) but is said wherever a
// sample's flags are named (exports, words).
inline constexpr std::array<FlagName, kFlagNames.size() + 1> kAllFlagNames = [] {
  std::array<FlagName, kFlagNames.size() + 1> all{};
  for (size_t i = 0; i < kFlagNames.size(); ++i) all[i] = kFlagNames[i];
  all[kFlagNames.size()] = FlagName{kFlagExternal, "external"};
  return all;
}();

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_FLAGS_H_
