// Varints for the store's packed encodings (histogram.cc, detail.cc): LEB128,
// 7 bits a byte, low bits first.

#ifndef TICKTRACE_STORE_VARINT_H_
#define TICKTRACE_STORE_VARINT_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ticktrace::store::internal {

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads from untrusted bytes, refusing to run past their end.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Double(double* v) {
    if (bytes_.size() - pos_ < sizeof(*v)) return false;
    std::memcpy(v, bytes_.data() + pos_, sizeof(*v));
    pos_ += sizeof(*v);
    return true;
  }
  bool Byte(uint8_t* v) {
    if (pos_ >= bytes_.size()) return false;
    *v = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_VARINT_H_
