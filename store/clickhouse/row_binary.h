// ClickHouse's RowBinary format, both directions: RowBinaryWriter builds the
// bodies of INSERT ... FORMAT RowBinary (the writer, the minute rollup) and
// RowBinaryCursor reads the answers of SELECT ... FORMAT RowBinary (the
// reader, the rollup's own SELECT). One codec, as ClickHouse keeps its
// BinaryRowInputFormat beside BinaryRowOutputFormat. Private to the store.
//
//   Int64/UInt64/Int32/UInt32/UInt8/Float64  fixed width, little-endian
//   String        LEB128 length, bytes (binary safe: histograms, detail)
//   Nullable(T)   u8 1 for NULL, else u8 0 then T
//   Array(T)      LEB128 count, then the elements
//
// x86-64 is little-endian, so numbers are copied as they are. The reader's
// queries cast their columns in SQL to the types read here, so a row is
// parsed exactly as the query wrote it. The bytes a cursor reads come from a
// server: every read checks the length; the first short read sets failed()
// and returns zeros, so a caller checks once per row.
#ifndef TICKTRACE_STORE_CLICKHOUSE_ROW_BINARY_H_
#define TICKTRACE_STORE_CLICKHOUSE_ROW_BINARY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ticktrace::store {

// Appends rows; EndRow() counts them (the batches table records how many).
class RowBinaryWriter {
 public:
  template <typename T>
  void Fixed(T v) {
    static_assert(std::is_arithmetic_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Fixed(v); }
  void I32(int32_t v) { Fixed(v); }
  void U64(uint64_t v) { Fixed(v); }
  void I64(int64_t v) { Fixed(v); }
  void F64(double v) { Fixed(v); }
  void Length(uint64_t n) {
    while (n >= 0x80) {
      out_.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out_.push_back(static_cast<char>(n));
  }
  void Str(std::string_view s) {
    Length(s.size());
    out_.append(s.data(), s.size());
  }
  template <typename T>
  void Nullable(const std::optional<T>& v) {
    if (!v.has_value()) {
      U8(1);
      return;
    }
    U8(0);
    Fixed(*v);
  }

  std::string& bytes() { return out_; }
  size_t rows() const { return rows_; }
  void EndRow() { ++rows_; }
  void Clear() {
    out_.clear();
    rows_ = 0;
  }

 private:
  std::string out_;
  size_t rows_ = 0;
};

// Reads the rows of one answer, column by column; the views it returns live
// as long as the answer's buffer.
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

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_CLICKHOUSE_ROW_BINARY_H_
