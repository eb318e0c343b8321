// Byte-level writer and reader for the analyzer's checkpoint state
// (collector/stream/checkpoint.h): fixed-width little-endian integers and doubles,
// length-prefixed strings. The reader checks every length against what is
// left and fails (ok() false) instead of reading out of bounds: a checkpoint
// file is untrusted input like any other file.
//
// Not thread-safe: one owner.

#ifndef TICKTRACE_COLLECTOR_STATE_CODEC_H_
#define TICKTRACE_COLLECTOR_STATE_CODEC_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace ticktrace::collect {

class StateWriter {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint64_t>(s.size());
    out_.append(s);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class StateReader {
 public:
  explicit StateReader(std::string_view in) : in_(in) {}

  template <typename T>
  T Get() {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    T v{};
    if (!ok_ || in_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string GetString() {
    const uint64_t n = Get<uint64_t>();
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items that each take at least `min_item_bytes`: fails for a
  // count the remaining bytes cannot hold, so that a corrupt count never
  // makes a reader reserve or loop beyond the input.
  uint64_t GetCount(size_t min_item_bytes) {
    const uint64_t n = Get<uint64_t>();
    if (ok_ && min_item_bytes > 0 && n > (in_.size() - pos_) / min_item_bytes) ok_ = false;
    return ok_ ? n : 0;
  }
  void Fail() { ok_ = false; }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STATE_CODEC_H_
