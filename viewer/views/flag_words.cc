#include "viewer/views/flag_words.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ticktrace/store/flags.h"

namespace ticktrace::view {
namespace {

std::string NamesWhere(bool excluding) {
  std::vector<std::string> names;
  for (const store::FlagName& f : store::kFlagNames) {
    if (((f.bit & store::kFlagsExcludedByDefault) != 0) == excluding) {
      names.emplace_back(f.name);
    }
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

std::string FlaggingNames() { return NamesWhere(true); }
std::string MarkingNames() { return NamesWhere(false); }

std::string FlagRuleWords(bool include_flagged) {
  return absl::StrCat("flagged (", FlaggingNames(), "): ",
                      include_flagged ? "included in the percentiles (--include-flagged)"
                                      : "kept out of the percentiles",
                      "; marked only (", MarkingNames(), "): kept in");
}

int64_t FlaggedSamples(const store::IntervalRow& row) {
  if (row.count < row.samples_all) return row.samples_all - row.count;
  int64_t most = 0;
  for (size_t f = 0; f < store::kFlagNames.size(); ++f) {
    if (store::kFlagNames[f].bit & store::kFlagsExcludedByDefault) {
      most = std::max(most, row.flag_counts[f]);
    }
  }
  return most;
}

int64_t FlaggedSamples(const SummaryStage& stage) {
  if (stage.stats.count < stage.samples_all) return stage.samples_all - stage.stats.count;
  return std::max({stage.migrated, stage.negative, stage.out_of_order});
}

}  // namespace ticktrace::view
