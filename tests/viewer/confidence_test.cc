// The per-stage confidence verdict (docs/viewer.md, `stages[].confidence`): each reason fires at its
// documented threshold, in a fixed order; none: ok. Values by hand.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "viewer/views/stats.h"

namespace ticktrace::view {
namespace {

ConfidenceInputs Healthy() {
  ConfidenceInputs in;
  in.count = 1000;
  in.samples_all = 1000;
  in.p50_ns = 5000;        // 5 us
  in.tsc_step_ns = 0.5;    // 20 steps = 10 ns
  return in;
}

TEST(Confidence, OkWhenNothingApplies) { EXPECT_TRUE(ConfidenceReasons(Healthy()).empty()); }

TEST(Confidence, QuantisedBelowTwentySteps) {
  ConfidenceInputs in = Healthy();
  in.tsc_step_ns = 10;  // 20 steps = 200 ns
  in.p50_ns = 199;
  EXPECT_EQ(ConfidenceReasons(in), std::vector<std::string>{"quantised"});
  in.p50_ns = 200;
  EXPECT_TRUE(ConfidenceReasons(in).empty());
}

TEST(Confidence, CrossCoreUncertaintyOverTenPercentOfP50) {
  ConfidenceInputs in = Healthy();
  in.cross_core = 10;
  in.uncertainty_ns = 500;  // exactly 10%: ok
  EXPECT_TRUE(ConfidenceReasons(in).empty());
  in.uncertainty_ns = 501;
  EXPECT_EQ(ConfidenceReasons(in), std::vector<std::string>{"cross-core \u00b1501 ns"});
}

TEST(Confidence, FlaggedFromOnePercent) {
  ConfidenceInputs in = Healthy();
  in.flagged = 9;  // 0.9%
  EXPECT_TRUE(ConfidenceReasons(in).empty());
  in.flagged = 32;  // 3.2%
  EXPECT_EQ(ConfidenceReasons(in), std::vector<std::string>{"flagged 3.2%"});
  in.flagged = 250;  // 25%
  EXPECT_EQ(ConfidenceReasons(in), std::vector<std::string>{"flagged 25%"});
}

// A few per mille of samples with no known core is noise (a thread that
// moved during a read); 5 per mille is named, before "flagged".
TEST(Confidence, CoreUnknownFromFivePerMille) {
  ConfidenceInputs in = Healthy();
  in.core_unknown = 4;  // 0.4%
  EXPECT_TRUE(ConfidenceReasons(in).empty());
  in.core_unknown = 5;  // 0.5%
  EXPECT_EQ(ConfidenceReasons(in), std::vector<std::string>{"core unknown 0.5%"});
  in.core_unknown = 1000;  // every sample
  in.flagged = 20;         // 2%
  EXPECT_EQ(ConfidenceReasons(in), (std::vector<std::string>{"core unknown 100%", "flagged 2.0%"}));
}

// Records lost from 1 per mille of those written (the share a p99.9 is read
// from), named first: they are missing from every stage.
TEST(Confidence, RecordsLostFromOnePerMilleFirst) {
  ConfidenceInputs in = Healthy();
  in.records_lost_share = 0.0009;
  EXPECT_TRUE(ConfidenceReasons(in).empty());
  in.records_lost_share = 0.001;
  EXPECT_EQ(ConfidenceReasons(in), std::vector<std::string>{"records lost 0.1%"});
  in.records_lost_share = 741942.0 / 1541942.0;  // 48.1%
  in.count = 99;
  in.samples_all = 99;
  EXPECT_EQ(ConfidenceReasons(in), (std::vector<std::string>{"records lost 48%", "few samples"}));
}

TEST(Confidence, FewSamplesAndDetailSampledInOrder) {
  ConfidenceInputs in = Healthy();
  in.count = 99;
  in.samples_all = 99;
  in.detail_sampled = true;
  in.tsc_step_ns = 1000;
  EXPECT_EQ(ConfidenceReasons(in),
            (std::vector<std::string>{"quantised", "few samples", "detail sampled"}));
}

}  // namespace
}  // namespace ticktrace::view
