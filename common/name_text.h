// Names are data: a tag, stage, process or thread name comes from a traced
// program, a raw archive or a store, and any of those may hold any bytes. The
// one rule that makes such a name safe to store, print on a terminal and put
// in JSON, applied the same way on every path (the collector's chunk decoder,
// used by the live drain, --replay and restarts; the viewer's store reader):
//
//   - a byte that is not part of valid UTF-8 (RFC 3629: no overlong forms, no
//     surrogates, nothing above U+10FFFF) becomes the four characters \xHH;
//   - a control character becomes \xHH per byte: C0 (0x00-0x1F), DEL (0x7F)
//     and C1 (U+0080-U+009F, bytes C2 80-C2 9F), so an escape sequence (ESC,
//     or the one-character CSI U+009B) never reaches a terminal;
//   - everything else, printable ASCII and valid non-control UTF-8, is kept.
//
// Hex digits are lowercase. A backslash is kept as it is, so the escaping is
// not reversible (the text "\x1b" and an ESC byte come out alike), but it is
// idempotent: an escaped name escapes to itself, which lets the collector and
// the viewer both apply it. docs/security.md lists what it defends against.
//
// Thread-safe (no state). Cheap for the common case: a name of printable
// ASCII is returned as it is after one pass.

#ifndef TICKTRACE_COMMON_NAME_TEXT_H_
#define TICKTRACE_COMMON_NAME_TEXT_H_

#include <string>
#include <string_view>

namespace ticktrace {

// `raw` with the bytes above escaped (valid UTF-8 without control characters).
std::string EscapeName(std::string_view raw);

// True when EscapeName(text) == text.
bool IsEscapedName(std::string_view text);

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_NAME_TEXT_H_
