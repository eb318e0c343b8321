// The collector's settings, and validation of what users type.

#ifndef TICKTRACE_COLLECTOR_OPTIONS_H_
#define TICKTRACE_COLLECTOR_OPTIONS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/sinks/otlp_sink.h"
#include "collector/app/detail_limit.h"
#include "collector/sinks/store_sink.h"
#include "ticktrace/segment_reader.h"  // kDefaultMaxSegmentBytes
#include "ticktrace/store/uri.h"

namespace ticktrace::metrics {
class MetricsServer;  // collector/metrics/metrics_server.h
}  // namespace ticktrace::metrics

namespace ticktrace::collect {

struct CollectorOptions {
  // --- from flags ---
  std::string session = "default";
  // The store (--store URI, or --db PATH for a SQLite file), parsed once by
  // main(); unset: no store (and no journal). Detail policy, interval and
  // retention: `store` below.
  std::optional<store::StoreUri> store_uri = store::StoreUri::LocalFile("ticktrace.db");
  std::vector<std::string> pipeline;     // empty: learn
  int64_t order_timeout_ms = 1000;
  double duration_s = 0;                 // 0: until SIGINT/SIGTERM (or *stop)
  std::string raw_path;                  // write a raw archive here
  std::string replay_path;               // run from this archive instead of shared memory
  double tsc_hz = 0;                     // 0: calibrate (live) / the archive's (replay)
  // Several hosts, one store (docs/clickhouse.md, "Several hosts"):
  std::string host_name;                 // --host-name; "": the hostname
  std::optional<double> clock_error_ns;  // --clock-error-ns: used without chrony/ptp4l
  // --exchange-clock-error-ns: the error of times stamp_at reads from messages
  // (Clock::kExchange); unset: unknown.
  std::optional<double> exchange_clock_error_ns;
  // --test-clock-offset-ns, FOR TESTS ONLY: added to every CLOCK_REALTIME
  // read of the TSC->UTC anchors, so this collector's UTC runs ahead by it
  // (the multi-host tests offset one host on purpose). Never in production.
  int64_t test_clock_offset_ns = 0;
  bool include_flagged = false;
  bool correct_skew = false;             // subtract the cores' measured offsets
  int64_t skew_interval_s = 600;         // re-measure the cores' offsets; 0: at start only
  std::string skew_cores = "allowed";    // measure the "allowed" cores or the "producers'"
  std::vector<uint32_t> allow_uids;      // also drain segments of these uids (besides our own)
  // --max-segment-bytes: a segment that reserved more (abi::ReservedBytes) is refused.
  uint64_t max_segment_bytes = kDefaultMaxSegmentBytes;
  bool group_readable = false;           // new store/journal/archive files 0640 instead of 0600
  bool group_writable_store = false;     // accept an existing store its group may write
  // --metrics-listen: main() starts the endpoint; the collector publishes to
  // it at every snapshot (about 1 s). Null: no endpoint. Must outlive the run.
  metrics::MetricsServer* metrics = nullptr;
  int cpu = -1;                          // --cpu: pin every collector thread to this core; -1: not
  // OpenTelemetry push (--otlp-endpoint, --otlp-slowest; collector/sinks/otlp_sink.h):
  // an empty endpoint pushes nothing. The run key, interval, settle time and
  // flag rule are filled in by the collector from the run.
  OtlpSinkOptions otlp;

  // --- for tests and the bench ---
  std::chrono::milliseconds anchor_interval{1000};  // a (TSC, UTC) anchor this often
  size_t learn_orders = 100;
  // Orders open at once (not emitted yet) at most; records of further new
  // orders are counted (records_over_open_limit), not kept. 0: no limit.
  uint64_t max_open_orders = 2'000'000;
  bool use_journal = true;                // live mode with a store: exactly-once journal
  StoreSinkOptions store;  // --detail, --interval-s, --retain-detail, --retain set these
  // --retain-detail as parsed; its size limit is resolved against the store's
  // filesystem when the store is opened (detail_limit.h) into
  // store.retain_detail_bytes.
  DetailLimitSpec detail_limit;
  std::chrono::microseconds min_pass_interval{200};  // busy: each ring polled at most this often
  std::chrono::microseconds max_idle_sleep{1000};    // idle back-off bound
  std::chrono::milliseconds snapshot_interval{1000};
  // Group commit: with a journal, busy drain passes (one fdatasync each) are
  // at least this far apart, so at most 1000/sync_window_ms syncs a second,
  // unless a ring is at least sync_sooner_fill full (docs/collector.md,
  // "Durability window").
  std::chrono::milliseconds sync_window{5};
  double sync_sooner_fill = 0.25;
  // A checkpoint of the analysis this often (--checkpoint-interval); the
  // journal before it is freed once it is written. 0: none (the journal
  // grows for the whole run). 2 s: at 1 M records/s (about 34 MB of journal
  // a second) the journal on disk spans a few seconds, under 128 MB, where
  // 5 s held 160 MB and more; docs/benchmarks-engine.md has the figures.
  std::chrono::milliseconds checkpoint_interval{2000};
  // Without a journal: drained passes not yet analysed, at most (the drain
  // waits beyond it). With a journal the journal is the buffer instead.
  size_t max_queued_pass_bytes = 16u << 20;
  // --journal-cap: the journal since the last freed checkpoint, at most. The
  // default is about a minute at 1 M records/s (32 bytes a record plus its
  // chunk framing: about 32 MB/s), time for the analysis or the store to
  // catch up after a stall before the rings fill; past it the drain stops
  // and the producers drop and count (docs/collector.md, "The journal as
  // the buffer").
  uint64_t journal_cap_bytes = uint64_t{2} << 30;
  // FOR TESTS ONLY (TICKTRACE_TEST_PAUSE_ANALYSIS_WHILE, read by
  // OptionsFromFlags): while this file exists the analysis thread reads
  // nothing from the journal, as a slow analysis would not. Empty: never.
  std::string test_pause_analysis_file;
  std::ostream* out = nullptr;            // reports; null: std::cout
  std::atomic<bool>* stop = nullptr;      // set to stop (besides signals)
  bool handle_signals = true;             // SIGINT/SIGTERM stop the run
  bool quiet = false;                     // no reports
};

// "a,b,c" -> {"a","b","c"}. InvalidArgument for an empty name, a name longer
// than a tag can be, or a repeated name.
absl::StatusOr<std::vector<std::string>> ParsePipeline(absl::string_view text);

// "1001,trader" -> the uids (numbers, or user names looked up in the
// password database); "" -> none. InvalidArgument for an unknown name or a
// malformed number.
absl::StatusOr<std::vector<uint32_t>> ParseUidList(absl::string_view text);

// InvalidArgument unless [A-Za-z0-9_-]{1,64}.
absl::Status ValidateSession(absl::string_view session);

// Checks values that do not need the file system (usage errors).
absl::Status ValidateOptions(const CollectorOptions& options);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_OPTIONS_H_
