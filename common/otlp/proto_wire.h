// The protobuf wire format, as much of it as OTLP's trace messages need
// (protobuf.dev/programming-guides/encoding): varints, fixed64, and
// length-delimited fields. Appends to a std::string.

#ifndef TICKTRACE_COMMON_OTLP_PROTO_WIRE_H_
#define TICKTRACE_COMMON_OTLP_PROTO_WIRE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ticktrace::otlp::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Base 128, least significant group first, the high bit saying "more".
inline void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A field's key: (field number << 3) | wire type, as a varint.
inline void AppendTag(std::string* out, uint32_t field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | type);
}

inline void AppendVarintField(std::string* out, uint32_t field, uint64_t v) {
  AppendTag(out, field, kVarint);
  AppendVarint(out, v);
}

// fixed64 and double: 8 bytes, little-endian (x86-64's own order).
inline void AppendFixed64Field(std::string* out, uint32_t field, uint64_t v) {
  AppendTag(out, field, kFixed64);
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(bytes, 8);
}

inline void AppendDoubleField(std::string* out, uint32_t field, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  AppendFixed64Field(out, field, bits);
}

// bytes, string, or an embedded message already encoded: key, length, bytes.
inline void AppendBytesField(std::string* out, uint32_t field, std::string_view bytes) {
  AppendTag(out, field, kLengthDelimited);
  AppendVarint(out, bytes.size());
  out->append(bytes.data(), bytes.size());
}

}  // namespace ticktrace::otlp::wire

#endif  // TICKTRACE_COMMON_OTLP_PROTO_WIRE_H_
