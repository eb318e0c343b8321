// HdrHistogram's V2 encoding, written here so that `export --format hlog`
// (hlog_export.cc, its only caller) needs no HdrHistogram library.
//
// A histogram of integer values with HdrHistogram's bucket layout
// (lowestDiscernibleValue 1, `significant_digits` decimal digits: every
// value v is counted in a bucket at most v / 10^digits wide), encoded as
// HdrHistogram's Java, C and JavaScript implementations decode it:
//
//   V2 encoding (big-endian):
//     i32 cookie 0x1c849313   i32 payload length   i32 normalizingIndexOffset (0)
//     i32 significant digits  i64 lowestDiscernibleValue  i64 highestTrackableValue
//     f64 integerToDoubleValueConversionRatio (1.0)
//     payload: counts[0 .. index of the largest value], each a ZigZag
//     LEB128-64b9B varint; a run of k > 1 zero counts is one varint -k.
//   compressed: i32 cookie 0x1c849314, i32 length, zlib deflate of the above.
//
// The interval log (hlog_export.cc) carries the compressed form in base64.
#ifndef TICKTRACE_VIEW_HDR_ENCODING_H_
#define TICKTRACE_VIEW_HDR_ENCODING_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace ticktrace::view::internal {

class HdrCounts {
 public:
  // REQUIRES: 1 <= significant_digits <= 5, highest_trackable >= 2.
  HdrCounts(int64_t highest_trackable, int significant_digits);

  // Adds `count` values `value`, clamped to [0, highest_trackable].
  void Record(int64_t value, uint64_t count);

  uint64_t total() const { return total_; }
  int64_t max() const { return max_value_; }

  // The V2 encoding and the compressed V2 encoding in base64 (what a log
  // line carries). Internal on a zlib failure.
  std::string EncodeV2() const;
  absl::StatusOr<std::string> EncodeCompressedBase64() const;

 private:
  int32_t IndexOf(int64_t value) const;

  int64_t highest_trackable_;
  int significant_digits_;
  int sub_bucket_half_count_magnitude_ = 0;
  int64_t sub_bucket_half_count_ = 0;
  int64_t sub_bucket_mask_ = 0;
  int leading_zero_count_base_ = 0;
  std::map<int32_t, uint64_t> counts_;  // sparse: index -> count
  uint64_t total_ = 0;
  int64_t max_value_ = 0;
};

}  // namespace ticktrace::view::internal

#endif  // TICKTRACE_VIEW_HDR_ENCODING_H_
