// A log-linear histogram of latencies in ns with bounded relative error.
//
// Each power-of-two range [2^e, 2^(e+1)) of |value| is split into
// kSubBuckets equal buckets, so a bucket is at most 1/128 of its lower edge
// wide; a percentile reports the bucket's midpoint (clamped to the exact
// min/max), which is within 1/256 < 0.4% of every value in the bucket.
// Values with |v| below kMinResolvedNs share one bucket around zero (they are
// far below the TSC step). Negative values (cross-core differences) have
// their own mirrored buckets. min, max, count and the sum (mean) are exact.
//
// Encode()/Decode() give the compact form stored in intervals.histogram and
// stage_stats.histogram (docs/store.md, "Histogram encoding"): only non-empty
// buckets, delta-coded varints; a few hundred bytes for a typical second.
//
// Not thread-safe; one owner thread.

#ifndef TICKTRACE_STORE_HISTOGRAM_H_
#define TICKTRACE_STORE_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ticktrace::store {

class SparseHistogram;

class Histogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr int kSubBuckets = 1 << kSubBucketBits;  // 128 per octave
  static constexpr int kMinExponent = -4;                  // 1/16 ns
  static constexpr int kMaxExponent = 63;
  static constexpr int kOctaves = kMaxExponent - kMinExponent + 1;
  static constexpr int kBuckets = kOctaves * kSubBuckets;
  static constexpr double kMinResolvedNs = 1.0 / 16;

  Histogram();

  // Adds one value in ns. Any thread that owns the histogram.
  void Add(double value_ns);
  // Adds every value of `other`.
  void Merge(const Histogram& other);
  // The same for a sparse histogram: touches its non-empty buckets only.
  void Merge(const SparseHistogram& other);

  uint64_t count() const { return count_; }
  double min() const { return count_ ? min_ : 0; }
  double max() const { return count_ ? max_ : 0; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  // The q-quantile (0 <= q <= 1), e.g. 0.999; 0 when empty. Relative error
  // at most 1/256 for |values| >= kMinResolvedNs.
  double Quantile(double q) const;
  // How many values are <= `value_ns`, to the bucket: a bucket counts when
  // its midpoint is <= value_ns (Prometheus-style cumulative buckets).
  uint64_t CountAtMost(double value_ns) const;
  double sum() const { return sum_; }
  // Calls `visit(value_ns, count)` for every non-empty bucket, ascending by
  // value: a bucket's value is its midpoint clamped to [min(), max()] (what
  // Quantile() reports for it), 0 for the near-zero bucket. Exports that
  // re-bucket into another format call it (viewer's export --format hlog).
  void ForEachBucket(const std::function<void(double value_ns, uint64_t count)>& visit) const;

  // The compact encoding (see above). Decode() checks untrusted bytes:
  // InvalidArgument for anything that is not an encoding of this version.
  std::string Encode() const;
  static absl::StatusOr<Histogram> Decode(std::string_view bytes);
  // Adds the histogram encoded in `bytes` to this one without building it
  // (no 140 kB histogram per call): what a reader merging thousands of
  // intervals wants (viewer's window statistics). The same checks as
  // Decode(); on InvalidArgument nothing was added.
  absl::Status MergeEncoded(std::string_view bytes);

 private:
  friend class SparseHistogram;
  friend class HistogramBuilder;
  static int BucketOf(double magnitude);  // REQUIRES: magnitude >= kMinResolvedNs
  static double Midpoint(int bucket);

  std::vector<uint64_t> positive_;  // kBuckets
  std::vector<uint64_t> negative_;  // kBuckets, by |value|
  uint64_t near_zero_ = 0;
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = 0;
  double max_ = 0;
};

// A histogram kept as its non-empty buckets only: what one batch's samples
// of one (stage, interval) add to it, shipped from the collector's analysis
// thread to the store's writer. The buckets, the summary and the bytes of
// Encode() are those of the Histogram that holds the same values, so a
// store cannot tell which of the two wrote a row; a typical second is a few
// hundred entries instead of Histogram's 139 kB of mostly zeros.
//
// Fill it on a hot path with a HistogramBuilder; Add() here is a sorted
// insert, linear in the entries, for the few values of tests and one-off
// conversions. Not thread-safe; one owner thread at a time.
class SparseHistogram {
 public:
  struct Bucket {
    uint32_t index = 0;  // Histogram's bucket of |value|
    uint64_t count = 0;  // > 0
  };

  // Adds one value in ns (see above: not for hot paths).
  void Add(double value_ns);
  // Adds every value of `other`: a merge of the two sorted bucket lists.
  void Merge(const SparseHistogram& other);

  uint64_t count() const { return count_; }
  double min() const { return count_ ? min_ : 0; }
  double max() const { return count_ ? max_ : 0; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  double sum() const { return sum_; }
  uint64_t near_zero() const { return near_zero_; }
  // The non-empty buckets of positive values and of negative ones (by
  // |value|), each ascending by index.
  const std::vector<Bucket>& positive() const { return positive_; }
  const std::vector<Bucket>& negative() const { return negative_; }

  // Histogram::Encode()'s bytes for the same values.
  std::string Encode() const;

 private:
  friend class Histogram;
  friend class HistogramBuilder;

  std::vector<Bucket> positive_;
  std::vector<Bucket> negative_;
  uint64_t near_zero_ = 0;
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = 0;
  double max_ = 0;
};

// Gathers values into a dense array (Histogram's speed per value) and hands
// them out as a SparseHistogram. Reusable: Take() empties it by zeroing only
// the buckets its values touched, so one builder serves batch after batch
// without the 139 kB of zeroing a fresh Histogram costs.
class HistogramBuilder {
 public:
  HistogramBuilder();

  void Add(double value_ns);
  bool empty() const { return count_ == 0; }
  // Replaces `*out` with what was added since the last Take() and starts
  // afresh.
  void Take(SparseHistogram* out);

 private:
  std::vector<uint64_t> positive_;  // kBuckets
  std::vector<uint64_t> negative_;  // kBuckets, by |value|
  // The buckets that went from zero to one since the last Take(), unsorted.
  std::vector<uint32_t> touched_positive_;
  std::vector<uint32_t> touched_negative_;
  uint64_t near_zero_ = 0;
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = 0;
  double max_ = 0;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_HISTOGRAM_H_
