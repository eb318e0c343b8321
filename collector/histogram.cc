#include "collector/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ticktrace::collect {

Histogram::Histogram() : positive_(kBuckets, 0), negative_(kBuckets, 0) {}

int Histogram::BucketOf(double magnitude) {
  // The double's exponent field is the octave; its top mantissa bits are the
  // sub-bucket. No log() call on the per-sample path.
  uint64_t bits;
  std::memcpy(&bits, &magnitude, sizeof(bits));
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  if (exponent > kMaxExponent) return kBuckets - 1;
  const int sub = static_cast<int>((bits >> (52 - kSubBucketBits)) & (kSubBuckets - 1));
  return (exponent - kMinExponent) * kSubBuckets + sub;
}

double Histogram::Midpoint(int bucket) {
  const int exponent = bucket / kSubBuckets + kMinExponent;
  const int sub = bucket % kSubBuckets;
  return std::ldexp(1.0 + (sub + 0.5) / kSubBuckets, exponent);
}

void Histogram::Add(double value_ns) {
  if (std::isnan(value_ns)) return;
  if (count_ == 0) {
    min_ = max_ = value_ns;
  } else {
    min_ = std::min(min_, value_ns);
    max_ = std::max(max_, value_ns);
  }
  ++count_;
  sum_ += value_ns;
  const double magnitude = std::fabs(value_ns);
  if (magnitude < kMinResolvedNs) {
    ++near_zero_;
  } else if (value_ns > 0) {
    ++positive_[BucketOf(magnitude)];
  } else {
    ++negative_[BucketOf(magnitude)];
  }
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
  near_zero_ += other.near_zero_;
  for (int i = 0; i < kBuckets; ++i) {
    positive_[i] += other.positive_[i];
    negative_[i] += other.negative_[i];
  }
}

double Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank (1-based) of the value to report.
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  double value = max_;
  bool found = false;
  for (int i = kBuckets - 1; i >= 0 && !found; --i) {  // most negative first
    seen += negative_[i];
    if (seen >= rank) {
      value = -Midpoint(i);
      found = true;
    }
  }
  if (!found) {
    seen += near_zero_;
    if (seen >= rank) {
      value = 0;
      found = true;
    }
  }
  for (int i = 0; i < kBuckets && !found; ++i) {
    seen += positive_[i];
    if (seen >= rank) {
      value = Midpoint(i);
      found = true;
    }
  }
  return std::clamp(value, min_, max_);
}

}  // namespace ticktrace::collect
