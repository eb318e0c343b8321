// Small string helpers for libtrace's cold paths, on the standard library
// alone (what a traced program links must not need Abseil; see
// ticktrace/status.h). They keep the output of the Abseil calls they replace:
// Cat formats as absl::StrCat (integers in decimal, doubles as %g with six
// significant digits), ParseDouble accepts what absl::SimpleAtod does.
// Any thread may call these.

#ifndef TICKTRACE_SRC_TEXT_H_
#define TICKTRACE_SRC_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ticktrace::internal {

void AppendDouble(std::string* out, double value);

inline void AppendPiece(std::string* out, std::string_view piece) { out->append(piece); }

template <typename T>
requires std::is_arithmetic_v<T> &&
    (!std::is_same_v<T, bool>)&&(!std::is_same_v<T, char>)void AppendPiece(std::string* out,
                                                                           T value) {
  if constexpr (std::is_floating_point_v<T>) {
    AppendDouble(out, static_cast<double>(value));
  } else if constexpr (std::is_signed_v<T>) {
    out->append(std::to_string(static_cast<long long>(value)));
  } else {
    out->append(std::to_string(static_cast<unsigned long long>(value)));
  }
}

// The pieces concatenated: strings as they are, numbers as absl::StrCat does.
template <typename... Pieces>
std::string Cat(const Pieces&... pieces) {
  std::string out;
  (AppendPiece(&out, pieces), ...);
  return out;
}

// printf into a std::string.
std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));

// `text` without leading and trailing ASCII whitespace.
std::string_view StripWhitespace(std::string_view text);

// `text` split at every `separator`; with skip_empty, empty pieces are left out.
std::vector<std::string> Split(std::string_view text, char separator, bool skip_empty = false);

// The parts with `separator` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view separator);

// A finite or infinite decimal double, surrounding whitespace allowed; false
// (and *out untouched) for anything else.
bool ParseDouble(std::string_view text, double* out);

// A decimal unsigned 64-bit integer, nothing else around it.
bool ParseUnsigned(std::string_view text, uint64_t* out);

}  // namespace ticktrace::internal

#endif  // TICKTRACE_SRC_TEXT_H_
