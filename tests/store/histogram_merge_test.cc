// Histogram::MergeEncoded (the viewer's window statistics merge thousands of
// stored intervals with it) against Decode() + Merge(), which it replaces, on
// values chosen by hand, and its refusal of bytes that are not an encoding.

#include <string>

#include "ticktrace/store/histogram.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

TEST(HistogramMergeEncoded, EqualsDecodeThenMerge) {
  Histogram a, b, empty;
  for (double v : {100.0, 250.0, 250.0, 1e6, -40.0, 0.01}) a.Add(v);
  for (double v : {90.0, 3e9, 250.0}) b.Add(v);
  Histogram direct = a;
  ASSERT_TRUE(direct.MergeEncoded(b.Encode()).ok());
  ASSERT_TRUE(direct.MergeEncoded(empty.Encode()).ok());
  Histogram via = a;
  via.Merge(*Histogram::Decode(b.Encode()));
  EXPECT_EQ(direct.count(), 9u);
  EXPECT_EQ(direct.min(), -40.0);
  EXPECT_EQ(direct.max(), 3e9);
  EXPECT_EQ(direct.sum(), via.sum());
  EXPECT_EQ(direct.Encode(), via.Encode());
  for (double q : {0.0, 0.1, 0.5, 0.9, 1.0}) EXPECT_EQ(direct.Quantile(q), via.Quantile(q));
  // Into an empty histogram: min and max are the encoded ones.
  Histogram fresh;
  ASSERT_TRUE(fresh.MergeEncoded(b.Encode()).ok());
  EXPECT_EQ(fresh.min(), 90.0);
  EXPECT_EQ(fresh.max(), 3e9);
}

TEST(HistogramMergeEncoded, RefusesBadBytesAndAddsNothing) {
  Histogram b;
  for (double v : {90.0, 3e9, 250.0}) b.Add(v);
  const std::string good = b.Encode();
  Histogram h;
  h.Add(7);
  for (const std::string& bad :
       {std::string(), std::string("\x02", 1), good.substr(0, good.size() - 1), good + "x"}) {
    EXPECT_FALSE(h.MergeEncoded(bad).ok());
    EXPECT_EQ(h.count(), 1u);
    EXPECT_EQ(h.max(), 7.0);
  }
}

}  // namespace
}  // namespace ticktrace::store
