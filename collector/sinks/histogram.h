// The histogram lives with the store's schema (store/include/ticktrace/store/histogram.h),
// which the viewer shares; the collector's code names it from here.

#ifndef TICKTRACE_COLLECTOR_HISTOGRAM_H_
#define TICKTRACE_COLLECTOR_HISTOGRAM_H_

#include "ticktrace/store/histogram.h"

namespace ticktrace::collect {
using Histogram = store::Histogram;
}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_HISTOGRAM_H_
