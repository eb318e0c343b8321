#include "viewer/export/hdr_encoding.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ticktrace::view::internal {
namespace {

constexpr uint32_t kV2EncodingCookie = 0x1c849303 | 0x10;
constexpr uint32_t kV2CompressedEncodingCookie = 0x1c849304 | 0x10;

void PutBigEndian32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
void PutBigEndian64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

// HdrHistogram's ZigZag LEB128-64b9B: seven bits a byte for the first eight
// bytes, all eight bits in a ninth (so a 64-bit value takes at most 9).
void PutZigZag(std::string* out, int64_t value) {
  uint64_t v = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  for (int i = 0; i < 8; ++i) {
    if ((v >> 7) == 0) {
      out->push_back(static_cast<char>(v));
      return;
    }
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

HdrCounts::HdrCounts(int64_t highest_trackable, int significant_digits)
    : highest_trackable_(std::max<int64_t>(2, highest_trackable)),
      significant_digits_(std::clamp(significant_digits, 1, 5)) {
  // As AbstractHistogram's init() with lowestDiscernibleValue 1 (unit
  // magnitude 0).
  int64_t largest_single_unit = 2;
  for (int i = 0; i < significant_digits_; ++i) largest_single_unit *= 10;
  const int sub_bucket_count_magnitude =
      static_cast<int>(std::ceil(std::log2(static_cast<double>(largest_single_unit))));
  sub_bucket_half_count_magnitude_ = std::max(sub_bucket_count_magnitude, 1) - 1;
  const int64_t sub_bucket_count = int64_t{1} << (sub_bucket_half_count_magnitude_ + 1);
  sub_bucket_half_count_ = sub_bucket_count / 2;
  sub_bucket_mask_ = sub_bucket_count - 1;
  leading_zero_count_base_ = 64 - sub_bucket_half_count_magnitude_ - 1;
}

int32_t HdrCounts::IndexOf(int64_t value) const {
  const int bucket_index =
      leading_zero_count_base_ -
      std::countl_zero(static_cast<uint64_t>(value) | static_cast<uint64_t>(sub_bucket_mask_));
  const int64_t sub_bucket_index = value >> bucket_index;
  const int64_t bucket_base_index = int64_t{bucket_index + 1}
                                    << sub_bucket_half_count_magnitude_;
  return static_cast<int32_t>(bucket_base_index + (sub_bucket_index - sub_bucket_half_count_));
}

void HdrCounts::Record(int64_t value, uint64_t count) {
  if (count == 0) return;
  value = std::clamp<int64_t>(value, 0, highest_trackable_);
  counts_[IndexOf(value)] += count;
  total_ += count;
  max_value_ = std::max(max_value_, value);
}

std::string HdrCounts::EncodeV2() const {
  std::string payload;
  int32_t next = 0;  // the index the payload has reached
  for (const auto& [index, count] : counts_) {
    const int32_t zeros = index - next;
    if (zeros == 1) PutZigZag(&payload, 0);
    if (zeros > 1) PutZigZag(&payload, -int64_t{zeros});
    PutZigZag(&payload, static_cast<int64_t>(count));
    next = index + 1;
  }
  std::string out;
  PutBigEndian32(&out, kV2EncodingCookie);
  PutBigEndian32(&out, static_cast<uint32_t>(payload.size()));
  PutBigEndian32(&out, 0);  // normalizingIndexOffset
  PutBigEndian32(&out, static_cast<uint32_t>(significant_digits_));
  PutBigEndian64(&out, 1);  // lowestDiscernibleValue
  PutBigEndian64(&out, static_cast<uint64_t>(highest_trackable_));
  PutBigEndian64(&out, std::bit_cast<uint64_t>(1.0));  // integerToDoubleValueConversionRatio
  return out + payload;
}

absl::StatusOr<std::string> HdrCounts::EncodeCompressedBase64() const {
  const std::string plain = EncodeV2();
  uLongf compressed_size = compressBound(static_cast<uLong>(plain.size()));
  std::string compressed(compressed_size, '\0');
  // zlib's format (header, deflate, adler32): what Java's Inflater and
  // zlib.inflateSync in JavaScript expect.
  const int rc = compress2(reinterpret_cast<Bytef*>(compressed.data()), &compressed_size,
                           reinterpret_cast<const Bytef*>(plain.data()),
                           static_cast<uLong>(plain.size()), Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) return absl::InternalError(absl::StrCat("zlib compress2 failed: ", rc));
  compressed.resize(compressed_size);
  std::string out;
  PutBigEndian32(&out, kV2CompressedEncodingCookie);
  PutBigEndian32(&out, static_cast<uint32_t>(compressed.size()));
  out += compressed;
  return absl::Base64Escape(out);
}

}  // namespace ticktrace::view::internal
