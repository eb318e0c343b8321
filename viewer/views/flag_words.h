// One meaning of "flagged" in every view (summary, intervals, the report): a
// sample is *flagged* when it carries a flag that keeps it out of the
// percentiles (store::kFlagsExcludedByDefault: migrated, negative,
// saturated, out_of_order); the other flags (cross_core, skew, late,
// cross_host) only *mark* a sample, which stays in. --include-flagged puts
// flagged samples into the percentiles too; they are still called flagged.
#ifndef TICKTRACE_VIEW_FLAG_WORDS_H_
#define TICKTRACE_VIEW_FLAG_WORDS_H_

#include <cstdint>
#include <string>

#include "ticktrace/store/reader.h"
#include "viewer/views/summary.h"

namespace ticktrace::view {

// "flagged (migrated, negative, saturated, out_of_order): kept out of the
// percentiles; marked only (cross_core, skew, late, cross_host): kept in",
// or "...: included in the percentiles (--include-flagged); ..." .
std::string FlagRuleWords(bool include_flagged);

// The flags' names, comma-separated: those that flag a sample, and those
// that only mark it.
std::string FlaggingNames();
std::string MarkingNames();

// The flagged samples of an interval row: those kept out of its
// percentiles, or, when the run included them, the most that one flag
// counts (a sample may carry two of them).
int64_t FlaggedSamples(const store::IntervalRow& row);
// Likewise for a stage of the summary.
int64_t FlaggedSamples(const SummaryStage& stage);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_FLAG_WORDS_H_
