// Appends values in ClickHouse's RowBinary format (little-endian fixed-width
// numbers, strings and arrays as a LEB128 length then the bytes or elements,
// Nullable as a 1-byte null marker then the value). The ClickHouseWriter
// builds its INSERT bodies with it; x86-64 is little-endian, so numbers are
// copied as they are.

#ifndef TICKTRACE_STORE_CLICKHOUSE_ROWBINARY_H_
#define TICKTRACE_STORE_CLICKHOUSE_ROWBINARY_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ticktrace::store {

class RowBinary {
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

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_CLICKHOUSE_ROWBINARY_H_
