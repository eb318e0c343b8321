// libtrace's own error types (ticktrace/status.h) and its std-only string
// helpers (libtrace/src/text.h) against the Abseil calls they replace: a
// traced program must not need Abseil, but the collector's messages, codes
// and parsing must read exactly as before.
#include "ticktrace/status.h"

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "src/text.h"
#include "ticktrace/absl_status.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

constexpr ErrorCode kEveryCode[] = {ErrorCode::kOk,
                                    ErrorCode::kInvalidArgument,
                                    ErrorCode::kNotFound,
                                    ErrorCode::kPermissionDenied,
                                    ErrorCode::kResourceExhausted,
                                    ErrorCode::kFailedPrecondition,
                                    ErrorCode::kOutOfRange,
                                    ErrorCode::kInternal,
                                    ErrorCode::kUnavailable,
                                    ErrorCode::kDataLoss};

TEST(StatusTest, CodesAndTextMatchAbseils) {
  for (const ErrorCode code : kEveryCode) {
    const Status ours(code, "segment x: why");
    const absl::Status theirs(static_cast<absl::StatusCode>(code), "segment x: why");
    EXPECT_EQ(ours.ToString(), theirs.ToString());
    EXPECT_EQ(ours.ok(), theirs.ok());
    EXPECT_EQ(ErrorCodeName(code), absl::StatusCodeToString(theirs.code()));
    EXPECT_EQ(ToAbslStatus(ours), theirs);
  }
  std::ostringstream out;
  out << Status(ErrorCode::kNotFound, "gone");
  EXPECT_EQ(out.str(), "NOT_FOUND: gone");
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().ToString(), "OK");
}

TEST(StatusTest, ResultHoldsAValueOrAnError) {
  Result<std::string> value = std::string("seg");
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(value.status().ok());
  EXPECT_EQ(*value, "seg");
  EXPECT_EQ(value->size(), 3u);

  Result<std::string> error = Status(ErrorCode::kUnavailable, "no /dev/shm");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(error.value_or("fallback"), "fallback");
  const absl::StatusOr<std::string> converted = ToAbslStatusOr(error);
  EXPECT_EQ(converted.status().code(), absl::StatusCode::kUnavailable);

  // An ok Status is no error: a Result made from one says so.
  Result<int> misuse = Status();
  EXPECT_FALSE(misuse.ok());
  EXPECT_EQ(misuse.status().code(), ErrorCode::kInternal);
}

TEST(StatusTest, OptionsErrorsComeBackAsStatus) {
  Options o;
  EXPECT_TRUE(o.Validate().ok());
  o.rings = 0;
  const Status st = o.Validate();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(), absl::StrCat("rings 0: must be in [1, ", abi::kMaxSlots, "]"));
  o.rings = 1;
  o.segment_mode = 0400;
  EXPECT_EQ(o.Validate().message(),
            "segment_mode 0400: must be within 0777 and give the owner read and write");
}

TEST(TextTest, CatFormatsAsStrCat) {
  const uint8_t small = 7;
  const int64_t negative = -42;
  const uint64_t big = std::numeric_limits<uint64_t>::max();
  for (const double d : {0.0, 1.0, -2.5, 1e6, 123456789.0, 1.0 / 3, 2.6e9, 1e-7}) {
    EXPECT_EQ(internal::Cat(d), absl::StrCat(d)) << d;
  }
  EXPECT_EQ(internal::Cat("a", small, "b", negative, "c", big, std::string("d")),
            absl::StrCat("a", small, "b", negative, "c", big, std::string("d")));
  EXPECT_EQ(internal::Format("0%o %.2f %s", 0640u, 1.005, "x"),
            absl::StrFormat("0%o %.2f %s", 0640u, 1.005, "x"));
}

TEST(TextTest, SplitStripAndJoinAsAbseil) {
  for (const std::string text : {"", "a", " a  b ", "a b", "  ", "x\ny\n"}) {
    const std::vector<std::string> all = absl::StrSplit(text, ' ');
    const std::vector<std::string> some = absl::StrSplit(text, ' ', absl::SkipEmpty());
    EXPECT_EQ(internal::Split(text, ' '), all) << "'" << text << "'";
    EXPECT_EQ(internal::Split(text, ' ', /*skip_empty=*/true), some) << "'" << text << "'";
    EXPECT_EQ(std::string(internal::StripWhitespace(text)),
              std::string(absl::StripAsciiWhitespace(text)));
    EXPECT_EQ(internal::Join(all, "; "), absl::StrJoin(all, "; "));
  }
}

TEST(TextTest, ParseDoubleAcceptsWhatSimpleAtodDoes) {
  for (const std::string text :
       {"2000.000", " 2095.999\n", "1e3", "-1", "", "abc", "12x", "1 2", " ", "2400000"}) {
    double ours = -7, theirs = -7;
    const bool ok = absl::SimpleAtod(text, &theirs);
    EXPECT_EQ(internal::ParseDouble(text, &ours), ok) << "'" << text << "'";
    if (ok) {
      EXPECT_EQ(ours, theirs) << "'" << text << "'";
    }
  }
  uint64_t v = 0;
  EXPECT_TRUE(internal::ParseUnsigned("18446744073709551615", &v));
  EXPECT_EQ(v, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(internal::ParseUnsigned("18446744073709551616", &v));
  EXPECT_FALSE(internal::ParseUnsigned("", &v));
  EXPECT_FALSE(internal::ParseUnsigned("-1", &v));
  EXPECT_FALSE(internal::ParseUnsigned("12 ", &v));
}

}  // namespace
}  // namespace ticktrace
