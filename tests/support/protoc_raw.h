// Protobuf bodies decoded by `protoc --decode_raw` (Debian's
// protobuf-compiler), a decoder ticktrace did not write: tests of the OTLP
// encoder read its output through this, never through our own code.
//
// decode_raw knows no schema: it prints a length-delimited field as a nested
// message (or group) when its bytes parse as one, else as a C-escaped
// string; varints in decimal, fixed64 as 0x + 16 hex digits, fixed32 as 0x +
// 8. Bytes that happen to parse (an id, a short string such as "34", which
// reads as an empty group) cannot be put back for sure, so bytes fields are
// compared as decode_raw prints them: Text() of the field received against
// RenderAll() of the expected bytes, both protoc's own rendering.

#ifndef TICKTRACE_TESTS_SUPPORT_PROTOC_RAW_H_
#define TICKTRACE_TESTS_SUPPORT_PROTOC_RAW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ticktrace::testing {

struct RawField {
  int number = 0;
  bool nested = false;
  std::string scalar;  // as printed (nested: empty)
  std::vector<RawField> children;

  // The fields numbered `n`, in order.
  std::vector<const RawField*> All(int n) const;
  // The one field numbered `n`; null when absent.
  const RawField* One(int n) const;
  // A length-delimited field's bytes, when decode_raw printed it as a string.
  std::string Bytes() const;
  // The field's value as decode_raw printed it (a nested one: its fields,
  // one line each, in braces).
  std::string Text() const;
  // A varint's value.
  uint64_t Varint() const;
  // A fixed64's value (0x...).
  uint64_t Fixed64() const;
};

// The path of protoc, or nullopt when it is not installed.
std::optional<std::string> ProtocPath();

// Runs protoc --decode_raw on `bytes` (in `dir`, for its temporary files);
// a root RawField holding the top-level fields, or nullopt (with a test
// failure) when protoc cannot parse them.
std::optional<RawField> DecodeRaw(const std::string& bytes, const std::string& dir);

// How decode_raw prints a length-delimited field holding each of `values`
// (RawField::Text()), from one protoc run over a message of them all.
std::map<std::string, std::string> RenderAll(const std::set<std::string>& values,
                                             const std::string& dir);

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_SUPPORT_PROTOC_RAW_H_
