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

TEST(TagsTest, NamesReachTheSegmentAndAFullTableIsCounted) {
  ::testing::AddGlobalTestEnvironment(new testing::RemoveSegmentAtExit);
  Options options;
  options.session = testing::UniqueSession("tags");
  options.ring_records = 64;
  options.rings = 2;
  ASSERT_TRUE(Init(options).ok());
  EXPECT_FALSE(Init(options).ok()) << "a second Init must be refused";

  const Tag again("registered_before_the_segment");
  EXPECT_EQ(again.id(), kBeforeInit.id());
  const Tag long_name(std::string(100, 'x'));
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(CurrentSegmentName());
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<std::vector<std::string>> names = (*reader)->Tags();
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ((*names)[kBeforeInit.id()], "registered_before_the_segment");
  EXPECT_EQ((*names)[long_name.id()], std::string(abi::kTagNameMax, 'x'));

  // Fill the table: the process registers up to 1024 names.
  std::vector<Tag> tags;
  for (int i = 0; tags.size() + 2 < 1024; ++i) tags.emplace_back("tag_" + std::to_string(i));
  for (const Tag& t : tags) EXPECT_NE(t.id(), abi::kTagInvalid);
  const Tag overflow1("one_too_many");
  const Tag overflow2("two_too_many");
  EXPECT_EQ(overflow1.id(), abi::kTagInvalid);
  EXPECT_EQ(overflow2.id(), abi::kTagInvalid);
  EXPECT_EQ((*reader)->counters().tags_rejected, 2u);
  names = (*reader)->Tags();
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->size(), 1024u);
  // Stamping with a rejected tag is harmless: the record carries kTagInvalid.
  stamp(overflow1, 1);
}

}  // namespace
}  // namespace ticktrace
