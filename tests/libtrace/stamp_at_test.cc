// stamp_at: a stamp whose time another clock read. It writes exactly one
// kExternal record carrying that time and its clock; a reader of ABI version 2
// (the version before kExternal) refuses the segment in one line, so no such
// record is ever handed to code that would misread it.

#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

class StampAtTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(
        testing::InitOnce(testing::SegmentOptions(testing::UniqueSession("stamp_at"), 64, 2)).ok());
  }
};

TEST_F(StampAtTest, WritesOneExternalRecordWithTheTimeAndTheClock) {
  static const Tag wire("wire_rx");
  AttachThisThread();
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader =
      SegmentReader::Open(CurrentSegmentName());
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(abi::kAbiVersion, 3u);
  const int slot = testing::FindSlotByTid(**reader, static_cast<uint32_t>(gettid()));
  ASSERT_GE(slot, 0);
  std::vector<abi::Record> before;
  testing::DrainSlot(**reader, static_cast<uint32_t>(slot), &before);

  // Times chosen by hand: one before 1970 (negative), one in 2026, the largest.
  const int64_t kTimes[] = {-5, 1'780'000'000'123'456'789, INT64_MAX};
  const Clock kClocks[] = {Clock::kRealtime, Clock::kPhc, Clock::kExchange};
  for (int i = 0; i < 3; ++i) stamp_at(wire, 40 + i, kTimes[i], kClocks[i]);

  std::vector<abi::Record> out;
  testing::DrainSlot(**reader, static_cast<uint32_t>(slot), &out);
  ASSERT_EQ(out.size(), 3u) << "one record per call";
  for (int i = 0; i < 3; ++i) {
    const abi::Record& r = out[i];
    EXPECT_EQ(r.kind, abi::kExternal);
    EXPECT_EQ(r.order_id, 40u + i);
    EXPECT_EQ(r.payload.external_ns, kTimes[i]);
    EXPECT_EQ(r.aux, static_cast<uint32_t>(i + 1)) << "realtime 1, phc 2, exchange 3";
    EXPECT_EQ(r.tag_id, wire.id());
    EXPECT_EQ(r.flags, 0);
    EXPECT_NE(r.tsc, 0u) << "when the call was made";
    EXPECT_TRUE(ValidateRecord(r, wire.id() + 1u).ok());
  }
}

TEST(StampAtValidate, AnUnknownClockIsRefused) {
  abi::Record r{};
  r.kind = abi::kExternal;
  r.tag_id = 0;
  r.aux = 0;
  EXPECT_EQ(ValidateRecord(r, 1).code(), absl::StatusCode::kDataLoss);
  r.aux = 4;
  EXPECT_EQ(ValidateRecord(r, 1).code(), absl::StatusCode::kDataLoss);
  r.aux = abi::kClockExchange;
  EXPECT_TRUE(ValidateRecord(r, 1).ok());
  r.tag_id = 1;  // not in a table of one tag
  EXPECT_EQ(ValidateRecord(r, 1).code(), absl::StatusCode::kDataLoss);
}

TEST_F(StampAtTest, AReaderOfVersionTwoRefusesTheSegmentInOneLine) {
  SegmentOpenLimits as_version_2;
  as_version_2.newest_abi_version = 2;
  SegmentOpenError why;
  absl::StatusOr<std::unique_ptr<SegmentReader>> old =
      SegmentReader::Open(CurrentSegmentName(), as_version_2, &why);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(why.refusal, SegmentRefusal::kCorrupt);
  const std::string message(old.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("ABI version 3, this reader knows 2"), std::string::npos)
      << message;
  // The reader of this tree reads it.
  EXPECT_TRUE(SegmentReader::Open(CurrentSegmentName()).ok());
}

}  // namespace
}  // namespace ticktrace
