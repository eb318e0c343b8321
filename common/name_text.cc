#include "common/name_text.h"

#include <cstddef>
#include <cstdint>

namespace ticktrace {
namespace {

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// The length of the valid, non-control UTF-8 character at text[i], or 0 when
// the byte there must be escaped.
size_t KeptLength(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const size_t left = text.size() - i;
  const uint8_t b0 = at(0);
  if (b0 < 0x80) return b0 >= 0x20 && b0 != 0x7F ? 1 : 0;
  // Second-byte ranges from RFC 3629's table: they exclude overlong forms,
  // surrogates (ED A0-BF) and code points above U+10FFFF (F4 90-BF).
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  size_t n = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;  // 80-C1 and F5-FF never start a character
  }
  if (left < n || at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (!IsContinuation(at(k))) return 0;
  }
  if (b0 == 0xC2 && at(1) <= 0x9F) return 0;  // C1 controls U+0080-U+009F
  return n;
}

}  // namespace

bool IsEscapedName(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = KeptLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string EscapeName(std::string_view raw) {
  if (IsEscapedName(raw)) return std::string(raw);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() + 16);
  for (size_t i = 0; i < raw.size();) {
    const size_t n = KeptLength(raw, i);
    if (n > 0) {
      out.append(raw.substr(i, n));
      i += n;
      continue;
    }
    const auto b = static_cast<uint8_t>(raw[i]);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
    ++i;
  }
  return out;
}

}  // namespace ticktrace
