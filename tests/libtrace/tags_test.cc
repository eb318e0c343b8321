// The tag table: registration before and after the segment exists, the same
// name twice, long names, and a full table.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

const Tag kBeforeInit("registered_before_the_segment");

// The tag table belongs to the process and only grows, and --gtest_repeat
// runs this again in the same process: every expectation holds on a fresh
// table and on the one a previous run filled (ids are fixed by the order of
// first registration; the same name gives the same id; rejected names are
// rejected again and counted again).
TEST(TagsTest, NamesReachTheSegmentAndAFullTableIsCounted) {
  Options options = testing::SegmentOptions(testing::UniqueSession("tags"), 64, 2);
  ASSERT_TRUE(testing::InitOnce(options).ok());
  EXPECT_FALSE(Init(options).ok()) << "a second Init must be refused";
  EXPECT_EQ(kBeforeInit.id(), 0u) << "the first name registered, before the segment existed";

  const Tag again("registered_before_the_segment");
  EXPECT_EQ(again.id(), kBeforeInit.id());
  const Tag long_name(std::string(100, 'x'));
  EXPECT_EQ(long_name.id(), 1u);
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(CurrentSegmentName());
  ASSERT_TRUE(reader.ok()) << reader.status();
  const uint64_t rejected_before = (*reader)->counters().tags_rejected;
  absl::StatusOr<std::vector<std::string>> names = (*reader)->Tags();
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_GE(names->size(), 2u);
  EXPECT_EQ((*names)[kBeforeInit.id()], "registered_before_the_segment");
  EXPECT_EQ((*names)[long_name.id()], std::string(abi::kTagNameMax, 'x'));

  // Fill the table: the process registers up to 1024 names.
  std::vector<Tag> tags;
  for (int i = 0; tags.size() + 2 < 1024; ++i) tags.emplace_back("tag_" + std::to_string(i));
  for (size_t i = 0; i < tags.size(); ++i) EXPECT_EQ(tags[i].id(), i + 2);
  const Tag overflow1("one_too_many");
  const Tag overflow2("two_too_many");
  EXPECT_EQ(overflow1.id(), abi::kTagInvalid);
  EXPECT_EQ(overflow2.id(), abi::kTagInvalid);
  EXPECT_EQ((*reader)->counters().tags_rejected, rejected_before + 2);
  names = (*reader)->Tags();
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->size(), 1024u);
  EXPECT_EQ((*names)[1023], "tag_1021");
  // Stamping with a rejected tag is harmless: the record carries kTagInvalid.
  stamp(overflow1, 1);
}

}  // namespace
}  // namespace ticktrace
