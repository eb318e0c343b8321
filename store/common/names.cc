#include "ticktrace/store/names.h"

#include "absl/strings/str_cat.h"

namespace ticktrace::store {

std::string TransitionStageName(std::string_view from_tag, std::string_view to_tag) {
  return absl::StrCat(absl::string_view(from_tag.data(), from_tag.size()),
                      absl::string_view(kStageArrow.data(), kStageArrow.size()),
                      absl::string_view(to_tag.data(), to_tag.size()));
}

std::optional<std::pair<std::string_view, std::string_view>> TransitionTags(
    std::string_view stage) {
  const size_t arrow = stage.find(kStageArrow);
  if (arrow == std::string_view::npos) return std::nullopt;
  return std::pair{stage.substr(0, arrow), stage.substr(arrow + kStageArrow.size())};
}

std::string_view StageKindName(StageKind kind) {
  switch (kind) {
    case StageKind::kTransition:
      return "transition";
    case StageKind::kSpan:
      return "span";
    case StageKind::kTotal:
      return "total";
  }
  return "transition";
}

StageKind StageKindOfName(std::string_view stage) {
  if (stage == kTotalStage) return StageKind::kTotal;
  return stage.find(kStageArrow) != std::string_view::npos ? StageKind::kTransition
                                                           : StageKind::kSpan;
}

const std::array<CounterInfo, static_cast<size_t>(Counter::kCount_)> kCounters = {{
    {Counter::kDrained, "drained", "records copied out of the rings"},
    {Counter::kDropped, "dropped", "records the producers lost to full rings"},
    {Counter::kMalformed, "malformed",
     "records with an impossible kind, an unknown tag or an unknown process"},
    {Counter::kMalformedChunks, "malformed_chunks",
     "journal/archive chunks with impossible payloads, skipped"},
    {Counter::kUnattributed, "unattributed", "records of a tag that found the tag table full"},
    {Counter::kDuplicatesSkipped, "duplicates_skipped",
     "records seen again after a restart (counted once)"},
    {Counter::kIndexGaps, "index_gaps", "ring indices never seen (another consumer took them)"},
    {Counter::kProcessesSeen, "processes_seen", "traced processes found"},
    {Counter::kProcessesExited, "processes_exited", "traced processes that exited"},
    {Counter::kSegmentsRemoved, "segments_removed", "segments of exited processes removed"},
    {Counter::kSegmentsCorrupt, "segments_corrupt",
     "segments that could not be validated (skipped)"},
    {Counter::kSegmentsForeign, "segments_foreign",
     "segments owned by another user (not drained)"},
    {Counter::kSegmentsUnreadable, "segments_unreadable", "segments that could not be opened"},
    {Counter::kSegmentsOversized, "segments_oversized",
     "segments whose geometry overruns their file, or that reserved more than "
     "--max-segment-bytes (not drained; their records count in records_in_refused_segments)"},
    {Counter::kSegmentsTruncated, "segments_truncated",
     "segments shrunk under the collector (dropped from draining, never a crash)"},
    {Counter::kRecordsInRefusedSegments, "records_in_refused_segments",
     "records published in segments that were not drained (foreign, unreadable, oversized)"},
    {Counter::kSlotsCorrupt, "slots_corrupt", "rings with impossible indices (skipped)"},
    {Counter::kTagsRejected, "tags_rejected", "tags the producers could not register"},
    {Counter::kThreadsWithoutSlot, "threads_without_slot", "threads that found no free ring"},
    {Counter::kSlotlessDropped, "slotless_dropped", "records of threads without a ring"},
    {Counter::kSamples, "samples", "stage samples computed"},
    {Counter::kSpansSaturated, "spans_saturated", "spans of 2^32 ticks or more (lower bounds)"},
    {Counter::kStandaloneSamples, "standalone_samples", "spans and intervals without an order"},
    {Counter::kOrdersComplete, "orders_complete", "orders with every pipeline stage"},
    {Counter::kOrdersIncomplete, "orders_incomplete", "orders missing a stage at their timeout"},
    {Counter::kOrdersFannedOut, "orders_fanned_out", "parents whose chains continue in children"},
    {Counter::kOutsidePipeline, "outside_pipeline", "stamps whose tag is not a pipeline stage"},
    {Counter::kRepeatedStages, "repeated_stages", "a stage stamped again in one order"},
    {Counter::kLinksRejected, "links_rejected", "self links, second parents, cycles"},
    {Counter::kLateRecords, "late_records",
     "records that arrived after their order was emitted (kept as late instances)"},
    {Counter::kOrdersLate, "orders_late", "late partial instances (flag late)"},
    {Counter::kRecordsOverOpenLimit, "records_over_open_limit",
     "records of orders beyond --max-open-orders open at once (not kept: bounded memory)"},
    {Counter::kReusedIds, "reused_ids", "order ids seen again after their order was emitted"},
    {Counter::kOrdersAlreadyStored, "orders_already_stored",
     "orders found in the store after a restart (kept once)"},
    {Counter::kOrdersNotStored, "orders_not_stored",
     "orders whose detail the store writer could not keep up with"},
    {Counter::kSamplesNotStored, "samples_not_stored",
     "samples whose detail the store writer could not keep up with (in the statistics)"},
    {Counter::kStampsNotStored, "stamps_not_stored", "stamps the store writer could not keep up with"},
    {Counter::kOrdersDetailSkipped, "orders_detail_skipped",
     "orders whose detail the detail policy did not keep (in the statistics)"},
    {Counter::kJournalSyncs, "journal_syncs", "fdatasync calls on the journal"},
    {Counter::kJournalChunksCorrupt, "journal_chunks_corrupt",
     "journal chunks skipped as corrupt (their records lost)"},
    {Counter::kJournalRecordsLost, "journal_records_lost",
     "records lost in corrupt journal chunks, as later chunks' ring index gaps show (a lower "
     "bound)"},
    {Counter::kCollectorCpuMs, "collector_cpu_ms",
     "CPU time the collector process used, user + system (ms; a resumed run: since the resume)"},
    {Counter::kRestarts, "restarts", "times the collector resumed this run"},
    {Counter::kStoreStatsThrough, "store_stats_through",
     "emitted orders (by sequence number) whose statistics the store holds"},
    {Counter::kStoreDetailThrough, "store_detail_through",
     "emitted orders (by sequence number) whose detail the store holds or decided not to keep"},
    {Counter::kAnchors, "anchors", "(TSC, CLOCK_REALTIME) anchors taken"},
    {Counter::kCoreMeasurements, "core_measurements", "measurements of the cores' TSC offsets"},
    {Counter::kOtlpSpansSent, "otlp_spans_sent", "spans the OpenTelemetry receiver accepted"},
    {Counter::kOtlpSpansDropped, "otlp_spans_dropped",
     "spans not pushed: the receiver was down, slow or refused them"},
    {Counter::kOtlpBatchesSent, "otlp_batches_sent", "OTLP bodies the receiver accepted"},
    {Counter::kOtlpBatchesDropped, "otlp_batches_dropped",
     "OTLP requests (closed intervals) dropped in whole or part"},
    {Counter::kOrdersRetired, "orders_retired",
     "orders whose detail retention deleted (by age or size; their intervals stay)"},
    {Counter::kStoreBytes, "store_bytes",
     "bytes the store's files take on disk (SQLite: the database, -wal and -shm)"},
    {Counter::kStoreGrowthBytesPerS, "store_growth_bytes_per_s",
     "bytes a second the store grows by at the rate of the last minute, before retention"},
    {Counter::kStoreDetailLimitBytes, "store_detail_limit_bytes",
     "the size limit the detail is retired under (--retain-detail; 0: none)"},
    {Counter::kStoreDetailWindowS, "store_detail_window_s",
     "seconds of detail the limit holds at the rate of the last minute"},
}};

bool CounterIsGauge(Counter counter) {
  return counter == Counter::kStoreBytes || counter == Counter::kStoreGrowthBytesPerS ||
         counter == Counter::kStoreDetailLimitBytes || counter == Counter::kStoreDetailWindowS;
}

std::string_view CounterName(Counter counter) {
  return kCounters[static_cast<size_t>(counter)].name;
}

std::optional<Counter> CounterByName(std::string_view name) {
  for (const CounterInfo& c : kCounters) {
    if (c.name == name) return c.counter;
  }
  return std::nullopt;
}

}  // namespace ticktrace::store
