// Reading ClickHouse's RowBinary output (FORMAT RowBinary): the rows of a
// SELECT as their columns' binary values, back to back, little-endian. The
// ClickHouse reader (clickhouse_store_reader.cc) asks for every answer in it
// and casts its columns in SQL to the types read here, so a row is parsed
// exactly as the query wrote it. Private to the viewer library.
//
//   Int64/UInt64/Int32/UInt32/UInt8/Float64  fixed width
//   String        varint length, bytes (binary safe: histograms, detail)
//   Nullable(T)   u8 1 for NULL, else u8 0 then T
//   Array(T)      varint count, then the elements
//
// The bytes come from a server: every read checks the length; the first
// short read sets failed() and returns zeros, so a caller checks once per row.
#ifndef TICKTRACE_VIEW_SRC_ROW_BINARY_H_
#define TICKTRACE_VIEW_SRC_ROW_BINARY_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticktrace::store::internal {

class RowBinaryCursor {
 public:
  explicit RowBinaryCursor(std::string_view bytes) : bytes_(bytes) {}

  bool at_end() const { return pos_ >= bytes_.size(); }
  bool failed() const { return failed_; }

  int64_t Int64() { return Fixed<int64_t>(); }
  uint64_t UInt64() { return Fixed<uint64_t>(); }
  int32_t Int32() { return Fixed<int32_t>(); }
  uint32_t UInt32() { return Fixed<uint32_t>(); }
  uint8_t UInt8() { return Fixed<uint8_t>(); }
  double Float64() { return Fixed<double>(); }

  // A String column; the view lives as long as the buffer.
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (failed_ || n > bytes_.size() - pos_) return Fail<std::string_view>();
    const std::string_view out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::string String() { return std::string(Bytes()); }

  std::optional<int64_t> NullableInt64() { return IsNull() ? std::nullopt : std::optional(Int64()); }
  std::optional<uint64_t> NullableUInt64() {
    return IsNull() ? std::nullopt : std::optional(UInt64());
  }
  std::optional<double> NullableFloat64() {
    return IsNull() ? std::nullopt : std::optional(Float64());
  }

  template <typename T, typename ReadOne>
  std::vector<T> Array(ReadOne read_one) {
    const uint64_t n = Varint();
    std::vector<T> out;
    if (failed_ || n > bytes_.size() - pos_) return Fail<std::vector<T>>();  // >= 1 byte each
    out.reserve(n);
    for (uint64_t i = 0; i < n && !failed_; ++i) out.push_back(read_one(*this));
    return out;
  }

  // An Array(String) column, as views into the buffer.
  std::vector<std::string_view> BytesArray() {
    return Array<std::string_view>([](RowBinaryCursor& c) { return c.Bytes(); });
  }

 private:
  template <typename T>
  T Fail() {
    failed_ = true;
    pos_ = bytes_.size();
    return T{};
  }

  template <typename T>
  T Fixed() {
    if (failed_ || bytes_.size() - pos_ < sizeof(T)) return Fail<T>();
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  bool IsNull() { return UInt8() != 0; }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (failed_ || pos_ >= bytes_.size()) return Fail<uint64_t>();
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail<uint64_t>();
  }

  std::string_view bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_VIEW_SRC_ROW_BINARY_H_
