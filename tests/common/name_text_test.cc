// EscapeName (common/name_text.h): each rule on a hand-made case, the cases
// RFC 3629 calls invalid, and idempotence. Expected strings by hand: \xHH,
// lowercase, per byte escaped.

#include "common/name_text.h"

#include <string>

#include "gtest/gtest.h"

namespace ticktrace {
namespace {

TEST(EscapeName, PrintableAsciiAndValidUtf8AreKept) {
  EXPECT_EQ(EscapeName("md_rx->order_sent"), "md_rx->order_sent");
  EXPECT_EQ(EscapeName("a\\b"), "a\\b");  // a backslash stays as it is
  EXPECT_EQ(EscapeName("d\xc3\xa9" "cide"), "d\xc3\xa9" "cide");          // U+00E9
  EXPECT_EQ(EscapeName("\xe2\x82\xac"), "\xe2\x82\xac");                   // U+20AC
  EXPECT_EQ(EscapeName("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");           // U+1F600
  EXPECT_EQ(EscapeName("\xc2\xa0"), "\xc2\xa0");                           // U+00A0, not C1
  EXPECT_EQ(EscapeName(""), "");
}

TEST(EscapeName, ControlCharactersAreEscaped) {
  EXPECT_EQ(EscapeName("a\x1b[31mb"), "a\\x1b[31mb");  // ESC
  EXPECT_EQ(EscapeName(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeName("\t\n\r\x7f"), "\\x09\\x0a\\x0d\\x7f");
  EXPECT_EQ(EscapeName("\xc2\x9b" "2J"), "\\xc2\\x9b2J");  // U+009B CSI, a C1 control
  EXPECT_EQ(EscapeName("\xc2\x80\xc2\x9f"), "\\xc2\\x80\\xc2\\x9f");  // both ends of C1
}

TEST(EscapeName, BytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(EscapeName("\xff\xfe"), "\\xff\\xfe");            // never in UTF-8
  EXPECT_EQ(EscapeName("\x80"), "\\x80");                     // a lone continuation
  EXPECT_EQ(EscapeName("\xc3("), "\\xc3(");                   // a lead without its tail
  EXPECT_EQ(EscapeName("\xc3"), "\\xc3");                     // cut at the end
  EXPECT_EQ(EscapeName("\xe2\x82"), "\\xe2\\x82");            // cut 3-byte form
  EXPECT_EQ(EscapeName("\xc0\xaf"), "\\xc0\\xaf");            // overlong '/'
  EXPECT_EQ(EscapeName("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");   // overlong, 3 bytes
  EXPECT_EQ(EscapeName("\xed\xa0\x80"), "\\xed\\xa0\\x80");   // surrogate U+D800
  EXPECT_EQ(EscapeName("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(EscapeName("\xf5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");
}

TEST(EscapeName, IsIdempotentAndItsOutputIsEscaped) {
  for (const std::string& raw :
       {std::string("a\x1b[0m\xff"), std::string("\xc2\x9b\xed\xa0\x80"), std::string("plain")}) {
    const std::string once = EscapeName(raw);
    EXPECT_TRUE(IsEscapedName(once)) << once;
    EXPECT_EQ(EscapeName(once), once);
  }
  EXPECT_FALSE(IsEscapedName("a\x1b"));
  EXPECT_TRUE(IsEscapedName("a\\x1b"));
}

}  // namespace
}  // namespace ticktrace
