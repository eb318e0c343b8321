// Names every part of ticktrace shares with the store: how stages are named,
// and the counters (docs/store.md, "Counters"). The only definition; the
// collector writes these names and the viewer reads them.

#ifndef TICKTRACE_STORE_NAMES_H_
#define TICKTRACE_STORE_NAMES_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ticktrace::store {

// The stage from an order's first stamp to its last.
inline constexpr std::string_view kTotalStage = "total";
// Between two consecutive pipeline stages: "a->b".
inline constexpr std::string_view kStageArrow = "->";
std::string TransitionStageName(std::string_view from_tag, std::string_view to_tag);
// The two tags of a transition stage "a->b" (TransitionStageName's
// inverse); nullopt for a span's or the total's name. Views into `stage`.
std::optional<std::pair<std::string_view, std::string_view>> TransitionTags(
    std::string_view stage);

// What a stage measures (stages.kind).
enum class StageKind : int { kTransition = 0, kSpan = 1, kTotal = 2 };
std::string_view StageKindName(StageKind kind);  // "transition", "span", "total"
// The kind a stage name says: "total", "a->b", else a span's tag.
StageKind StageKindOfName(std::string_view stage);

// The run's counters, one row each in `counters`.
enum class Counter : int {
  kDrained,
  kDropped,
  kMalformed,
  kMalformedChunks,
  kUnattributed,
  kDuplicatesSkipped,
  kIndexGaps,
  kProcessesSeen,
  kProcessesExited,
  kSegmentsRemoved,
  kSegmentsCorrupt,
  kSegmentsForeign,
  kSegmentsUnreadable,
  kSegmentsOversized,
  kSegmentsTruncated,
  kRecordsInRefusedSegments,
  kSlotsCorrupt,
  kTagsRejected,
  kThreadsWithoutSlot,
  kSlotlessDropped,
  kSamples,
  kSpansSaturated,
  kStandaloneSamples,
  kOrdersComplete,
  kOrdersIncomplete,
  kOrdersFannedOut,
  kOutsidePipeline,
  kRepeatedStages,
  kLinksRejected,
  kLateRecords,
  kOrdersLate,
  kRecordsOverOpenLimit,
  kReusedIds,
  kOrdersAlreadyStored,
  kOrdersNotStored,
  kSamplesNotStored,
  kStampsNotStored,
  kOrdersDetailSkipped,
  kJournalSyncs,
  kJournalChunksCorrupt,
  kJournalRecordsLost,
  kCollectorCpuMs,
  kRestarts,
  kStoreStatsThrough,
  kStoreDetailThrough,
  kAnchors,
  kCoreMeasurements,
  // The OpenTelemetry push (--otlp-endpoint).
  kOtlpSpansSent,
  kOtlpSpansDropped,
  kOtlpBatchesSent,
  kOtlpBatchesDropped,
  // The store's size (docs/operations.md#retention-and-disk): the orders whose
  // detail retention deleted, then figures as of the last snapshot (gauges,
  // CounterIsGauge).
  kOrdersRetired,
  kStoreBytes,
  kStoreGrowthBytesPerS,
  kStoreDetailLimitBytes,
  kStoreDetailWindowS,
  kCount_,  // not a counter
};

struct CounterInfo {
  Counter counter;
  std::string_view name;     // counters.name
  std::string_view meaning;  // one line for reports
};

// Every counter, in enum order.
extern const std::array<CounterInfo, static_cast<size_t>(Counter::kCount_)> kCounters;

std::string_view CounterName(Counter counter);
// The counter called `name`; nullopt for a name this version does not know
// (a newer collector's).
std::optional<Counter> CounterByName(std::string_view name);
// True for a figure that goes up and down (the store's size, its growth),
// stored beside the counters: /metrics gives it as a gauge.
bool CounterIsGauge(Counter counter);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_NAMES_H_
