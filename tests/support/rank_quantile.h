// Test helper: the exact quantile a test expects the store's histogram to
// approximate, by the same rank rule (store/common/histogram.cc).

#ifndef TICKTRACE_TESTS_SUPPORT_RANK_QUANTILE_H_
#define TICKTRACE_TESTS_SUPPORT_RANK_QUANTILE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace ticktrace::testing {

// The q-quantile of `v` by the histogram's rank rule: the ceil(q n)-th value.
// REQUIRES: `v` is not empty.
inline double RankQuantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * v.size())));
  return v[rank - 1];
}

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_SUPPORT_RANK_QUANTILE_H_
