#include "ticktrace/store/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "store/common/varint.h"

namespace ticktrace::store {
namespace {

// The exact part of every form (Histogram, SparseHistogram, HistogramBuilder,
// an encoding), as values: the count, sum, min, max and the near-zero count.
// An encoding's fixed part is the version and these; its bucket lists follow.
struct EncodedSummary {
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
  uint64_t near_zero = 0;
};

// The same fields of one histogram, updated in place: the one copy of the
// exact min/max rule that adding a value and every form of merge share.
struct Summary {
  uint64_t* count;
  double* sum;
  double* min;
  double* max;
  uint64_t* near_zero;

  // The caller buckets the value (near_zero included).
  void Add(double value_ns) const {
    if (*count == 0) {
      *min = *max = value_ns;
    } else {
      *min = std::min(*min, value_ns);
      *max = std::max(*max, value_ns);
    }
    ++*count;
    *sum += value_ns;
  }
  void Merge(const EncodedSummary& other) const {
    if (other.count == 0) return;
    if (*count == 0) {
      *min = other.min;
      *max = other.max;
    } else {
      *min = std::min(*min, other.min);
      *max = std::max(*max, other.max);
    }
    *count += other.count;
    *sum += other.sum;
    *near_zero += other.near_zero;
  }
};

}  // namespace

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
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Add(value_ns);
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
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Merge(
      {other.count_, other.sum_, other.min_, other.max_, other.near_zero_});
  for (int i = 0; i < kBuckets; ++i) {
    positive_[i] += other.positive_[i];
    negative_[i] += other.negative_[i];
  }
}

void Histogram::Merge(const SparseHistogram& other) {
  if (other.count_ == 0) return;
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Merge(
      {other.count_, other.sum_, other.min_, other.max_, other.near_zero_});
  for (const SparseHistogram::Bucket& b : other.positive_) positive_[b.index] += b.count;
  for (const SparseHistogram::Bucket& b : other.negative_) negative_[b.index] += b.count;
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

void Histogram::ForEachBucket(
    const std::function<void(double value_ns, uint64_t count)>& visit) const {
  if (count_ == 0) return;
  for (int i = kBuckets - 1; i >= 0; --i) {  // most negative first
    if (negative_[i] != 0) visit(std::clamp(-Midpoint(i), min_, max_), negative_[i]);
  }
  if (near_zero_ != 0) visit(std::clamp(0.0, min_, max_), near_zero_);
  for (int i = 0; i < kBuckets; ++i) {
    if (positive_[i] != 0) visit(std::clamp(Midpoint(i), min_, max_), positive_[i]);
  }
}

uint64_t Histogram::CountAtMost(double value_ns) const {
  uint64_t n = 0;
  for (int i = kBuckets - 1; i >= 0; --i) {
    if (negative_[i] != 0 && -Midpoint(i) <= value_ns) n += negative_[i];
  }
  if (value_ns >= 0) n += near_zero_;
  for (int i = 0; i < kBuckets; ++i) {
    if (positive_[i] != 0 && Midpoint(i) <= value_ns) n += positive_[i];
  }
  return n;
}

namespace {

constexpr uint8_t kEncodingVersion = 1;

void PutDouble(std::string* out, double v) {
  char bytes[sizeof(v)];
  std::memcpy(bytes, &v, sizeof(v));  // little-endian: ticktrace is x86-64 only
  out->append(bytes, sizeof(bytes));
}

using internal::Cursor;
using internal::PutVarint;

// Writes an encoding's fixed part (EncodedSummary); false when the histogram
// is empty, where the encoding ends.
bool PutSummary(std::string* out, const EncodedSummary& s) {
  out->push_back(static_cast<char>(kEncodingVersion));
  PutVarint(out, s.count);
  if (s.count == 0) return false;
  PutDouble(out, s.sum);
  PutDouble(out, s.min);
  PutDouble(out, s.max);
  PutVarint(out, s.near_zero);
  return true;
}

void PutBuckets(std::string* out, const std::vector<uint64_t>& buckets) {
  uint64_t nonzero = 0;
  for (uint64_t c : buckets) nonzero += c != 0;
  PutVarint(out, nonzero);
  int next = 0;  // the smallest index the next entry can have
  for (int i = 0; i < static_cast<int>(buckets.size()); ++i) {
    if (buckets[i] == 0) continue;
    PutVarint(out, static_cast<uint64_t>(i - next));
    PutVarint(out, buckets[i]);
    next = i + 1;
  }
}

bool GetBuckets(Cursor* in, std::vector<uint64_t>* buckets, uint64_t* total) {
  uint64_t nonzero = 0;
  if (!in->Varint(&nonzero) || nonzero > buckets->size()) return false;
  uint64_t next = 0;
  for (uint64_t k = 0; k < nonzero; ++k) {
    uint64_t gap = 0, count = 0;
    if (!in->Varint(&gap) || !in->Varint(&count) || count == 0) return false;
    if (gap >= buckets->size() - next) return false;
    const uint64_t i = next + gap;
    (*buckets)[i] = count;
    *total += count;
    if (*total < count) return false;  // overflow
    next = i + 1;
  }
  return true;
}

// GetBuckets() for MergeEncoded(): the (index, count) entries, same checks.
bool GetSparseBuckets(Cursor* in, size_t size, std::vector<std::pair<uint32_t, uint64_t>>* out,
                      uint64_t* total) {
  uint64_t nonzero = 0;
  if (!in->Varint(&nonzero) || nonzero > size) return false;
  out->clear();
  uint64_t next = 0;
  for (uint64_t k = 0; k < nonzero; ++k) {
    uint64_t gap = 0, count = 0;
    if (!in->Varint(&gap) || !in->Varint(&count) || count == 0) return false;
    if (gap >= size - next) return false;
    const uint64_t i = next + gap;
    out->emplace_back(static_cast<uint32_t>(i), count);
    *total += count;
    if (*total < count) return false;  // overflow
    next = i + 1;
  }
  return true;
}

absl::Status BadEncoding(std::string_view bytes, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("histogram encoding (", bytes.size(), " bytes): ", what));
}

// Reads the fixed part of `bytes` from `in`; an empty histogram must end there.
absl::Status ReadSummary(std::string_view bytes, Cursor* in, EncodedSummary* s) {
  uint8_t version = 0;
  if (!in->Byte(&version)) return BadEncoding(bytes, "empty");
  if (version != kEncodingVersion) {
    return BadEncoding(bytes, absl::StrCat("unknown version ", version));
  }
  if (!in->Varint(&s->count)) return BadEncoding(bytes, "truncated count");
  if (s->count == 0) {
    if (!in->done()) return BadEncoding(bytes, "bytes after an empty histogram");
    return absl::OkStatus();
  }
  if (!in->Double(&s->sum) || !in->Double(&s->min) || !in->Double(&s->max)) {
    return BadEncoding(bytes, "truncated sum/min/max");
  }
  if (!(s->min <= s->max)) return BadEncoding(bytes, "min above max");
  if (!in->Varint(&s->near_zero)) return BadEncoding(bytes, "truncated near-zero count");
  return absl::OkStatus();
}

// The checks after the bucket lists: they add up to the count, nothing follows.
absl::Status CheckBucketTotal(std::string_view bytes, const Cursor& in, uint64_t total,
                              uint64_t count) {
  if (total != count) return BadEncoding(bytes, "bucket counts do not add up to the count");
  if (!in.done()) return BadEncoding(bytes, "trailing bytes");
  return absl::OkStatus();
}

void PutSparseBuckets(std::string* out, const std::vector<SparseHistogram::Bucket>& buckets) {
  PutVarint(out, buckets.size());
  uint32_t next = 0;  // as PutBuckets(): the gap from the entry before
  for (const SparseHistogram::Bucket& b : buckets) {
    PutVarint(out, b.index - next);
    PutVarint(out, b.count);
    next = b.index + 1;
  }
}

// Adds the sorted `from` to the sorted `into`, keeping it sorted, one entry per index.
void MergeBuckets(std::vector<SparseHistogram::Bucket>* into,
                  const std::vector<SparseHistogram::Bucket>& from) {
  if (from.empty()) return;
  if (into->empty()) {
    *into = from;
    return;
  }
  std::vector<SparseHistogram::Bucket> out;
  out.reserve(into->size() + from.size());
  auto a = into->begin();
  auto b = from.begin();
  while (a != into->end() && b != from.end()) {
    if (a->index < b->index) {
      out.push_back(*a++);
    } else if (b->index < a->index) {
      out.push_back(*b++);
    } else {
      out.push_back({a->index, a->count + b->count});
      ++a;
      ++b;
    }
  }
  out.insert(out.end(), a, into->end());
  out.insert(out.end(), b, from.end());
  into->swap(out);
}

// Hands the touched buckets of `dense` to `out` in ascending order and zeroes them.
void TakeTouched(std::vector<uint64_t>* dense, std::vector<uint32_t>* touched,
                 std::vector<SparseHistogram::Bucket>* out) {
  std::sort(touched->begin(), touched->end());
  out->clear();
  out->reserve(touched->size());
  for (uint32_t i : *touched) {
    out->push_back({i, (*dense)[i]});
    (*dense)[i] = 0;
  }
  touched->clear();
}

}  // namespace

// --- SparseHistogram ---

void SparseHistogram::Add(double value_ns) {
  if (std::isnan(value_ns)) return;
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Add(value_ns);
  const double magnitude = std::fabs(value_ns);
  if (magnitude < Histogram::kMinResolvedNs) {
    ++near_zero_;
    return;
  }
  std::vector<Bucket>& buckets = value_ns > 0 ? positive_ : negative_;
  const uint32_t index = static_cast<uint32_t>(Histogram::BucketOf(magnitude));
  auto at = std::lower_bound(buckets.begin(), buckets.end(), index,
                             [](const Bucket& b, uint32_t i) { return b.index < i; });
  if (at != buckets.end() && at->index == index) {
    ++at->count;
  } else {
    buckets.insert(at, Bucket{index, 1});
  }
}

void SparseHistogram::Merge(const SparseHistogram& other) {
  if (other.count_ == 0) return;
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Merge(
      {other.count_, other.sum_, other.min_, other.max_, other.near_zero_});
  MergeBuckets(&positive_, other.positive_);
  MergeBuckets(&negative_, other.negative_);
}

std::string SparseHistogram::Encode() const {
  std::string out;
  if (!PutSummary(&out, {count_, sum_, min_, max_, near_zero_})) return out;
  PutSparseBuckets(&out, positive_);
  PutSparseBuckets(&out, negative_);
  return out;
}

// --- HistogramBuilder ---

HistogramBuilder::HistogramBuilder()
    : positive_(Histogram::kBuckets, 0), negative_(Histogram::kBuckets, 0) {}

void HistogramBuilder::Add(double value_ns) {
  if (std::isnan(value_ns)) return;
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Add(value_ns);
  const double magnitude = std::fabs(value_ns);
  if (magnitude < Histogram::kMinResolvedNs) {
    ++near_zero_;
    return;
  }
  const uint32_t index = static_cast<uint32_t>(Histogram::BucketOf(magnitude));
  if (value_ns > 0) {
    if (positive_[index]++ == 0) touched_positive_.push_back(index);
  } else {
    if (negative_[index]++ == 0) touched_negative_.push_back(index);
  }
}

void HistogramBuilder::Take(SparseHistogram* out) {
  TakeTouched(&positive_, &touched_positive_, &out->positive_);
  TakeTouched(&negative_, &touched_negative_, &out->negative_);
  out->near_zero_ = std::exchange(near_zero_, 0);
  out->count_ = std::exchange(count_, 0);
  out->sum_ = std::exchange(sum_, 0);
  out->min_ = std::exchange(min_, 0);
  out->max_ = std::exchange(max_, 0);
}

// --- Histogram's encoding ---

std::string Histogram::Encode() const {
  std::string out;
  if (!PutSummary(&out, {count_, sum_, min_, max_, near_zero_})) return out;
  PutBuckets(&out, positive_);
  PutBuckets(&out, negative_);
  return out;
}

absl::StatusOr<Histogram> Histogram::Decode(std::string_view bytes) {
  Cursor in(bytes);
  EncodedSummary summary;
  if (absl::Status s = ReadSummary(bytes, &in, &summary); !s.ok()) return s;
  Histogram h;
  h.count_ = summary.count;
  if (h.count_ == 0) return h;
  h.sum_ = summary.sum;
  h.min_ = summary.min;
  h.max_ = summary.max;
  h.near_zero_ = summary.near_zero;
  uint64_t total = h.near_zero_;
  if (!GetBuckets(&in, &h.positive_, &total) || !GetBuckets(&in, &h.negative_, &total)) {
    return BadEncoding(bytes, "bad bucket list");
  }
  if (absl::Status s = CheckBucketTotal(bytes, in, total, h.count_); !s.ok()) return s;
  return h;
}

absl::Status Histogram::MergeEncoded(std::string_view bytes) {
  Cursor in(bytes);
  EncodedSummary in_summary;
  if (absl::Status s = ReadSummary(bytes, &in, &in_summary); !s.ok()) return s;
  const auto& [count, sum, min, max, near_zero] = in_summary;
  if (count == 0) return absl::OkStatus();
  uint64_t total = near_zero;
  // Reused across calls on one thread: a merge of thousands of intervals
  // allocates them once.
  thread_local std::vector<std::pair<uint32_t, uint64_t>> positive, negative;
  if (!GetSparseBuckets(&in, kBuckets, &positive, &total) ||
      !GetSparseBuckets(&in, kBuckets, &negative, &total)) {
    return BadEncoding(bytes, "bad bucket list");
  }
  if (absl::Status s = CheckBucketTotal(bytes, in, total, count); !s.ok()) return s;
  Summary{&count_, &sum_, &min_, &max_, &near_zero_}.Merge(in_summary);
  for (const auto& [i, c] : positive) positive_[i] += c;
  for (const auto& [i, c] : negative) negative_[i] += c;
  return absl::OkStatus();
}

}  // namespace ticktrace::store
