#include "collector/app/collector.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "collector/analysis/analyzer.h"
#include "collector/analysis/run_diagnostics.h"
#include "collector/stream/archive.h"
#include "collector/stream/checkpoint.h"
#include "collector/time/clock_sync.h"
#include "collector/time/core_skew.h"
#include "collector/drain/drain_loop.h"
#include "collector/drain/drain_progress.h"
#include "collector/drain/seed_scan.h"
#include "collector/drain/drainer.h"
#include "collector/stream/journal.h"
#include "collector/metrics/collector_metrics.h"
#include "collector/drain/pass_queue.h"
#include "collector/stream/private_file.h"
#include "collector/stream/state_codec.h"
#include "collector/app/console_report.h"
#include "collector/app/run_info.h"
#include "collector/app/run_plan.h"
#include "collector/app/session_lock.h"
#include "collector/app/store_projection.h"
#include "ticktrace/store/open.h"
#include "collector/sinks/otlp_sink.h"
#include "collector/sinks/sink_fanout.h"
#include "collector/sinks/store_sink.h"
#include "collector/stream/stream.h"
#include "collector/time/external_clock.h"
#include "collector/time/time_base.h"
#include "ticktrace/absl_status.h"
#include "ticktrace/calibration.h"
#include "ticktrace/environment.h"
#include "ticktrace/tsc.h"

namespace ticktrace::collect {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_signal_stop{false};

// When RunCollector started: the wall time the CPU figures are measured against.
Clock::time_point g_collector_started = Clock::now();

// CPU this process used so far (user + system), in seconds.
double ProcessCpuSeconds(double* user_s = nullptr, double* sys_s = nullptr) {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const double user = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec / 1e6;
  const double sys = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec / 1e6;
  if (user_s != nullptr) *user_s = user;
  if (sys_s != nullptr) *sys_s = sys;
  return user + sys;
}

// "cpu: 1.23 s (user 1.00 s, system 0.23 s) in 60.0 s: 2.1% of one core" (the exit report).
std::string CpuUsedLine() {
  double user_s, sys_s;
  const double cpu_s = ProcessCpuSeconds(&user_s, &sys_s);
  const double wall_s = std::chrono::duration<double>(Clock::now() - g_collector_started).count();
  return absl::StrFormat("cpu: %.2f s (user %.2f s, system %.2f s) in %.1f s: %.1f%% of one core\n",
                         cpu_s, user_s, sys_s, wall_s, wall_s > 0 ? 100 * cpu_s / wall_s : 0.0);
}

extern "C" void OnStopSignal(int) { g_signal_stop.store(true, std::memory_order_relaxed); }

// Installs SIGINT/SIGTERM handlers for its lifetime.
class SignalScope {
 public:
  explicit SignalScope(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    g_signal_stop.store(false, std::memory_order_relaxed);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    if (!enabled_) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  bool enabled_;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

store::RunMeta ToRunMeta(const RunInfo& r, const StoreSinkOptions& sink) {
  store::RunMeta row;
  row.session = r.session;
  row.host = r.host;
  row.started_utc_ns = r.started_utc_ns;
  row.tsc_hz = r.tsc_hz;
  row.calibration_source = r.calibration_source;
  row.spread_ppm = r.spread_ppm;
  row.kernel_tsc_hz = r.kernel_tsc_hz;
  row.tsc_step_ns = r.tsc_step_ns;
  row.anchor_tsc = r.anchor_tsc;
  row.anchor_utc_ns = r.anchor_utc_ns;
  row.environment_json = r.EnvironmentJson();
  row.settings_json = r.SettingsJson();
  row.pipeline = absl::StrJoin(r.pipeline, ",");
  row.pipeline_learned = false;
  row.interval_ns = sink.interval_ns;
  row.detail = sink.detail;
  return row;
}

// The analyzer's rows as the store seam takes them.
store::StageStatsRow ToStageStatsRow(const StageSummary& m, bool include_flagged) {
  store::StageStatsRow r;
  r.stage = m.stage;
  r.position = m.position;
  r.count = static_cast<int64_t>(m.count);
  r.samples_all = static_cast<int64_t>(m.samples_all);
  r.include_flagged = include_flagged;
  if (m.count > 0) {
    r.min_ns = m.min_ns;
    r.max_ns = m.max_ns;
    r.mean_ns = m.mean_ns;
  }
  auto pct = [](double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  if (m.count > 0) {
    r.p50_ns = pct(m.p50_ns);
    r.p90_ns = pct(m.p90_ns);
    r.p99_ns = pct(m.p99_ns);
    r.p999_ns = pct(m.p999_ns);
  }
  // saturated and cross_host stay 0: the whole-run summary does not count them.
  for (const auto& [bit, count] : {std::pair{store::kFlagMigrated, m.migrated},
                                   {store::kFlagNegative, m.negative},
                                   {store::kFlagCrossCore, m.cross_core},
                                   {store::kFlagSkew, m.skew},
                                   {store::kFlagOutOfOrder, m.out_of_order},
                                   {store::kFlagLate, m.late}}) {
    r.flag_count(bit) = static_cast<int64_t>(count);
  }
  if (m.uncertainty_ns > 0) r.uncertainty_ns = m.uncertainty_ns;
  return r;
}

AnalyzerSettings ToAnalyzerSettings(const RunInfo& r, const TimeBase& tb) {
  AnalyzerSettings s;
  s.stitch.pipeline = r.pipeline;
  s.stitch.timeout_ticks = tb.MsToTicks(static_cast<double>(r.order_timeout_ms));
  s.stitch.learn_orders = std::max<uint64_t>(1, r.learn_orders);
  s.stitch.max_open_orders = r.max_open_orders;
  s.stitch.linger_ticks = tb.MsToTicks(static_cast<double>(r.linger_ms()));
  s.stitch.cores = r.cores;
  s.stitch.correct_skew = r.correct_skew;
  s.include_flagged = r.include_flagged;
  s.external_clocks = r.external_clocks;
  return s;
}

// Measures every allowed core's TSC offset against the first (ping-pong,
// collector/time/core_skew.h) into r->cores, and says what it found as one
// environment note per core. A failed measurement is a warning, not an error:
// the run goes on with cross-core samples of unknown uncertainty.
void MeasureCores(RunInfo* r) {
  const std::vector<int> cpus = CoresToMeasure(r->skew_cores, r->session);
  if (cpus.size() < 2) return;
  absl::StatusOr<std::vector<CoreSkew>> offsets = MeasureCoreSkew(cpus, r->tsc_hz, RealtimeNowNs());
  if (!offsets.ok()) {
    r->environment.push_back(EnvironmentNote{
        "core_skew", "not measured", std::string(offsets.status().message()), true});
    return;
  }
  for (const CoreSkew& c : *offsets) {
    r->cores.push_back(c);
    if (c.cpu == cpus.front()) continue;
    r->environment.push_back(EnvironmentNote{
        absl::StrCat("core ", c.cpu),
        absl::StrFormat("%+.1f ns +- %.1f ns against cpu %d", c.offset_ns, c.bound_ns,
                        cpus.front()),
        c.consistent ? "TSC offset measured by ping-pong: a difference between stamps on this "
                       "core and the reference is uncertain by this bound plus the other core's"
                     : "the ping-pong rounds disagree: this core's counter is not a constant "
                       "offset from the reference's; cross-core differences are not trustworthy",
        !c.consistent});
  }
}

// The analysis settings a live run and a replay both take from the flags.
void ApplySettings(const CollectorOptions& o, const char* mode, RunInfo* r) {
  r->pipeline = o.pipeline;
  r->order_timeout_ms = o.order_timeout_ms;
  r->include_flagged = o.include_flagged;
  r->learn_orders = o.learn_orders;
  r->max_open_orders = o.max_open_orders;
  r->mode = mode;
  r->correct_skew = o.correct_skew;
}

// Calibrates (or takes --tsc-hz) and probes the environment.
absl::StatusOr<RunInfo> LiveRunInfo(const CollectorOptions& o) {
  RunInfo r;
  r.session = o.session;
  r.host = o.host_name.empty() ? HostName() : o.host_name;
  r.started_utc_ns = RealtimeNowNs();
  ApplySettings(o, "live", &r);
  r.skew_interval_s = o.skew_interval_s;
  r.skew_cores = o.skew_cores;
  r.anchor_interval_ms = o.anchor_interval.count();
  Calibration cal;
  if (o.tsc_hz > 0) {
    cal = CalibrationFromHz(o.tsc_hz);
  } else {
    Result<Calibration> c = Calibrate();
    if (!c.ok()) {
      return absl::Status(ToAbslStatus(c.status()).code(),
                          absl::StrCat("calibration failed: ", c.status().message()));
    }
    cal = *c;
    if (cal.source == "cpuid-0x15") {
      // CPUID's crystal ratio is exact only if the platform told it the truth
      // (hypervisors and some boards do not): compare with a short measurement.
      CalibrationOptions check;
      check.allow_cpuid = false;
      check.rounds = 3;
      check.baseline_ms = 50;
      if (Result<Calibration> m = Calibrate(check); m.ok()) r.measured_tsc_hz = m->tsc_hz;
    }
  }
  r.tsc_hz = cal.tsc_hz;
  r.calibration_source = cal.source;
  if (cal.rounds_used > 0) r.spread_ppm = cal.spread_ppm;
  r.rounds_used = cal.rounds_used;
  r.rounds_discarded = cal.rounds_discarded;
  if (cal.kernel_tsc_hz > 0) {
    r.kernel_tsc_hz = cal.kernel_tsc_hz;
    r.kernel_source = cal.kernel_source;
  } else {
    std::string where;
    if (Result<double> k = ReadKernelTscHz(&where); k.ok() && *k > 0) {
      r.kernel_tsc_hz = *k;
      r.kernel_source = where;
    }
  }
  r.anchor_tsc = cal.anchor_tsc;
  r.anchor_utc_ns = cal.anchor_realtime_ns;
  if (r.anchor_tsc == 0) ReadTscRealtimeAnchor(&r.anchor_tsc, &r.anchor_utc_ns);
  r.anchor_utc_ns += o.test_clock_offset_ns;  // tests only (options.h)
  r.external_clocks = MeasureAnchorError(1e9 / r.tsc_hz);
  // A PHC's error: what ptp4l reports, or --clock-error-ns (chrony's figure
  // is the system clock's, not a PHC's).
  if (const ClockSync sync = ReadClockSync(o.clock_error_ns);
      sync.source == "ptp" || sync.source == "flag") {
    r.external_clocks.phc_error_ns = sync.error_ns;
  } else if (o.clock_error_ns.has_value()) {
    r.external_clocks.phc_error_ns = o.clock_error_ns;
  }
  r.external_clocks.exchange_error_ns = o.exchange_clock_error_ns;
  const uint64_t step_ticks = MeasureTscStepTicks();
  if (step_ticks > 0) r.tsc_step_ns = static_cast<double>(step_ticks) * 1e9 / r.tsc_hz;
  const TscEnvironment env = ProbeTscEnvironment();
  for (const EnvironmentFinding& f : env.findings) {
    r.environment.push_back(EnvironmentNote{f.name, f.value, f.meaning, f.is_warning});
  }
  MeasureCores(&r);
  return r;
}

// The parts of a run shared by live and replay mode.
class Session {
 public:
  Session(const CollectorOptions& o, std::ostream& out) : o_(o), out_(out) {}

  absl::Status OpenStore() {
    if (!o_.store_uri.has_value()) return absl::OkStatus();
    store::OpenWriterOptions options;
    options.group_readable = o_.group_readable;
    options.group_may_write = o_.group_writable_store;
    options.on_migration = [this](const std::string& line) { out_ << line << "\n" << std::flush; };
    absl::StatusOr<std::unique_ptr<store::Writer>> s = store::OpenWriter(*o_.store_uri, options);
    if (!s.ok()) return s.status();
    store_ = *std::move(s);
    return absl::OkStatus();
  }

  // Starts the analysis (and the store writer) for `info`; `run_id` 0 begins a new run.
  absl::Status Start(const RunInfo& info, int64_t run_id, bool block_when_full) {
    info_ = info;
    time_ = info.time_base();
    if (store_ != nullptr) {
      if (run_id == 0) {
        store::RunMeta meta = ToRunMeta(info, o_.store);
        // Multi-host (docs/clickhouse.md): the clock-sync bound of this host
        // (a replay knows only --clock-error-ns).
        const ClockSync sync =
            ReadClockSync(o_.clock_error_ns, /*ask_daemons=*/o_.replay_path.empty());
        meta.clock_error_ns = sync.error_ns;
        out_ << sync.detail << "\n";
        absl::StatusOr<int64_t> id = store_->BeginRun(meta);
        if (!id.ok()) return id.status();
        run_id = *id;
      }
      run_id_ = run_id;
      StoreSinkOptions wo = o_.store;
      wo.block_when_full = block_when_full;
      // The detail's size limit, resolved against the store's filesystem and
      // said at start (store_projection.h).
      absl::StatusOr<StoreProjection> projection =
          StartStoreProjection(o_.detail_limit, *store_, o_.replay_path.empty(), &wo);
      if (!projection.ok()) return projection.status();
      projection_.emplace(*std::move(projection));
      if (!o_.quiet) {
        const std::optional<store::StoreSize> size = store_->Size();
        const StoreProjection::Said said =
            projection_->AtStart(size ? size->disk_bytes : 0, FreeBytes(store_->LocalDirectory()));
        out_ << said.line << "\n" << std::flush;
        if (!said.warning.empty()) std::cerr << "ticktrace-collector: " << said.warning << "\n";
      }
      // The backend may want bigger transactions (ClickHouse: clickhouse_writer.h).
      wo.max_orders_per_transaction =
          std::max(wo.max_orders_per_transaction, store_->preferred_batch_orders());
      wo.include_flagged = info.include_flagged;
      // A tail interval settles once its orders cannot change any more.
      if (o_.use_journal && o_.checkpoint_interval.count() > 0 && o_.raw_path.empty() &&
          o_.replay_path.empty()) {
        wo.checkpoint_path = CheckpointPath(store::LocalStatePath(*o_.store_uri, o_.session));
        wo.group_readable = o_.group_readable;
      }
      wo.tail_settle_ns =
          (info.order_timeout_ms + info.linger_ms()) * 1'000'000 + 2 * wo.interval_ns;
      wo.say_budget = [](const std::string& line) {
        std::cerr << "ticktrace-collector: " << line << "\n" << std::flush;
      };
      writer_ = std::make_unique<StoreSink>(store_.get(), run_id_, wo);
      // Each batch carries the counters as of its statistics (store_sink.h).
      writer_->set_counter_source([this] {
        std::vector<std::pair<std::string, int64_t>> c;
        if (analyzer_ != nullptr) c = analyzer_->CounterValues();
        ApplyCounterFloor(&c);
        return c;
      });
      writer_->Start();
    }
    StitchedOrderSink* sink = writer_.get();
    if (!o_.otlp.endpoint.empty()) {  // --otlp-endpoint: a second sink beside the store's
      if (absl::Status s = StartOtlp(info); !s.ok()) return s;
      fanout_ = std::make_unique<SinkFanout>(writer_.get(), otlp_.get());
      sink = fanout_.get();
    }
    analyzer_ = std::make_unique<Analyzer>(ToAnalyzerSettings(info, time_), time_, sink);
    diagnostics_ = std::make_unique<RunDiagnostics>(info.session, info.pipeline, SessionsInShm);
    started_ = std::chrono::steady_clock::now();
    analyzer_->mutable_stitcher().on_learned = [this](const std::vector<std::string>& p,
                                                      size_t orders) {
      if (!o_.quiet) out_ << LearnedPipelineLine(p, orders) << std::flush;
      pipeline_dirty_ = true;
    };
    if (!o_.quiet) out_ << CalibrationReport(info) << std::flush;
    return absl::OkStatus();
  }

  // The OpenTelemetry push (collector/sinks/otlp_sink.h): its ids keyed on
  // the run as the store holds it, so that the viewer's export agrees.
  absl::Status StartOtlp(const RunInfo& info) {
    OtlpSinkOptions oo = o_.otlp;
    oo.run = otlp::RunKey{info.host, info.started_utc_ns, run_id_};
    oo.session = info.session;
    oo.interval_ns = o_.store.interval_ns;
    oo.settle_ns = (info.order_timeout_ms + info.linger_ms()) * 1'000'000 + oo.interval_ns;
    oo.excluded_flags = info.include_flagged ? 0 : store::kFlagsExcludedByDefault;
    otlp_ = std::make_unique<OtlpSink>(
        oo, [this](std::vector<store::ProcessRow>* p, std::vector<store::ThreadRow>* t) {
          *p = analyzer_->Processes();
          *t = analyzer_->Threads();
        });
    return otlp_->Start();
  }

  // The analysis thread, between batches and when idle: closes the
  // OpenTelemetry push's settled intervals.
  void TickOtlp() {
    if (otlp_ != nullptr) otlp_->Tick();
  }

  // Stops the OpenTelemetry push (its counters are final) and says what it sent.
  void StopOtlp() {
    if (otlp_ == nullptr) return;
    otlp_->Stop();
    const OtlpSinkCounters c = otlp_->counters();
    std::cerr << "ticktrace-collector: otlp " << o_.otlp.endpoint << ": " << c.spans_sent
              << " spans sent in " << c.batches_sent << " batches (" << c.retries
              << " retries), " << c.spans_dropped << " spans dropped in " << c.batches_dropped
              << " batches\n"
              << std::flush;
  }

  // The analysis thread, after every chunk before journal byte `offset`:
  // queues the analyzer's state as a checkpoint behind the orders it emitted
  // (collector/stream/checkpoint.h).
  void TakeCheckpoint(uint64_t offset) {
    if (writer_ == nullptr) return;
    StateWriter w;
    analyzer_->SaveState(w);
    Checkpoint c;
    c.run_id = run_id_;
    c.journal_offset = offset;
    c.emitted = analyzer_->stitcher().emitted();
    c.state = std::move(w.bytes());
    writer_->SubmitCheckpoint(std::move(c));
  }

  Analyzer& analyzer() { return *analyzer_; }
  StoreSink* writer() { return writer_.get(); }
  store::Writer* store() { return store_.get(); }
  int64_t run_id() const { return run_id_; }

  // `d`, `journal_syncs`: null when there is no drainer / journal.
  std::vector<std::pair<std::string, int64_t>> Counters(const DrainerCounters* d,
                                                        const uint64_t* journal_syncs) const {
    auto c = CountersOfThisAnalysis(d, journal_syncs);
    ApplyCounterFloor(&c);
    return c;
  }

  // After damage to the journal or checkpoint: no counter below what the
  // store already says (SetCounterFloor). Set before the analysis starts;
  // read only after.
  void ApplyCounterFloor(std::vector<std::pair<std::string, int64_t>>* c) const {
    if (counter_floor_.empty()) return;
    for (auto& [name, value] : *c) {
      auto floor = counter_floor_.find(name);
      if (floor != counter_floor_.end() && Floored(name)) value = std::max(value, floor->second);
    }
  }

  // A resume that lost part of the analysis (a damaged journal, a missing or
  // foreign checkpoint) cannot recount what the earlier collector stored:
  // the store's newest counters row bounds every counter from below, so that
  // no counter goes backwards across the restart. Each counter is then the
  // larger of the store's and this analysis's: a lower bound (what the lost
  // part held and the store had not counted yet is not in either), never a
  // double count (the part of the run both saw is not added twice).
  void SetCounterFloor(std::map<std::string, int64_t> floor) { counter_floor_ = std::move(floor); }

 private:
  // Gauges, and the CPU since this resume, go up and down: no floor.
  static bool Floored(const std::string& name) {
    const std::optional<store::Counter> known = store::CounterByName(name);
    return known.has_value() && !store::CounterIsGauge(*known) &&
           *known != store::Counter::kCollectorCpuMs && *known != store::Counter::kRestarts;
  }

  // The counters as this collector's analysis and drainer have them.
  std::vector<std::pair<std::string, int64_t>> CountersOfThisAnalysis(
      const DrainerCounters* d, const uint64_t* journal_syncs) const {
    auto c = analyzer_->CounterValues();
    auto v = [](uint64_t x) { return static_cast<int64_t>(x); };
    if (writer_ != nullptr) {
      const StoreSinkCounters w = writer_->counters();
      c.emplace_back("samples_not_stored", v(w.samples_not_stored));
      c.emplace_back("stamps_not_stored", v(w.stamps_not_stored));
      c.emplace_back("orders_not_stored", v(w.orders_not_stored));
      c.emplace_back("orders_already_stored", v(w.orders_already_stored));
      c.emplace_back(std::string(store::CounterName(store::Counter::kOrdersDetailSkipped)),
                     v(w.orders_detail_skipped));
    } else {
      c.emplace_back("samples_not_stored", 0);
    }
    // Without a drainer (a replay), the drainer's counters as the stream carried them.
    const DrainerCounters from_stream = DrainerCounters::FromNamed(analyzer_->stream_counters());
    c.emplace_back("segments_corrupt", v((d ? *d : from_stream).segments_corrupt));
    if (d == nullptr && !analyzer_->stream_counters().empty()) d = &from_stream;
    if (d != nullptr) {
      c.emplace_back("slots_corrupt", v(d->slots_corrupt));
      c.emplace_back("segments_removed", v(d->segments_removed));
      // Segments not drained, and why (docs/security.md).
      c.emplace_back("segments_foreign", v(d->segments_foreign));
      c.emplace_back("segments_unreadable", v(d->segments_unreadable));
      c.emplace_back("segments_oversized", v(d->segments_oversized));
      c.emplace_back("segments_truncated", v(d->segments_truncated));
      c.emplace_back("records_in_refused_segments", v(d->records_in_refused_segments));
    }
    if (journal_syncs != nullptr) c.emplace_back("journal_syncs", v(*journal_syncs));
    // Chunks skipped as corrupt by this run's journal recovery or replay (ArchiveReader).
    c.emplace_back(std::string(store::CounterName(store::Counter::kJournalChunksCorrupt)),
                   v(StreamCounter(store::Counter::kJournalChunksCorrupt)));
    c.emplace_back(std::string(store::CounterName(store::Counter::kJournalRecordsLost)),
                   v(StreamCounter(store::Counter::kJournalRecordsLost)));
    c.emplace_back("restarts", restarts_);
    if (otlp_ != nullptr) {  // --otlp-endpoint
      const OtlpSinkCounters oc = otlp_->counters();
      auto put = [&](store::Counter k, uint64_t x) {
        c.emplace_back(std::string(store::CounterName(k)), v(x));
      };
      put(store::Counter::kOtlpSpansSent, oc.spans_sent);
      put(store::Counter::kOtlpSpansDropped, oc.spans_dropped);
      put(store::Counter::kOtlpBatchesSent, oc.batches_sent);
      put(store::Counter::kOtlpBatchesDropped, oc.batches_dropped);
    }
    // This collector process's CPU so far (a resumed run: since the resume).
    c.emplace_back(std::string(store::CounterName(store::Counter::kCollectorCpuMs)),
                   static_cast<int64_t>(ProcessCpuSeconds() * 1e3));
    std::sort(c.begin(), c.end());
    return c;
  }

 public:
  // The run's diagnostics (run_diagnostics.h), about once a second and once
  // more, with all the evidence, at the end: each new one is one stderr line
  // and goes into the store with the next snapshot.
  void Diagnose(bool end_of_run) {
    const auto now = std::chrono::steady_clock::now();
    if (!end_of_run && now - last_diagnosis_ < std::chrono::seconds(1)) return;
    last_diagnosis_ = now;
    RunObservation seen;
    seen.elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - started_).count();
    seen.end_of_run = end_of_run;
    seen.live = o_.replay_path.empty();
    seen.processes_seen = analyzer_->Processes().size();
    seen.outside_pipeline = analyzer_->stitch_counters().outside_pipeline;
    if (!info_.pipeline.empty()) {
      for (store::TagRow& t : analyzer_->Tags()) seen.tags_seen.push_back(std::move(t.name));
      seen.stages = analyzer_->stats().Summaries();
    }
    for (const store::RunNote& n : diagnostics_->Check(seen)) {
      std::cerr << "ticktrace-collector: " << n.text << "\n" << std::flush;
    }
  }

  void Snapshot(const DrainerCounters* d, const uint64_t* j) {
    if (writer_ == nullptr) return;
    const TimeBase& tb = analyzer_->time_base();
    // Budgets judge an interval once the stream is far enough past it, also
    // when no order finishes (store_sink.h, set_analysed_until).
    writer_->set_analysed_until(tb.later_anchors.empty() ? tb.anchor_utc_ns
                                                         : tb.later_anchors.back().utc_ns);
    writer_->Submit();
    store::Snapshot s;
    s.processes = analyzer_->Processes();
    s.threads = analyzer_->Threads();
    s.tags = analyzer_->Tags();
    s.counters = Counters(d, j);
    for (const StageSummary& m : analyzer_->stats().Summaries()) {
      s.stages.push_back(ToStageStatsRow(m, info_.include_flagged));
      for (const bool at_end : {false, true}) {
        for (std::string_view clock : ExternalClockNames(m.external_clocks, at_end)) {
          s.stage_clocks.push_back(
              store::StageClockRow{m.stage, at_end ? "end" : "begin", std::string(clock)});
        }
      }
    }
    // Every core measurement (few: one per --skew-interval), and the latest
    // anchors (the store ignores those it has; a replaced snapshot loses
    // none unless the writer is kAnchorOverlap anchors behind).
    auto add_cores = [&s](const std::vector<CoreSkew>& cores) {
      for (const CoreSkew& c : cores) {
        s.cores.push_back(store::CoreRow{.cpu = c.cpu,
                                         .measured_utc_ns = c.measured_at_utc_ns,
                                         .offset_ns = c.offset_ns,
                                         .bound_ns = c.bound_ns,
                                         .consistent = c.consistent});
      }
    };
    add_cores(info_.cores);
    for (const RunInfoUpdate& u : analyzer_->core_measurements()) add_cores(u.cores);
    constexpr size_t kAnchorOverlap = 600;
    s.anchors.push_back(store::AnchorRow{tb.anchor_tsc, tb.anchor_utc_ns});
    const size_t n = tb.later_anchors.size();
    for (size_t i = n - std::min(n, kAnchorOverlap); i < n; ++i) {
      s.anchors.push_back(store::AnchorRow{tb.later_anchors[i].tsc, tb.later_anchors[i].utc_ns});
    }
    s.utc_drift_ppm = tb.DriftPpm();
    s.notes = diagnostics_->notes();
    const Stitcher& st = analyzer_->stitcher();
    if (pipeline_dirty_ && st.pipeline_known()) {
      s.pipeline = std::make_pair(absl::StrJoin(st.pipeline(), ","), st.pipeline_learned());
      pipeline_dirty_ = false;
    }
    if (projection_.has_value()) {  // the store's size and growth (store_projection.h)
      const StoreProjection::Said said =
          projection_->Observe(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count(),
                               writer_->counters(), FreeBytes(store_->LocalDirectory()),
                               &s.counters);
      if (!o_.quiet && !said.line.empty()) out_ << said.line << "\n" << std::flush;
      if (!said.warning.empty()) std::cerr << "ticktrace-collector: " << said.warning << "\n";
    }
    if (o_.metrics != nullptr) {  // --metrics-listen: the endpoint's copy (collector/metrics/)
      metrics::MetricsSnapshot m = metrics::MakeMetricsSnapshot(
          s, analyzer_->stats(), writer_->counters().orders_stored, tb, info_.session);
      m.budgets = metrics::BudgetMetricsOf(o_.store.budgets, writer_->budget_counts());
      o_.metrics->Publish(std::move(m));
    }
    writer_->SetSnapshot(std::move(s));
  }

  // Finishes the analysis, writes everything, ends the run.
  absl::Status Finish(const DrainerCounters* d, const uint64_t* j, RunSummary* summary) {
    analyzer_->Finish();
    StopOtlp();  // before the last snapshots: the store gets its final counters
    Diagnose(/*end_of_run=*/true);
    absl::Status status;
    if (writer_ != nullptr) {
      writer_->SettleAll();
      writer_->Flush();
      Snapshot(d, j);  // with the writer's final counters
      writer_->Flush();
      Snapshot(d, j);
      status = writer_->Stop();
      if (status.ok()) status = store_->EndRun(run_id_, RealtimeNowNs());
    }
    const auto counters = Counters(d, j);
    const auto stages = analyzer_->stats().Summaries();
    const Stitcher& st = analyzer_->stitcher();
    if (!o_.quiet) {
      out_ << ExitReport(counters, stages, st.pipeline(), st.pipeline_learned(),
                         info_.include_flagged);
      if (writer_ != nullptr) out_ << BudgetReport(o_.store.budgets, writer_->budget_counts());
      out_ << CpuUsedLine() << std::flush;
    }
    if (summary != nullptr) {
      summary->run_id = run_id_;
      summary->counters = counters;
      summary->stages = stages;
      summary->pipeline = st.pipeline();
      summary->pipeline_learned = st.pipeline_learned();
      summary->records = analyzer_->counters().drained;
    }
    return status;
  }

  void set_restarts(int64_t n) { restarts_ = n; }

  // What reading the journal (or --replay's archive) skipped: one stderr line
  // per skip, and the counters. Non-OK (DataLoss, for exit status 1) when
  // anything was skipped; the run itself goes on.
  uint64_t StreamCounter(store::Counter c) const {
    auto it = analyzer_->stream_counters().find(std::string(store::CounterName(c)));
    return it == analyzer_->stream_counters().end() ? 0 : it->second;
  }

  absl::Status NoteCorruptChunks(const std::string& what, const std::vector<CorruptSkip>& skips,
                                 uint64_t chunks, uint64_t records_lost) {
    // Cumulative over restarts: kept with the analysis (and its checkpoints),
    // so a restart from a checkpoint past the damage still counts it.
    analyzer_->AddStreamCounter(
        std::string(store::CounterName(store::Counter::kJournalChunksCorrupt)), chunks);
    analyzer_->AddStreamCounter(
        std::string(store::CounterName(store::Counter::kJournalRecordsLost)), records_lost);
    for (const CorruptSkip& skip : skips) std::cerr << CorruptSkipLine(what, skip) << "\n";
    if (chunks > skips.size()) {
      std::cerr << what << ": " << chunks - skips.size() << " more corrupt chunks not listed\n";
    }
    if (chunks == 0) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(
        what, ": ", chunks, " corrupt chunk", chunks == 1 ? " was" : "s were",
        " skipped (at least ", records_lost, " records lost; journal_chunks_corrupt and ",
        "journal_records_lost in the store); the rest of the run was processed"));
  }

 private:
  const CollectorOptions& o_;
  std::ostream& out_;
  std::unique_ptr<RunDiagnostics> diagnostics_;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::time_point last_diagnosis_{};
  RunInfo info_;
  TimeBase time_;
  std::unique_ptr<store::Writer> store_;
  int64_t run_id_ = 0;
  std::unique_ptr<StoreSink> writer_;
  std::unique_ptr<OtlpSink> otlp_;       // --otlp-endpoint
  std::unique_ptr<SinkFanout> fanout_;   // the store's sink and otlp_
  std::optional<StoreProjection> projection_;  // with a store
  std::unique_ptr<Analyzer> analyzer_;
  bool pipeline_dirty_ = true;
  int64_t restarts_ = 0;
  std::map<std::string, int64_t> counter_floor_;  // SetCounterFloor
};

absl::Status RunReplay(const CollectorOptions& o, std::ostream& out, RunSummary* summary) {
  // Validate the input before anything is created.
  absl::StatusOr<ArchiveReader> reader = ArchiveReader::Open(o.replay_path);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<std::optional<RunInfo>> lead = ReadLeadingRunInfo(o.replay_path, /*own=*/false);
  if (!lead.ok()) return lead.status();
  RunInfo info;
  if (lead->has_value()) {
    info = **lead;
    info.calibration_source = "replay";
  } else if (o.tsc_hz <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.replay_path, ": the archive does not say its TSC frequency; pass --tsc-hz"));
  } else {
    info.session = o.session;
    info.host = HostName();
    info.anchor_tsc = 0;
    info.anchor_utc_ns = 0;
  }
  if (o.tsc_hz > 0) {
    info.tsc_hz = o.tsc_hz;
    info.calibration_source = "given";
  }
  info.started_utc_ns = RealtimeNowNs();
  if (!o.host_name.empty()) info.host = o.host_name;
  ApplySettings(o, "replay", &info);

  Session session(o, out);
  if (absl::Status s = session.OpenStore(); !s.ok()) return s;
  if (absl::Status s = session.Start(info, 0, /*block_when_full=*/true); !s.ok()) return s;
  const auto t0 = Clock::now();
  absl::Status read = reader->ReadAll(&session.analyzer());
  session.analyzer().mutable_counters().malformed_chunks += reader->malformed_chunks();
  const auto t1 = Clock::now();
  if (!read.ok()) {
    out << "replay: " << read.message() << "; analysing what came before\n";
  } else if (reader->torn_tail()) {
    out << "replay: " << o.replay_path << " ends with a torn chunk; analysing what came before\n";
  }
  const absl::Status lost =
      session.NoteCorruptChunks(absl::StrCat("replay ", o.replay_path), reader->corrupt_skips(),
                                reader->corrupt_chunks(), reader->corrupt_records_lost());
  absl::Status s = session.Finish(nullptr, nullptr, summary);
  if (summary != nullptr) summary->elapsed_s = std::chrono::duration<double>(t1 - t0).count();
  if (s.ok() && read.ok()) s = lost;
  return s;
}

absl::Status CopyJournalInto(const std::string& journal_path, uint64_t valid_bytes,
                             ArchiveWriter* raw) {
  const int fd = ::open(journal_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat(journal_path, ": cannot reopen"));
  std::string buf(1 << 20, '\0');
  uint64_t off = kArchiveHeaderBytes;
  absl::Status s;
  while (off < valid_bytes && s.ok()) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), valid_bytes - off));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (n <= 0) {
      s = absl::InternalError(absl::StrCat(journal_path, ": read failed"));
      break;
    }
    s = raw->Append(std::string_view(buf.data(), static_cast<size_t>(n)));
    off += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return s;
}

// The journal a live run writes, ready for the drain stage: recovered (a
// resumed run) or created with the run info as its first chunk (a new run).
struct JournalStart {
  std::optional<Journal> journal;  // empty: no journal
  Journal::Recovered recovered;    // a resumed run's scan of its journal's tail
  absl::Status loss;               // DataLoss: the recovery skipped corrupt chunks
  // A resumed run: what the drainer knows from the checkpoint and the tail
  // (it drains at once), and the tail the analysis still has to read
  // (JournalCatchUp) before the journal's live part.
  std::optional<DrainerSeed> seed;
  uint64_t replay_from = 0;
  Clock::time_point recovery_start{};
};

// A resumed run counts itself as it starts (the store's count, so every
// resume counts, also one that is killed during its recovery), then says so.
absl::Status CountRestart(const RunPlan& plan, Session& session, std::ostream& out) {
  int64_t restarts = 1;
  if (session.store() != nullptr) {
    absl::StatusOr<int64_t> counted = session.store()->ResumeRun(plan.resume_run);
    if (!counted.ok()) return counted.status();
    restarts = *counted;
  }
  session.set_restarts(restarts);
  out << "resuming run " << plan.resume_run << " from " << plan.journal_path << " (restart "
      << restarts << ")\n"
      << std::flush;
  return absl::OkStatus();
}

// This run's checkpoint, loaded into the analysis: the analysis as it stood
// at a journal offset, so only the journal after it is replayed
// (collector/stream/checkpoint.h). nullopt when there is none (another
// run's is removed; one of another format is refused in one line).
absl::StatusOr<std::optional<Checkpoint>> LoadCheckpoint(const CollectorOptions& o,
                                                         const RunPlan& plan, Session& session,
                                                         std::ostream& out,
                                                         std::optional<int64_t>* foreign_run) {
  const std::string checkpoint_path = CheckpointPath(plan.local_state);
  if (absl::Status s = CheckNotSymlink(checkpoint_path); !s.ok()) return s;
  absl::StatusOr<Checkpoint> checkpoint = ReadCheckpointFile(checkpoint_path);
  if (checkpoint.ok() && checkpoint->run_id == plan.resume_run) {
    StateReader state(checkpoint->state);
    if (!session.analyzer().LoadState(state)) {
      return absl::DataLossError(
          absl::StrCat(checkpoint_path,
                       ": the checkpoint's state is unreadable; the journal before it is "
                       "gone, so run ",
                       plan.resume_run, " cannot be resumed: move both files away"));
    }
    if (!o.raw_path.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--raw: run ", plan.resume_run,
                       " resumes from a checkpoint, so its journal no longer "
                       "holds the whole run; restart without --raw"));
    }
    return std::optional<Checkpoint>(*std::move(checkpoint));
  }
  if (checkpoint.ok()) {
    // Another run's. A run's own start removes any checkpoint left behind
    // (StartJournal), so this one was put here: not ours to use.
    *foreign_run = checkpoint->run_id;
    ::unlink(checkpoint_path.c_str());
  } else if (absl::IsFailedPrecondition(checkpoint.status())) {
    // Another collector's format: its state cannot be read, so the run is
    // analysed again from the journal's start (the store skips what it holds).
    out << "warning: " << checkpoint.status().message()
        << " is not used; replaying the journal from its start\n";
    ::unlink(checkpoint_path.c_str());
  } else if (!absl::IsNotFound(checkpoint.status())) {
    return absl::DataLossError(absl::StrCat(
        checkpoint.status().message(), "; the journal before it is gone, so run ", plan.resume_run,
        " cannot be resumed: move it and ", plan.journal_path, " away"));
  }
  return std::optional<Checkpoint>();
}

// What a resume found wrong with its journal or checkpoint, said in one line
// (`line`, empty when nothing), which also makes the run's exit status 1.
struct JournalDamage {
  std::string line;
};

// The damage a resume can see before it reads the journal: a journal shorter
// than its checkpoint's offset, a checkpoint of another run, and a missing
// checkpoint where the run freed the journal before one. (A missing
// checkpoint of a journal that was never freed is no damage: the journal
// holds the whole run, and is replayed from its start.)
absl::StatusOr<JournalDamage> CheckJournalDamage(const RunPlan& plan, const Checkpoint* checkpoint,
                                                 const std::optional<int64_t>& foreign_run) {
  JournalDamage d;
  struct stat st {};
  if (::stat(plan.journal_path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat(plan.journal_path, ": cannot stat"));
  }
  const uint64_t journal_bytes = static_cast<uint64_t>(st.st_size);
  const std::string checkpoint_path = CheckpointPath(plan.local_state);
  if (checkpoint != nullptr) {
    if (journal_bytes < checkpoint->journal_offset) {
      d.line = absl::StrCat("journal ", plan.journal_path, ": ", journal_bytes,
                            " bytes, shorter than its checkpoint's offset ",
                            checkpoint->journal_offset,
                            " (truncated): everything it held after the checkpoint is lost "
                            "(records lost: unknown; index_gaps counts those the rings still "
                            "show); counters continue from the store's");
    }
    return d;
  }
  absl::StatusOr<bool> freed = Journal::StartFreed(plan.journal_path);
  const bool journal_freed = freed.ok() && *freed;
  const std::string consequence =
      journal_freed ? "the run freed its journal before the checkpoint, so the analysis of "
                      "everything before it is lost (records lost: unknown); counters continue "
                      "from the store's"
                    : "the journal holds the whole run and is replayed from its start "
                      "(records lost: 0)";
  if (foreign_run.has_value()) {
    d.line = absl::StrCat("checkpoint ", checkpoint_path, ": belongs to run ", *foreign_run,
                          ", not run ", plan.resume_run, "; not used (removed): ", consequence);
  } else if (journal_freed) {
    d.line = absl::StrCat("checkpoint ", checkpoint_path, ": missing: ", consequence);
  }
  return d;
}

// A checkpoint of another format cannot be loaded (its state is another
// layout), and then the run is analysed again from its journal's start. When
// the run that wrote it has freed that start (Journal::FreeBefore), nothing
// can rebuild the orders, processes and counters the checkpoint held: the
// resume is refused before it touches anything, so that the collector that
// wrote both files can still finish the run.
absl::Status CheckCheckpointFormat(const RunPlan& plan) {
  const std::string checkpoint_path = CheckpointPath(plan.local_state);
  absl::StatusOr<Checkpoint> checkpoint = ReadCheckpointFile(checkpoint_path);
  if (!absl::IsFailedPrecondition(checkpoint.status())) return absl::OkStatus();
  absl::StatusOr<bool> freed = Journal::StartFreed(plan.journal_path);
  if (!freed.ok()) return freed.status();
  if (!*freed) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      checkpoint.status().message(), ", and the run that wrote it freed the journal before it: run ",
      plan.resume_run, " can be resumed only by the collector that wrote them; both files are "
      "left as they are (to start a new run instead, move ", checkpoint_path, " and ",
      plan.journal_path, " away: the store keeps what run ", plan.resume_run, " stored)"));
}

// What the store holds already is skipped as the journal re-emits it, by
// sequence number. A corrupt chunk in the part replayed shifts the numbers
// after it: then numbers are trusted only up to the checkpoint's, and later
// orders are told by their key in the store (StoreSink::Resume). A scan of
// the tail finds out first. Recovery re-emits every order the journal
// finishes; the store must take all of them (it skips those it has), so the
// writer waits instead of dropping until ResumeFromJournal flushes it.
// A resumed run's budgets: the intervals not judged yet get what the store
// holds of them, so that each is judged on all its samples (budget_judge.h).
void SeedBudgets(const CollectorOptions& o, Session& session, std::ostream& out) {
  absl::Status s;
  absl::StatusOr<std::unique_ptr<store::StoreReader>> reader = store::OpenReader(*o.store_uri);
  if (reader.ok()) {
    s = session.writer()->SeedBudgets(**reader);
  } else {
    s = reader.status();
  }
  if (!s.ok()) {
    out << "warning: budgets: the intervals open at the restart could not be read back from "
           "the store ("
        << s.message() << "); they are judged on the samples after the restart only\n";
  }
}

void ResumeWriter(const CollectorOptions& o, const store::RunState& resume_state,
                  uint64_t checkpoint_emitted, const Journal::Recovered& pre, Session& session,
                  std::ostream& out) {
  std::optional<uint64_t> exact_through;
  std::vector<std::pair<uint64_t, uint32_t>> stored_keys;
  if (pre.corrupt_chunks > 0) {
    const uint64_t sure = checkpoint_emitted;
    auto it = resume_state.counters.find(
        std::string(store::CounterName(store::Counter::kStoreStatsThrough)));
    const uint64_t stored =
        it == resume_state.counters.end() ? 0 : static_cast<uint64_t>(it->second);
    absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> keys =
        session.store()->LastStoredOrders(session.run_id(), stored > sure ? stored - sure : 0);
    if (keys.ok() && o.store.detail == store::DetailPolicy::kAll) {
      exact_through = sure;
      stored_keys = *std::move(keys);
    } else {
      out << "warning: the journal has corrupt chunks and the store cannot tell which "
             "orders after them it holds; up to as many orders as those chunks held may be "
             "missing from the store\n";
    }
  }
  session.writer()->Resume(resume_state.counters, exact_through, stored_keys);
  session.writer()->set_block_when_full(true);
  if (!o.store.budgets.empty()) SeedBudgets(o, session, out);
}

// A resumed run: the analysis continues from this run's checkpoint (if any)
// and the journal's tail after it; the store skips what it holds already.
// Only the checkpoint is loaded here, and the tail scanned (checksums and
// the drainer's view: DrainerSeedScan), not analysed: the drain starts right
// after, and the analysis reads the tail on its thread first
// (AnalysisStage::CatchUp), without the store holding up the drain.
absl::StatusOr<JournalStart> ResumeFromJournal(const CollectorOptions& o, const RunPlan& plan,
                                               const store::RunState& resume_state,
                                               Session& session, std::ostream& out) {
  JournalStart started;
  if (absl::Status s = CountRestart(plan, session, out); !s.ok()) return s;
  started.recovery_start = Clock::now();
  std::optional<int64_t> foreign_run;
  absl::StatusOr<std::optional<Checkpoint>> checkpoint =
      LoadCheckpoint(o, plan, session, out, &foreign_run);
  if (!checkpoint.ok()) return checkpoint.status();
  absl::StatusOr<JournalDamage> damage =
      CheckJournalDamage(plan, checkpoint->has_value() ? &**checkpoint : nullptr, foreign_run);
  if (!damage.ok()) return damage.status();
  // A journal shorter than its checkpoint's offset holds nothing after it:
  // the recovery reads nothing, and the journal goes on at that offset (the
  // part it lost stays a hole), so the checkpoint's offsets still hold.
  const uint64_t replay_from = checkpoint->has_value() ? (*checkpoint)->journal_offset : 0;
  started.replay_from = replay_from;
  const uint64_t drained_before_tail = session.analyzer().counters().drained;
  DrainerSeedScan scan(DrainerSeed::From(session.analyzer()), session.analyzer().stream_counters());
  absl::StatusOr<Journal::Recovered> r = Journal::Recover(plan.journal_path, &scan, replay_from);
  if (!r.ok()) return r.status();
  started.recovered = *r;
  started.seed = scan.Seed();
  if (damage->line.empty() && started.recovered.corrupt_chunks == 0) {
    // A cut the checks above cannot see: the store counted more records
    // drained than the checkpoint and the journal hold together. The store
    // lags the journal (never leads it), so the difference is a lower bound.
    auto stored = resume_state.counters.find("drained");
    const uint64_t recovered = drained_before_tail + scan.records_seen();
    if (stored != resume_state.counters.end() && stored->second > 0 &&
        static_cast<uint64_t>(stored->second) > recovered) {
      damage->line = absl::StrCat(
          "journal ", plan.journal_path, ": cut at byte ", started.recovered.valid_bytes,
          ", not just a torn last chunk: it holds ", recovered, " records of this run",
          checkpoint->has_value() ? " (with the checkpoint)" : "", " but the store counted ",
          stored->second,
          " drained; at least ", static_cast<uint64_t>(stored->second) - recovered,
          " records lost");
    }
  }
  if (!damage->line.empty()) {
    out << damage->line << "\n" << std::flush;
    session.SetCounterFloor(resume_state.counters);
  }
  if (session.writer() != nullptr) {
    ResumeWriter(o, resume_state, checkpoint->has_value() ? (*checkpoint)->emitted : 0,
                 started.recovered, session, out);
  }
  if (started.recovered.torn_tail && damage->line.empty()) {
    out << "journal: cut at byte " << started.recovered.valid_bytes
        << " (a torn tail; everything before it was recovered)\n";
  }
  started.loss = session.NoteCorruptChunks(
      absl::StrCat("journal ", plan.journal_path), started.recovered.corrupt_skips,
      started.recovered.corrupt_chunks, started.recovered.corrupt_records_lost);
  // The damage is the cause of any corrupt chunk the recovery met (a freed
  // journal read from its start meets its hole): the exit says the cause.
  if (!damage->line.empty()) started.loss = absl::DataLossError(damage->line);
  absl::StatusOr<Journal> j = Journal::Continue(plan.journal_path, started.recovered);
  if (!j.ok()) return j.status();
  started.journal.emplace(*std::move(j));
  // The journal before the checkpoint was freed by the run that wrote it;
  // freeing it again (nothing left to free) tells this Journal so, so that
  // its cap counts only what came after the checkpoint. A file system that
  // cannot punch holes is said by the drain stage.
  if (replay_from > 0) started.journal->FreeBefore(replay_from).IgnoreError();
  if (!o.quiet) {
    out << "draining again "
        << absl::StrFormat(
               "%.2f", std::chrono::duration<double>(Clock::now() - started.recovery_start).count())
        << " s after loading the checkpoint; the analysis catches up on the journal meanwhile\n"
        << std::flush;
  }
  return started;
}

absl::StatusOr<JournalStart> StartJournal(const CollectorOptions& o, const RunPlan& plan,
                                          const RunInfo& info, Session& session) {
  JournalStart started;
  if (!plan.journaled()) return started;
  // A checkpoint left by an earlier run (one that ended between removing
  // its journal and its checkpoint) belongs to no journal now.
  const std::string checkpoint_path = CheckpointPath(plan.local_state);
  if (absl::Status s = CheckNotSymlink(checkpoint_path); !s.ok()) return s;
  ::unlink(checkpoint_path.c_str());
  absl::StatusOr<Journal> j =
      Journal::Create(plan.journal_path, session.run_id(), o.group_readable);
  if (!j.ok()) return j.status();
  started.journal.emplace(*std::move(j));
  std::string chunk;
  ChunkEncoder::RunInfo(info.ToJson(), &chunk);
  if (absl::Status s = started.journal->AppendDurable(chunk); !s.ok()) return s;
  return started;
}

// --raw: a copy of the whole stream (a resumed run starts it with what its
// journal holds). nullopt without --raw.
absl::StatusOr<std::optional<ArchiveWriter>> OpenRawCopy(const CollectorOptions& o,
                                                         const RunPlan& plan, const RunInfo& info,
                                                         const JournalStart& started) {
  std::optional<ArchiveWriter> raw;
  if (o.raw_path.empty()) return raw;
  ArchiveHeader h;
  h.kind = ArchiveKind::kRaw;
  absl::StatusOr<ArchiveWriter> w =
      ArchiveWriter::Create(o.raw_path, h, /*durable=*/false, o.group_readable);
  if (!w.ok()) return w.status();
  raw.emplace(*std::move(w));
  absl::Status s;
  if (plan.resuming()) {
    s = CopyJournalInto(plan.journal_path, started.recovered.valid_bytes, &*raw);
  } else {
    std::string chunk;
    ChunkEncoder::RunInfo(info.ToJson(), &chunk);
    s = raw->Append(chunk);
  }
  if (!s.ok()) return s;
  return raw;
}

// Where the analysis stage takes its passes from: the journal, read back up
// to the durable end the drain publishes (`tail`, `progress`), or, without a
// journal, the in-memory queue.
struct AnalysisFeed {
  JournalTail* tail = nullptr;
  DrainProgress* progress = nullptr;
  PassQueue* queue = nullptr;
  bool checkpoints = false;  // journal, store, --checkpoint-interval > 0, no --raw
  // A resumed run: the journal's tail a restart found, [from, tail->offset()),
  // analysed first (the drain runs meanwhile).
  bool catch_up = false;
  std::string tail_path;
  uint64_t catch_up_from = 0;
  Clock::time_point recovery_start{};
  std::ostream* out = nullptr;
};

// The analysis stage: decodes, de-duplicates and stitches each drained pass,
// feeds the sinks, takes checkpoints, and tells the drain stage whether idle
// passes must still advance the stream clock. Runs on its own thread until
// the drain has ended and everything it drained is analysed.
class AnalysisStage {
 public:
  AnalysisStage(const CollectorOptions& o, const AnalysisFeed& feed, Session& session,
                std::atomic<bool>& orders_pending, std::atomic<bool>& orders_open)
      : o_(o),
        feed_(feed),
        session_(session),
        orders_pending_(orders_pending),
        orders_open_(orders_open) {}

  absl::Status Run() {
    if (feed_.queue != nullptr) {
      PassQueue::Item item;
      while (feed_.queue->Pop(&item)) {
        // One malformed chunk is skipped and counted, as the journal's
        // reader and a replay skip it: the rest of the pass is analysed.
        Note(DispatchEach(item.bytes, &session_.analyzer(),
                          &session_.analyzer().mutable_counters().malformed_chunks));
        AfterBatch(&item.drainer, nullptr);
      }
      return status_;
    }
    // Batches of at most this many journal bytes (128 Ki records): a far
    // behind analysis still submits, snapshots and checkpoints between them.
    constexpr size_t kBatchBytes = 4u << 20;
    JournalTail& tail = *feed_.tail;
    PauseForTests();
    if (feed_.catch_up) CatchUp(tail.offset());
    DrainerCounters drainer;
    uint64_t syncs = 0;
    while (true) {
      PauseForTests();
      bool closed = false;
      const uint64_t end =
          feed_.progress->Wait(tail.offset(), std::chrono::milliseconds(100), &closed);
      if (end <= tail.offset()) {
        if (closed) break;
        // Idle, or the drain stalled at the journal's cap: a checkpoint of
        // what is analysed lets the drain stage free the journal, and the
        // orders gathered since the last handover go to the store once their
        // batch is due (StoreSink::Submit), not when the next records come.
        MaybeCheckpoint(tail.offset());
        if (session_.writer() != nullptr) session_.writer()->Submit();
        session_.TickOtlp();
        session_.Diagnose(/*end_of_run=*/false);  // an empty session says so
        continue;
      }
      const uint64_t malformed = tail.malformed_chunks();
      Note(tail.Dispatch(end, kBatchBytes, &session_.analyzer()));
      session_.analyzer().mutable_counters().malformed_chunks +=
          tail.malformed_chunks() - malformed;
      feed_.progress->SetAnalysed(tail.offset());
      MaybeCheckpoint(tail.offset());
      feed_.progress->ReadCounters(&drainer, &syncs);
      AfterBatch(&drainer, &syncs);
    }
    return status_;
  }

 private:
  void Note(const absl::Status& s) {
    if (!s.ok() && status_.ok()) status_ = s;
  }

  // A resumed run's journal tail, [catch_up_from, until): read as a recovery
  // reads it (corrupt chunks skipped: the restart's scan said and counted
  // them), every order it finishes into the store, which skips those it
  // holds. The store sink waits instead of dropping (ResumeWriter), so this
  // waits until the store has them.
  void CatchUp(uint64_t until) {
    absl::StatusOr<Journal::Recovered> r =
        Journal::Recover(feed_.tail_path, &session_.analyzer(), feed_.catch_up_from, until);
    if (r.ok()) session_.analyzer().mutable_counters().malformed_chunks += r->malformed_chunks;
    if (session_.writer() != nullptr) {
      session_.writer()->Flush();
      // Orders the journal left pending finish at the first clock tick.
      session_.writer()->Submit();
    }
    feed_.progress->SetAnalysed(until);
    if (!r.ok()) {
      Note(r.status());
      return;
    }
    if (o_.quiet) return;
    *feed_.out << "recovered in "
               << absl::StrFormat(
                      "%.2f",
                      std::chrono::duration<double>(Clock::now() - feed_.recovery_start).count())
               << " s: " << (until - std::max<uint64_t>(feed_.catch_up_from, kArchiveHeaderBytes))
               << " journal bytes replayed"
               << (feed_.catch_up_from > 0
                       ? absl::StrCat(" after the checkpoint at byte ", feed_.catch_up_from)
                       : std::string(" (no checkpoint)"))
               << " (the drain ran meanwhile)\n"
               << std::flush;
  }

  // Every --checkpoint-interval, one at a time (the next once the store has
  // written the last): the analysis's state after every chunk before
  // `offset`, a chunk boundary (collector/stream/checkpoint.h). None while
  // stopping: the store is being told to stop, and the run ends anyway.
  void MaybeCheckpoint(uint64_t offset) {
    if (!feed_.checkpoints || offset <= marked_offset_ || feed_.progress->stopping()) return;
    const auto now = Clock::now();
    if (now - last_checkpoint_ < o_.checkpoint_interval ||
        session_.writer()->durable_checkpoint_offset() < marked_offset_) {
      return;
    }
    session_.TakeCheckpoint(offset);
    marked_offset_ = offset;
    last_checkpoint_ = now;
  }

  void AfterBatch(const DrainerCounters* drainer, const uint64_t* journal_syncs) {
    session_.Diagnose(/*end_of_run=*/false);
    if (session_.writer() != nullptr) session_.writer()->Submit();
    session_.TickOtlp();
    if (Clock::now() - last_snapshot_ >= o_.snapshot_interval) {
      session_.Snapshot(drainer, journal_syncs);
      last_snapshot_ = Clock::now();
    }
    // Pairs with the drain stage's relaxed loads: hints only (drain_loop.h).
    const Stitcher& st = session_.analyzer().stitcher();
    orders_pending_.store(st.has_pending(), std::memory_order_relaxed);
    orders_open_.store(st.open_orders() > 0, std::memory_order_relaxed);
  }

  // The test hook (options.h): waits while the file exists.
  void PauseForTests() const {
    if (o_.test_pause_analysis_file.empty()) return;
    while (::access(o_.test_pause_analysis_file.c_str(), F_OK) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  const CollectorOptions& o_;
  const AnalysisFeed feed_;
  Session& session_;
  std::atomic<bool>& orders_pending_;
  std::atomic<bool>& orders_open_;
  absl::Status status_;
  Clock::time_point last_snapshot_ = Clock::now();
  Clock::time_point last_checkpoint_ = Clock::now();
  uint64_t marked_offset_ = 0;  // the last checkpoint taken
};

// The signal handler's flag, or the embedding program's (options.h, stop).
bool StopRequested(const CollectorOptions& o) {
  return g_signal_stop.load(std::memory_order_relaxed) ||
         (o.stop != nullptr && o.stop->load(std::memory_order_relaxed));
}

// The run's figures into `summary`, and the journal's line.
void ReportLiveRun(const CollectorOptions& o, bool resumed, const DrainResult& drained,
                   const std::optional<Journal>& journal, RunSummary* summary, std::ostream& out) {
  if (summary != nullptr) {
    summary->resumed = resumed;
    summary->elapsed_s = std::chrono::duration<double>(drained.elapsed).count();
    summary->passes = drained.passes;
    if (journal.has_value()) {
      summary->journal_syncs = journal->syncs();
      summary->journal_sync_mean_us = journal->syncs()
                                          ? static_cast<double>(journal->sync_ns_total()) /
                                                static_cast<double>(journal->syncs()) / 1e3
                                          : 0;
      summary->journal_sync_max_us = static_cast<double>(journal->sync_ns_max()) / 1e3;
    }
  }
  if (journal.has_value() && !o.quiet && journal->syncs() > 0) {
    out << "journal: " << journal->syncs() << " durable appends (fdatasync), mean "
        << static_cast<double>(journal->sync_ns_total()) / journal->syncs() / 1e3 << " us, max "
        << static_cast<double>(journal->sync_ns_max()) / 1e3 << " us; " << journal->bytes()
        << " bytes; " << drained.passes << " drain passes with data\n";
  }
}

// A run that ended well removes its journal and checkpoint (the run is in the
// store); then any corrupt chunk skipped, in this process or before a
// restart, still makes it exit 1. Returns `status` when that is not OK.
absl::Status RetireJournal(const RunPlan& plan, Session& session, std::optional<Journal>& journal,
                           const absl::Status& loss, absl::Status status) {
  if (status.ok() && journal.has_value()) {
    status = journal->Remove();
    ::unlink(
        CheckpointPath(plan.local_state).c_str());  // its journal is gone; the run is in the store
  }
  if (status.ok()) status = loss;  // the run is complete; exit 1 all the same
  if (status.ok() && session.StreamCounter(store::Counter::kJournalChunksCorrupt) > 0) {
    status = absl::DataLossError(
        absl::StrCat("journal ", plan.journal_path, ": ",
                     session.StreamCounter(store::Counter::kJournalChunksCorrupt),
                     " corrupt chunks were skipped earlier in this run (before a restart); see "
                     "journal_chunks_corrupt and journal_records_lost in the store"));
  }
  return status;
}

// The stages of a live run: this thread drains (peek, journal, commit), so
// the rings never wait for the analysis, which runs on its own thread and
// reads the journal behind it (or, without a journal, takes the passes from a
// bounded queue). Returns when the drain loop does, the analysis joined (its
// status in `analysis_status`).
DrainResult RunStages(const CollectorOptions& o, const RunInfo& info, Session& session,
                      Drainer& drainer, Journal* journal, ArchiveWriter* raw,
                      const JournalStart& started, std::ostream& out,
                      absl::Status* analysis_status) {
  std::optional<JournalTail> tail;
  std::optional<DrainProgress> progress;
  std::optional<PassQueue> queue;
  AnalysisFeed feed;
  if (journal != nullptr) {
    absl::StatusOr<JournalTail> opened = JournalTail::Open(journal->path(), journal->bytes());
    if (!opened.ok()) {
      DrainResult failed;
      failed.status = opened.status();
      return failed;
    }
    tail.emplace(*std::move(opened));
    progress.emplace(journal->bytes());
    feed.tail = &*tail;
    feed.progress = &*progress;
    feed.checkpoints =
        session.writer() != nullptr && o.checkpoint_interval.count() > 0 && raw == nullptr;
    feed.catch_up = started.seed.has_value();
    feed.tail_path = journal->path();
    feed.catch_up_from = started.replay_from;
    feed.recovery_start = started.recovery_start;
    feed.out = &out;
  } else {
    queue.emplace(o.max_queued_pass_bytes);
    feed.queue = &*queue;
  }
  std::atomic<bool> orders_pending{false}, orders_open{false};
  std::thread analysis([&] {
    *analysis_status = AnalysisStage(o, feed, session, orders_pending, orders_open).Run();
  });
  // The cores' offsets, re-measured on a thread of its own (never the drain path).
  SkewMonitor skew(info, info.skew_interval_s);
  skew.Start();
  DrainStage stage;
  stage.options = &o;
  stage.info = &info;
  stage.drainer = &drainer;
  stage.journal = journal;
  stage.raw = raw;
  stage.sink = session.writer();
  stage.skew = &skew;
  stage.progress = feed.progress;
  stage.queue = feed.queue;
  stage.orders_pending = &orders_pending;
  stage.orders_open = &orders_open;
  stage.stop_requested = [&o] { return StopRequested(o); };
  // A store that does not answer must not hold the exit (the journal keeps it).
  // The store sink keeps waiting for a store that answers (its writer's
  // failures free the queue too), so the journal's backlog is stored before
  // the run ends.
  stage.on_stopping = [&session] {
    if (session.store() != nullptr) session.store()->RequestStop();
  };
  const DrainResult drained = RunDrainLoop(stage);
  if (progress.has_value()) progress->Close();
  if (queue.has_value()) queue->Close();
  analysis.join();
  return drained;
}

// A live run: the plan (new run or resume), then the stages
// (docs/collector.md, "The stages of the collector"):
//   drain -> journal (this thread, drain_loop.h) -> the journal read back
//   (JournalTail) -> decode/stitch -> sinks (analysis thread) -> store
//   writer (its thread).
absl::Status RunLive(const CollectorOptions& o, std::ostream& out, RunSummary* summary) {
  // 1. The plan: everything that can refuse the run, before anything is created.
  absl::StatusOr<SessionLock> lock = SessionLock::Acquire(o.session);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<RunPlan> planned = PlanLiveRun(o, out);
  if (!planned.ok()) return planned.status();
  RunPlan& plan = *planned;

  // 2. Calibrate (a new run) or take the journal's calibration (a resumed
  // run). A new run calibrates before the store is opened (or created), so
  // that a calibration failure leaves nothing behind.
  std::optional<RunInfo> fresh;
  if (!plan.resuming()) {
    absl::StatusOr<RunInfo> live = LiveRunInfo(o);
    if (!live.ok()) return live.status();
    fresh = *std::move(live);
  }
  Session session(o, out);
  if (absl::Status s = session.OpenStore(); !s.ok()) return s;
  store::RunState resume_state;
  if (absl::Status s = SettlePlanWithStore(session.store(), &plan, &resume_state, out); !s.ok()) {
    return s;
  }
  const bool resumed = plan.resuming();
  if (resumed) {
    if (absl::Status s = CheckCheckpointFormat(plan); !s.ok()) return s;
  }
  if (!resumed && !fresh.has_value()) {  // the journal was stale: this run is new after all
    absl::StatusOr<RunInfo> live = LiveRunInfo(o);
    if (!live.ok()) return live.status();
    fresh = *std::move(live);
  }
  const RunInfo info = resumed ? *plan.resume_info : *std::move(fresh);
  // With a journal, the analysis may wait for the store (the journal holds
  // the backlog up to --journal-cap; the drain never waits for either), so
  // every order's detail is stored. Without one, the store sink drops and
  // counts detail when it falls far behind instead.
  absl::Status started = session.Start(info, resumed ? plan.resume_run : 0,
                                       /*block_when_full=*/o.use_journal);
  if (!started.ok()) return started;
  absl::StatusOr<JournalStart> journal_start =
      resumed ? ResumeFromJournal(o, plan, resume_state, session, out)
              : StartJournal(o, plan, info, session);
  if (!journal_start.ok()) return journal_start.status();
  std::optional<Journal>& journal = journal_start->journal;
  absl::StatusOr<std::optional<ArchiveWriter>> raw = OpenRawCopy(o, plan, info, *journal_start);
  if (!raw.ok()) return raw.status();

  // 3. The stages (RunStages).
  DrainerOptions dopt;
  dopt.session = info.session;
  dopt.limits.allowed_uids = o.allow_uids;
  dopt.limits.max_segment_bytes = o.max_segment_bytes;
  // A resumed run's seed comes from the checkpoint and the journal's tail
  // (ResumeFromJournal): the analysis has not read that tail yet.
  Drainer drainer(dopt, journal_start->seed.has_value() ? *journal_start->seed
                                                        : DrainerSeed::From(session.analyzer()));
  absl::Status analysis_status;
  const DrainResult drained =
      RunStages(o, info, session, drainer, journal.has_value() ? &*journal : nullptr,
                raw->has_value() ? &**raw : nullptr, *journal_start, out, &analysis_status);
  absl::Status status = drained.status;
  if (status.ok()) status = analysis_status;

  // 4. Close open orders, flush, end the run, retire the journal.
  const uint64_t syncs = journal.has_value() ? journal->syncs() : 0;
  absl::Status finish =
      session.Finish(&drainer.counters(), journal.has_value() ? &syncs : nullptr, summary);
  if (status.ok()) status = finish;
  if (raw->has_value()) {
    absl::Status s = (*raw)->Close();
    if (status.ok()) status = s;
  }
  ReportLiveRun(o, resumed, drained, journal, summary, out);
  return RetireJournal(plan, session, journal, journal_start->loss, status);
}

}  // namespace

int64_t RunSummary::counter(std::string_view name) const {
  for (const auto& [n, v] : counters) {
    if (n == name) return v;
  }
  return 0;
}

const StageSummary* RunSummary::stage(std::string_view name) const {
  for (const StageSummary& s : stages) {
    if (s.stage == name) return &s;
  }
  return nullptr;
}

absl::Status RunCollector(const CollectorOptions& options, RunSummary* summary) {
  std::ostream& out = options.out != nullptr ? *options.out : std::cout;
  g_collector_started = Clock::now();
  if (options.cpu >= 0) {
    // Before any thread starts: every thread the collector creates inherits it.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(options.cpu, &one);
    if (::sched_setaffinity(0, sizeof(one), &one) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("--cpu ", options.cpu, ": cannot pin to it: ", std::strerror(errno)));
    }
  }
  // From the start: a SIGTERM during calibration still ends the run cleanly.
  SignalScope signals(options.handle_signals && options.replay_path.empty());
  if (!options.replay_path.empty()) return RunReplay(options, out, summary);
  return RunLive(options, out, summary);
}

}  // namespace ticktrace::collect
