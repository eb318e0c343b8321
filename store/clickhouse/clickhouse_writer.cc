#include "store/clickhouse/clickhouse_writer.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "store/clickhouse/clickhouse_rollup.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/clickhouse/row_binary.h"

namespace ticktrace::store {
namespace {

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::optional<double> Finite(const std::optional<double>& v) {
  if (v.has_value() && std::isfinite(*v)) return v;
  return std::nullopt;
}

// One TSV field as ClickHouse escapes it (\t \n \\ \' \N ...).
std::string UnescapeTsv(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    // TabSeparated's escapes; any other escaped byte stands for itself.
    static constexpr std::string_view kEscaped = "tnr0bf";
    static constexpr char kMeant[] = {'\t', '\n', '\r', '\0', '\b', '\f'};
    const char c = s[++i];
    const size_t k = kEscaped.find(c);
    out.push_back(k == std::string_view::npos ? c : kMeant[k]);
  }
  return out;
}

std::vector<std::vector<std::string>> ParseTsv(absl::string_view text) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> row;
    for (absl::string_view f : absl::StrSplit(line, '\t')) row.push_back(UnescapeTsv(f));
    rows.push_back(std::move(row));
  }
  return rows;
}

// "\N" (NULL) -> nullopt.
std::optional<int64_t> TsvInt(const std::string& f) {
  int64_t v = 0;
  if (f == "\\N" || f == "N" || !absl::SimpleAtoi(f, &v)) return std::nullopt;
  return v;
}
std::optional<double> TsvDouble(const std::string& f) {
  double v = 0;
  if (f == "\\N" || f == "N" || !absl::SimpleAtod(f, &v)) return std::nullopt;
  return v;
}

uint64_t ParseCount(const std::string& text) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v)) return 0;
  return v;
}

// RunMeta::clock_error_ns (multi-host, H2) when this build's writer.h has
// it; written so that this file builds before and after that field lands.
// TODO(lead): use run.clock_error_ns directly once writer.h is committed.
template <typename M>
auto ClockErrorOf(const M& m, int) -> decltype(m.clock_error_ns, std::optional<double>()) {
  return m.clock_error_ns;
}
template <typename M>
std::optional<double> ClockErrorOf(const M&, long) {
  return std::nullopt;
}

int64_t IntervalStart(int64_t utc_ns, int64_t interval_ns) {
  return utc_ns - (((utc_ns % interval_ns) + interval_ns) % interval_ns);
}

}  // namespace

struct ClickHouseWriter::RunRow {
  int64_t run_id = 0;
  uint64_t claim = 0;
  RunMeta meta;
  std::optional<int64_t> ended_utc_ns;
  std::optional<double> utc_drift_ppm;
  std::optional<double> clock_error_ns;
};

ClickHouseWriter::ClickHouseWriter(ClickHouseOptions options)
    : options_(std::move(options)),
      client_(options_.http),
      location_(absl::StrCat("clickhouse://", options_.http.host, ":", options_.http.port, "/",
                             options_.database)) {
  if (!options_.on_notice) {
    options_.on_notice = [](const std::string& line) {
      std::cerr << "ticktrace: " << line << "\n";
    };
  }
}

ClickHouseWriter::~ClickHouseWriter() = default;

absl::StatusOr<std::unique_ptr<ClickHouseWriter>> ClickHouseWriter::Open(
    ClickHouseOptions options) {
  auto writer = std::unique_ptr<ClickHouseWriter>(new ClickHouseWriter(std::move(options)));
  ClickHouseWriter& w = *writer;
  absl::Status s = w.Retrying(
      [&] {
        absl::Status e = EnsureClickHouseSchema(w.client_, w.options_.database);
        if (!e.ok() && !absl::IsUnavailable(e)) {
          return absl::Status(e.code(), absl::StrCat(w.location_, ": ", e.message()));
        }
        return e;
      },
      w.options_.open_timeout_ms);
  if (!s.ok()) {
    if (absl::IsUnavailable(s)) {
      return absl::UnavailableError(
          absl::StrCat(w.location_, ": no ClickHouse server answered within ",
                       w.options_.open_timeout_ms / 1000, " s (", s.message(), ")"));
    }
    return s;
  }
  return writer;
}

void ClickHouseWriter::RequestStop() {
  stop_.store(true, std::memory_order_relaxed);
  // A server that answers finishes what is being written (the collector's
  // final flush); only requests to one that does not are cut short.
  if (failing_.load(std::memory_order_relaxed)) client_.RequestStop();
}

void ClickHouseWriter::ClearStop() {
  stop_.store(false, std::memory_order_relaxed);
  client_.ClearStop();
}

absl::Status ClickHouseWriter::Retrying(absl::FunctionRef<absl::Status()> attempt,
                                        int64_t deadline_ms) {
  const int64_t start_ns = MonotonicNs();
  int64_t backoff_ms = options_.backoff_initial_ms;
  while (true) {
    absl::Status s = attempt();
    if (!absl::IsUnavailable(s)) {
      if (failing_.load(std::memory_order_relaxed)) {
        failing_.store(false, std::memory_order_relaxed);
        options_.on_notice(absl::StrCat(location_, ": the server answers again after ",
                                        (MonotonicNs() - failing_since_ns_) / 1'000'000'000,
                                        " s; catching up"));
      }
      return s;
    }
    ++unavailable_count_;
    if (stop_.load(std::memory_order_relaxed)) {
      return absl::UnavailableError(
          absl::StrCat(location_, ": stopped while the server did not answer (", s.message(),
                       "); this batch is not committed, the journal keeps it"));
    }
    if (!failing_.load(std::memory_order_relaxed)) {
      failing_.store(true, std::memory_order_relaxed);
      failing_since_ns_ = MonotonicNs();
      options_.on_notice(absl::StrCat(location_, ": ", s.message(),
                                      "; retrying with backoff (nothing is lost meanwhile)"));
    }
    if (deadline_ms > 0 && MonotonicNs() - start_ns > deadline_ms * 1'000'000) {
      failing_.store(false, std::memory_order_relaxed);
      return s;
    }
    // Sleep in slices so that a stop is seen within 20 ms.
    const int64_t until_ns = MonotonicNs() + backoff_ms * 1'000'000;
    while (MonotonicNs() < until_ns && !stop_.load(std::memory_order_relaxed)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    backoff_ms = std::min(options_.backoff_max_ms, backoff_ms * 2);
  }
}

absl::StatusOr<std::string> ClickHouseWriter::QueryRetrying(const std::string& sql) {
  std::string out;
  absl::Status s = Retrying([&]() -> absl::Status {
    absl::StatusOr<std::string> r = client_.Query(sql, options_.database);
    if (!r.ok()) return r.status();
    out = *std::move(r);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status ClickHouseWriter::InsertOnce(int64_t run_id, const std::string& table,
                                          const char* batch_column, uint64_t batch,
                                          RowBinaryWriter& rows) {
  if (rows.rows() == 0) return absl::OkStatus();
  const std::string insert = absl::StrCat("INSERT INTO ", table, " FORMAT RowBinary");
  bool uncertain = false;
  return Retrying([&]() -> absl::Status {
    if (uncertain) {
      // The last try's answer was lost: was it applied?
      absl::StatusOr<std::string> n =
          client_.Query(absl::StrCat("SELECT count() FROM ", table, " WHERE run_id = ", run_id,
                                     " AND ", batch_column, " = ", batch),
                        options_.database);
      if (!n.ok()) return n.status();
      const uint64_t found = ParseCount(*n);
      if (found == rows.rows()) return absl::OkStatus();
      if (found != 0) {
        return absl::DataLossError(absl::StrCat(location_, ": ", table, " holds ", found, " of ",
                                                rows.rows(), " rows of batch ", batch,
                                                " (an INSERT applied in part)"));
      }
    }
    absl::Status s = client_.Insert(insert, rows.bytes(), options_.database);
    if (absl::IsUnavailable(s)) uncertain = true;
    return s;
  });
}

absl::Status ClickHouseWriter::InsertIdempotent(const std::string& table, RowBinaryWriter& rows) {
  if (rows.rows() == 0) return absl::OkStatus();
  const std::string insert = absl::StrCat("INSERT INTO ", table, " FORMAT RowBinary");
  return Retrying([&] { return client_.Insert(insert, rows.bytes(), options_.database); });
}

absl::Status ClickHouseWriter::InsertRunRow(uint64_t version) {
  const RunRow& r = *run_;
  const RunMeta& m = r.meta;
  RowBinaryWriter b;
  b.I64(r.run_id);
  b.U64(r.claim);
  b.U64(version);
  b.Str(m.session);
  b.Str(m.host);
  b.I64(m.started_utc_ns);
  b.Nullable(r.ended_utc_ns);
  b.F64(m.tsc_hz);
  b.Str(m.calibration_source);
  b.Nullable(Finite(m.spread_ppm));
  b.Nullable(Finite(m.kernel_tsc_hz));
  b.Nullable(Finite(m.tsc_step_ns));
  b.U64(m.anchor_tsc);
  b.I64(m.anchor_utc_ns);
  b.Str(m.environment_json);
  b.Str(m.settings_json);
  b.Str(m.pipeline);
  b.U8(m.pipeline_learned ? 1 : 0);
  b.I64(m.interval_ns);
  b.Str(DetailPolicyName(m.detail));
  b.Nullable(Finite(r.utc_drift_ppm));
  b.Nullable(Finite(r.clock_error_ns));
  b.EndRow();
  return InsertIdempotent("runs", b);
}

absl::StatusOr<int64_t> ClickHouseWriter::BeginRun(const RunMeta& run) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(MonotonicNs()));
  for (int attempt = 0; attempt < 50; ++attempt) {
    absl::StatusOr<std::string> max = QueryRetrying("SELECT max(run_id) FROM runs");
    if (!max.ok()) return max.status();
    int64_t id = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*max), &id)) id = 0;
    run_ = std::make_unique<RunRow>();
    run_->run_id = id + 1;
    run_->claim = rng() | 1;
    run_->meta = run;
    run_->clock_error_ns = ClockErrorOf(run, 0);
    if (absl::Status s = InsertRunRow(0); !s.ok()) return s;
    // Another collector may have taken the same id meanwhile: whoever sees a
    // claim besides its own withdraws (of two racing inserts, the later one's
    // check sees the earlier; both may withdraw, never both stay).
    absl::StatusOr<std::string> claims = QueryRetrying(absl::StrCat(
        "SELECT count() FROM runs WHERE run_id = ", run_->run_id, " AND claim != ", run_->claim));
    if (!claims.ok()) return claims.status();
    if (ParseCount(*claims) == 0) {
      interval_ns_ = std::max<int64_t>(1, run.interval_ns);
      generation_ = 0;
      sequence_ = 0;
      batches_run_ = run_->run_id;
      dictionaries_run_ = run_->run_id;
      names_.clear();
      stages_.clear();
      newest_anchor_tsc_ = 0;
      resume_horizon_ns_.reset();
      return run_->run_id;
    }
    absl::StatusOr<std::string> withdrawn = QueryRetrying(absl::StrCat(
        "ALTER TABLE runs DELETE WHERE run_id = ", run_->run_id, " AND claim = ", run_->claim));
    if (!withdrawn.ok()) return withdrawn.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + rng() % 90));
  }
  return absl::UnavailableError(
      absl::StrCat(location_, ": could not take a run id (too many collectors starting at once)"));
}

absl::Status ClickHouseWriter::LoadRun(int64_t run_id) {
  absl::StatusOr<std::string> rows = QueryRetrying(absl::StrCat(
      "SELECT run_id, claim, session, host, started_utc_ns, ended_utc_ns, tsc_hz, "
      "calibration_source, spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, "
      "environment, settings, pipeline, pipeline_learned, interval_ns, detail, utc_drift_ppm, "
      "clock_error_ns FROM runs FINAL WHERE run_id = ",
      run_id, " ORDER BY claim LIMIT 1 FORMAT TabSeparated"));
  if (!rows.ok()) return rows.status();
  run_.reset();
  std::vector<std::vector<std::string>> t = ParseTsv(*rows);
  if (t.empty()) return absl::OkStatus();
  const std::vector<std::string>& f = t[0];
  if (f.size() != 21) {
    return absl::DataLossError(absl::StrCat(location_, ": runs row of run ", run_id, " has ",
                                            f.size(), " fields, not 21"));
  }
  auto r = std::make_unique<RunRow>();
  r->run_id = run_id;
  if (!absl::SimpleAtoi(f[1], &r->claim)) r->claim = 0;
  RunMeta& m = r->meta;
  m.session = f[2];
  m.host = f[3];
  m.started_utc_ns = TsvInt(f[4]).value_or(0);
  r->ended_utc_ns = TsvInt(f[5]);
  m.tsc_hz = TsvDouble(f[6]).value_or(0);
  m.calibration_source = f[7];
  m.spread_ppm = TsvDouble(f[8]);
  m.kernel_tsc_hz = TsvDouble(f[9]);
  m.tsc_step_ns = TsvDouble(f[10]);
  if (!absl::SimpleAtoi(f[11], &m.anchor_tsc)) m.anchor_tsc = 0;
  m.anchor_utc_ns = TsvInt(f[12]).value_or(0);
  m.environment_json = f[13];
  m.settings_json = f[14];
  m.pipeline = f[15];
  m.pipeline_learned = f[16] == "1";
  m.interval_ns = std::max<int64_t>(1, TsvInt(f[17]).value_or(1'000'000'000));
  if (absl::StatusOr<DetailPolicy> d = ParseDetailPolicy(f[18]); d.ok()) m.detail = *d;
  r->utc_drift_ppm = TsvDouble(f[19]);
  r->clock_error_ns = TsvDouble(f[20]);
  interval_ns_ = m.interval_ns;
  run_ = std::move(r);
  return absl::OkStatus();
}

absl::StatusOr<RunState> ClickHouseWriter::LookupRun(int64_t run_id) {
  if (absl::Status s = LoadRun(run_id); !s.ok()) return s;
  RunState state;
  if (run_ == nullptr) return state;
  state.exists = true;
  state.ended = run_->ended_utc_ns.has_value();
  state.session = run_->meta.session;
  // Committed batches' counters only (a batch without its commit record is
  // deleted by the resume, and its counters must not be believed).
  absl::StatusOr<std::string> rows = QueryRetrying(
      absl::StrCat("SELECT name, argMax(value, version) FROM counters WHERE run_id = ", run_id,
                   " AND version IN (SELECT batch FROM batches WHERE run_id = ", run_id,
                   ") GROUP BY name FORMAT TabSeparated"));
  if (!rows.ok()) return rows.status();
  for (const std::vector<std::string>& f : ParseTsv(*rows)) {
    if (f.size() == 2) state.counters[f[0]] = TsvInt(f[1]).value_or(0);
  }
  return state;
}

absl::Status ClickHouseWriter::DeleteUncommitted(int64_t run_id) {
  const std::string committed =
      absl::StrCat("(SELECT batch FROM batches WHERE run_id = ", run_id, ")");
  bool any = false;
  for (const auto& [table, column] :
       {std::pair("intervals", "batch"), std::pair("interval_detail", "batch"),
        std::pair("orders", "batch"), std::pair("counters", "version"),
        std::pair("run_notes", "version"), std::pair("budget_breaches", "version"),
        std::pair("intervals_minute", "batch")}) {
    absl::StatusOr<std::string> n =
        QueryRetrying(absl::StrCat("SELECT count() FROM ", table, " WHERE run_id = ", run_id,
                                   " AND ", column, " NOT IN ", committed));
    if (!n.ok()) return n.status();
    if (ParseCount(*n) == 0) continue;
    any = true;
    absl::StatusOr<std::string> r =
        QueryRetrying(absl::StrCat("ALTER TABLE ", table, " DELETE WHERE run_id = ", run_id,
                                   " AND ", column, " NOT IN ", committed));
    if (!r.ok()) return r.status();
  }
  if (!any) return absl::OkStatus();
  // Mutations run in the background: wait for them (they only touch this
  // run's few uncommitted rows), so that nothing reads them after a resume.
  const int64_t deadline_ns = MonotonicNs() + 60'000'000'000;
  while (MonotonicNs() < deadline_ns) {
    absl::StatusOr<std::string> n =
        QueryRetrying(absl::StrCat("SELECT count() FROM system.mutations WHERE database = ",
                                   ClickHouseQuote(options_.database), " AND is_done = 0"));
    if (!n.ok()) return n.status();
    if (ParseCount(*n) == 0) return absl::OkStatus();
    if (stop_.load(std::memory_order_relaxed)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::UnavailableError(
      absl::StrCat(location_, ": deleting an uncommitted batch did not finish in time"));
}

absl::StatusOr<int64_t> ClickHouseWriter::ResumeRun(int64_t run_id) {
  absl::StatusOr<RunState> state = LookupRun(run_id);
  if (!state.ok()) return state.status();
  if (!state->exists) {
    return absl::NotFoundError(absl::StrCat(location_, ": no run ", run_id, " to resume"));
  }
  if (absl::Status s = DeleteUncommitted(run_id); !s.ok()) return s;
  rollup_run_ = -1;  // read again from what the store kept
  if (absl::Status s = EstablishGeneration(run_id); !s.ok()) return s;
  const int64_t restarts = state->counters[std::string(CounterName(Counter::kRestarts))] + 1;
  const uint64_t batch = generation_ << 32;
  RowBinaryWriter counter;
  counter.I64(run_id);
  counter.Str(CounterName(Counter::kRestarts));
  counter.U64(batch);
  counter.I64(restarts);
  counter.EndRow();
  if (absl::Status s = InsertIdempotent("counters", counter); !s.ok()) return s;
  RowBinaryWriter marker;
  marker.I64(run_id);
  marker.U64(batch);
  marker.U64(1);
  marker.I64(RealtimeNs());
  marker.EndRow();
  if (absl::Status s = InsertOnce(run_id, "batches", "batch", batch, marker); !s.ok()) return s;
  absl::StatusOr<std::string> horizon = QueryRetrying(
      absl::StrCat("SELECT count(), max(first_utc_ns) FROM orders WHERE run_id = ", run_id,
                   " FORMAT TabSeparated"));
  if (!horizon.ok()) return horizon.status();
  resume_horizon_ns_.reset();
  if (std::vector<std::vector<std::string>> t = ParseTsv(*horizon);
      !t.empty() && t[0].size() == 2 && t[0][0] != "0") {
    resume_horizon_ns_ = TsvInt(t[0][1]);
  }
  absl::StatusOr<std::string> anchor =
      QueryRetrying(absl::StrCat("SELECT max(tsc) FROM anchors WHERE run_id = ", run_id));
  if (!anchor.ok()) return anchor.status();
  newest_anchor_tsc_ = ParseCount(*anchor);
  if (absl::Status s = LoadDictionaries(run_id); !s.ok()) return s;
  return restarts;
}

absl::Status ClickHouseWriter::EstablishGeneration(int64_t run_id) {
  // A generation above every batch id the run has seen (committed or not).
  absl::StatusOr<std::string> top = QueryRetrying(absl::StrCat(
      "SELECT greatest(greatest((SELECT max(batch) FROM batches WHERE run_id = ", run_id,
      "), (SELECT max(version) FROM counters WHERE run_id = ", run_id,
      ")), greatest((SELECT max(batch) FROM intervals WHERE run_id = ", run_id,
      "), (SELECT max(batch) FROM orders WHERE run_id = ", run_id, ")))"));
  if (!top.ok()) return top.status();
  generation_ = (ParseCount(*top) >> 32) + 1;
  sequence_ = 0;
  batches_run_ = run_id;
  return absl::OkStatus();
}

absl::Status ClickHouseWriter::LoadDictionaries(int64_t run_id) {
  names_.clear();
  stages_.clear();
  for (const auto& [sql, map] :
       {std::pair("SELECT DISTINCT name, name_id FROM names WHERE run_id = ", &names_),
        std::pair("SELECT DISTINCT name, stage_id FROM stages WHERE run_id = ", &stages_)}) {
    absl::StatusOr<std::string> rows =
        QueryRetrying(absl::StrCat(sql, run_id, " FORMAT TabSeparated"));
    if (!rows.ok()) return rows.status();
    for (const std::vector<std::string>& f : ParseTsv(*rows)) {
      if (f.size() == 2) (*map)[f[0]] = static_cast<uint32_t>(TsvInt(f[1]).value_or(0));
    }
  }
  dictionaries_run_ = run_id;
  return absl::OkStatus();
}

absl::Status ClickHouseWriter::LoadRollupState(int64_t run_id) {
  absl::StatusOr<std::optional<int64_t>> rolled;
  if (absl::Status s = Retrying([&]() -> absl::Status {
        rolled = ReadRolledThrough(client_, options_.database, run_id);
        return rolled.status();
      });
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> newest = QueryRetrying(absl::StrCat(
      "SELECT count(), min(start_utc_ns), max(start_utc_ns) FROM intervals WHERE run_id = ", run_id,
      " FORMAT TabSeparated"));
  if (!newest.ok()) return newest.status();
  oldest_interval_ns_.reset();
  newest_interval_ns_.reset();
  if (std::vector<std::vector<std::string>> t = ParseTsv(*newest);
      !t.empty() && t[0].size() == 3 && t[0][0] != "0") {
    oldest_interval_ns_ = TsvInt(t[0][1]);
    newest_interval_ns_ = TsvInt(t[0][2]);
  }
  rolled_through_ns_ = *rolled;
  rollup_run_ = run_id;
  return absl::OkStatus();
}

absl::Status ClickHouseWriter::RollClosedMinutes(int64_t run_id, bool all) {
  // Intervals that straddle minutes cannot be rolled up per minute.
  if (kRollupNs % interval_ns_ != 0 || !newest_interval_ns_.has_value()) {
    return absl::OkStatus();
  }
  // One minute of grace before a minute is rolled: late deltas of a rolled
  // minute are rollup delta rows (Write), correct but more rows.
  const int64_t until = RollupMinuteOf(*newest_interval_ns_) + (all ? kRollupNs : -kRollupNs);
  if (rolled_through_ns_.has_value() && until <= *rolled_through_ns_) return absl::OkStatus();
  // The first roll waits for a minute that holds intervals.
  if (!rolled_through_ns_.has_value() &&
      (!oldest_interval_ns_.has_value() || until <= RollupMinuteOf(*oldest_interval_ns_))) {
    return absl::OkStatus();
  }
  const uint64_t batch = (generation_ << 32) | ++sequence_;
  RowBinaryWriter rows;
  if (absl::Status s = Retrying([&]() -> absl::Status {
        rows.Clear();
        return BuildMinuteRollup(client_, options_.database, run_id, rolled_through_ns_, until,
                                 batch, &rows);
      });
      !s.ok()) {
    return s;
  }
  if (absl::Status s = InsertOnce(run_id, "intervals_minute", "batch", batch, rows); !s.ok()) {
    return s;
  }
  RowBinaryWriter marker;
  marker.I64(run_id);
  marker.U64(batch);
  marker.U64(rows.rows());
  marker.I64(RealtimeNs());
  marker.EndRow();
  if (absl::Status s = InsertOnce(run_id, "batches", "batch", batch, marker); !s.ok()) return s;
  rolled_through_ns_ = until;
  return absl::OkStatus();
}

uint32_t ClickHouseWriter::NameId(const std::string& name, RowBinaryWriter& new_names) {
  if (auto it = names_.find(name); it != names_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace(name, id);
  new_names.I64(dictionaries_run_);
  new_names.U32(id);
  new_names.Str(name);
  new_names.EndRow();
  return id;
}

uint32_t ClickHouseWriter::StageId(const std::string& name, StageKind kind,
                                   RowBinaryWriter& new_stages) {
  if (auto it = stages_.find(name); it != stages_.end()) return it->second;
  const auto id = static_cast<uint32_t>(stages_.size());
  stages_.emplace(name, id);
  new_stages.I64(dictionaries_run_);
  new_stages.U32(id);
  new_stages.Str(name);
  new_stages.Str(StageKindName(kind));
  new_stages.EndRow();
  return id;
}

// The rows of one Write(), table by table, built before any is sent.
struct ClickHouseWriter::BatchRows {
  RowBinaryWriter new_names, new_stages;
  RowBinaryWriter orders, intervals, late_rollup, detail;
  RowBinaryWriter processes, threads, tags, counters, stage_stats, cores, anchors;
  RowBinaryWriter run_notes, budget_breaches, stage_clocks;
  bool run_row_changed = false;  // insert a new version of the runs row
};

// Orders of a resumed run that may be stored already: their committed
// (id, instance) -> first TSC, and each id's highest instance.
// The orders stored before the resume that a batch may send again.
struct ClickHouseWriter::StoredOrders {
  std::set<std::pair<uint64_t, uint32_t>> taken;         // (order id, instance)
  std::set<std::pair<uint64_t, uint64_t>> id_first_tsc;  // (order id, first TSC): one order
  std::map<uint64_t, uint32_t> top_instance;
};

absl::Status ClickHouseWriter::PrepareRun(int64_t run_id) {
  if (run_ == nullptr || run_->run_id != run_id) {
    if (absl::Status s = LoadRun(run_id); !s.ok()) return s;
    if (run_ == nullptr) {
      return absl::NotFoundError(absl::StrCat(location_, ": no run ", run_id));
    }
  }
  if (dictionaries_run_ != run_id) {
    if (absl::Status s = LoadDictionaries(run_id); !s.ok()) return s;
  }
  // A run this writer neither began nor resumed: batch ids above its own.
  if (batches_run_ != run_id) {
    if (absl::Status s = EstablishGeneration(run_id); !s.ok()) return s;
  }
  if (rollup_run_ != run_id) {
    if (absl::Status s = LoadRollupState(run_id); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<ClickHouseWriter::StoredOrders> ClickHouseWriter::ReadStoredOrders(
    int64_t run_id, const std::vector<OrderDetail>& orders) {
  StoredOrders stored;
  if (!resume_horizon_ns_.has_value()) return stored;
  int64_t lo = std::numeric_limits<int64_t>::max();
  for (const OrderDetail& o : orders) {
    if (o.first_utc_ns <= *resume_horizon_ns_) lo = std::min(lo, o.first_utc_ns);
  }
  if (lo == std::numeric_limits<int64_t>::max()) return stored;
  absl::StatusOr<std::string> rows = QueryRetrying(
      absl::StrCat("SELECT order_id, instance, first_tsc FROM orders WHERE run_id = ", run_id,
                   " AND first_utc_ns >= ", lo, " AND first_utc_ns <= ", *resume_horizon_ns_,
                   " FORMAT TabSeparated"));
  if (!rows.ok()) return rows.status();
  for (const std::vector<std::string>& f : ParseTsv(*rows)) {
    uint64_t id = 0, tsc = 0;
    uint32_t instance = 0;
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &id) || !absl::SimpleAtoi(f[1], &instance) ||
        !absl::SimpleAtoi(f[2], &tsc)) {
      continue;
    }
    stored.taken.emplace(id, instance);
    stored.id_first_tsc.emplace(id, tsc);
    stored.top_instance[id] = std::max(stored.top_instance[id], instance);
  }
  return stored;
}

absl::Status ClickHouseWriter::AppendOrders(int64_t run_id, uint64_t batch,
                                            const std::vector<OrderDetail>& orders,
                                            StoredOrders& stored_orders, uint64_t* already_stored,
                                            std::map<int64_t, uint64_t>* kept_by_interval,
                                            BatchRows* rows) {
  auto& top_instance = stored_orders.top_instance;
  auto& kept = *kept_by_interval;
  RowBinaryWriter& order_rows = rows->orders;
  RowBinaryWriter& new_names = rows->new_names;
  RowBinaryWriter& new_stages = rows->new_stages;
  std::string blob;
  std::vector<uint32_t> name_ids;
  for (const OrderDetail& o : orders) {
    uint32_t instance = o.instance;
    if (stored_orders.id_first_tsc.contains({o.order_id, o.first_tsc})) {
      ++*already_stored;  // stored before the restart, under whichever instance it got
      continue;
    }
    if (stored_orders.taken.contains({o.order_id, o.instance})) {
      // The id was used again, and the collector no longer remembered it.
      instance = ++top_instance[o.order_id];
    }
    name_ids.clear();
    for (const StampDetail& sd : o.stamps) name_ids.push_back(NameId(sd.tag, new_names));
    blob.clear();
    PackOrderDetail(o, name_ids, &blob);
    RowBinaryWriter& b = order_rows;
    b.I64(run_id);
    b.I64(o.first_utc_ns);
    b.U64(o.order_id);
    b.U32(instance);
    b.U64(batch);
    b.Nullable(o.parent_order_id);
    b.U64(o.first_tsc);
    b.Nullable(o.total_ns.has_value() ? std::optional<int64_t>(RoundNs(*o.total_ns))
                                      : std::nullopt);
    b.U8(o.complete ? 1 : 0);
    b.Str(o.missing);
    b.U32(o.flags());
    b.Length(o.samples.size());
    for (const SampleDetail& sd : o.samples) {
      b.U32(StageId(sd.stage, StageKindOfName(sd.stage), new_stages));
    }
    b.Length(o.samples.size());
    for (const SampleDetail& sd : o.samples) b.I64(RoundNs(sd.latency_ns));
    b.Length(o.samples.size());
    for (const SampleDetail& sd : o.samples) b.U32(sd.flags);
    b.Str(blob);
    b.EndRow();
    ++kept[IntervalStart(o.first_utc_ns, interval_ns_)];
  }
  return absl::OkStatus();
}

void ClickHouseWriter::AppendIntervals(int64_t run_id, uint64_t batch,
                                       const std::vector<IntervalDelta>& intervals,
                                       const std::vector<IntervalOrders>& interval_orders,
                                       const std::map<int64_t, uint64_t>& kept, BatchRows* rows) {
  RowBinaryWriter& new_stages = rows->new_stages;
  // intervals: one delta row each (readers sum them).
  RowBinaryWriter& interval_rows = rows->intervals;
  for (const IntervalDelta& d : intervals) {
    RowBinaryWriter& b = interval_rows;
    b.I64(run_id);
    b.U32(StageId(d.stage, d.kind, new_stages));
    b.I64(d.start_utc_ns);
    b.U64(batch);
    b.Str(d.stage);
    b.U64(d.samples_all);
    b.U64(d.histogram.count());
    for (uint64_t f : d.flag_counts) b.U64(f);
    const bool any = d.histogram.count() > 0;
    b.Nullable(any ? std::optional<double>(d.histogram.min()) : std::nullopt);
    b.Nullable(any ? std::optional<double>(d.histogram.max()) : std::nullopt);
    b.F64(any ? d.histogram.sum() : 0.0);
    b.Str(d.histogram.Encode());
    b.EndRow();
  }

  // A delta of a minute rolled up already: also a delta row of the rollup,
  // in this batch (committed with it).
  RowBinaryWriter& late_rollup_rows = rows->late_rollup;
  for (const IntervalDelta& d : intervals) {
    if (!rolled_through_ns_.has_value() || d.start_utc_ns >= *rolled_through_ns_) continue;
    // The row's percentiles need the dense form; late deltas are rare.
    Histogram late;
    late.Merge(d.histogram);
    AppendRollupRow(run_id, StageId(d.stage, d.kind, new_stages), RollupMinuteOf(d.start_utc_ns),
                    batch, d.stage, d.samples_all, d.flag_counts, late, &late_rollup_rows);
  }

  // interval_detail: orders counted by the sink, detail kept by us.
  std::map<int64_t, std::pair<uint64_t, uint64_t>> per_interval;  // (orders, kept)
  for (const IntervalOrders& io : interval_orders) {
    if (io.orders > 0) per_interval[io.start_utc_ns].first += io.orders;
  }
  for (const auto& [start, n] : kept) per_interval[start].second += n;
  RowBinaryWriter& detail_rows = rows->detail;
  for (const auto& [start, n] : per_interval) {
    detail_rows.I64(run_id);
    detail_rows.I64(start);
    detail_rows.U64(batch);
    detail_rows.U64(n.first);
    detail_rows.U64(n.second);
    detail_rows.U8(0);
    detail_rows.EndRow();
  }
}

void ClickHouseWriter::AppendSnapshotTables(int64_t run_id, uint64_t batch,
                                            const Snapshot& snapshot, BatchRows* rows) {
  RowBinaryWriter& processes = rows->processes;
  RowBinaryWriter& threads = rows->threads;
  RowBinaryWriter& tags = rows->tags;
  RowBinaryWriter& counters = rows->counters;
  for (const ProcessRow& p : snapshot.processes) {
    processes.I64(run_id);
    processes.U32(p.process_id);
    processes.U64(batch);
    processes.U32(p.pid);
    processes.U64(p.start_ticks);
    processes.Str(p.name);
    processes.Str(p.segment);
    processes.Nullable(std::optional<int64_t>(p.first_seen_utc_ns));
    processes.Nullable(p.exited_utc_ns);
    processes.U64(p.tags_rejected);
    processes.U64(p.threads_without_slot);
    processes.U64(p.slotless_dropped);
    processes.EndRow();
  }
  for (const ThreadRow& t : snapshot.threads) {
    threads.I64(run_id);
    threads.U32(t.process_id);
    threads.U32(t.slot);
    threads.U64(t.generation);
    threads.U64(batch);
    threads.U32(t.tid);
    threads.Str(t.name);
    threads.U64(t.drained);
    threads.U64(t.dropped);
    threads.EndRow();
  }
  for (const TagRow& t : snapshot.tags) {
    tags.I64(run_id);
    tags.U32(t.process_id);
    tags.U32(t.tag_id);
    tags.U64(batch);
    tags.Str(t.name);
    tags.EndRow();
  }
  for (const auto& [name, value] : snapshot.counters) {
    // `restarts` is counted by ResumeRun in the store itself.
    if (name == CounterName(Counter::kRestarts)) continue;
    counters.I64(run_id);
    counters.Str(name);
    counters.U64(batch);
    counters.I64(value);
    counters.EndRow();
  }
  for (const RunNote& note : snapshot.notes) {
    rows->run_notes.I64(run_id);
    rows->run_notes.Str(note.kind);
    rows->run_notes.U64(batch);
    rows->run_notes.Str(note.text);
    rows->run_notes.EndRow();
  }
  for (const StageClockRow& c : snapshot.stage_clocks) {
    rows->stage_clocks.I64(run_id);
    rows->stage_clocks.Str(c.stage);
    rows->stage_clocks.Str(c.side);
    rows->stage_clocks.Str(c.clock);
    rows->stage_clocks.U64(batch);
    rows->stage_clocks.EndRow();
  }
  for (const BudgetBreachRow& b : snapshot.budget_breaches) {
    RowBinaryWriter& w = rows->budget_breaches;
    w.I64(run_id);
    w.Str(b.budget);
    w.I64(b.interval_start_utc_ns);
    w.U64(batch);
    w.Str(b.stage);
    w.Str(b.stat);
    w.I64(b.limit_ns);
    w.F64(b.measured_ns);
    w.I64(b.samples);
    w.EndRow();
  }
}

void ClickHouseWriter::AppendSnapshotStatistics(int64_t run_id, uint64_t batch,
                                                const Snapshot& snapshot, BatchRows* rows) {
  RowBinaryWriter& stage_stats = rows->stage_stats;
  RowBinaryWriter& cores = rows->cores;
  RowBinaryWriter& anchors = rows->anchors;
  bool& run_row_changed = rows->run_row_changed;
  for (const StageStatsRow& r : snapshot.stages) {
    RowBinaryWriter& b = stage_stats;
    b.I64(run_id);
    b.Str(r.stage);
    b.U64(batch);
    b.I32(static_cast<int32_t>(r.position));
    b.U64(static_cast<uint64_t>(r.count));
    for (const auto* v :
         {&r.min_ns, &r.max_ns, &r.mean_ns, &r.p50_ns, &r.p90_ns, &r.p99_ns, &r.p999_ns}) {
      b.Nullable(Finite(*v));
    }
    for (int64_t f : r.flag_counts) b.U64(static_cast<uint64_t>(f));
    b.U8(r.include_flagged ? 1 : 0);
    b.U64(static_cast<uint64_t>(r.samples_all.value_or(0)));
    b.Nullable(Finite(r.uncertainty_ns));
    b.EndRow();
  }
  for (const CoreRow& c : snapshot.cores) {
    cores.I64(run_id);
    cores.I32(c.cpu);
    cores.I64(c.measured_utc_ns);
    cores.F64(c.offset_ns);
    cores.F64(c.bound_ns);
    cores.U8(c.consistent ? 1 : 0);
    cores.EndRow();
  }
  uint64_t newest = newest_anchor_tsc_;
  for (const AnchorRow& a : snapshot.anchors) {
    if (a.tsc <= newest_anchor_tsc_) continue;  // stored
    anchors.I64(run_id);
    anchors.U64(a.tsc);
    anchors.I64(a.utc_ns);
    anchors.EndRow();
    newest = std::max(newest, a.tsc);
  }
  newest_anchor_tsc_ = newest;
  if (snapshot.utc_drift_ppm.has_value() && snapshot.utc_drift_ppm != run_->utc_drift_ppm) {
    run_->utc_drift_ppm = snapshot.utc_drift_ppm;
    run_row_changed = true;
  }
  if (snapshot.pipeline.has_value() && (snapshot.pipeline->first != run_->meta.pipeline ||
                                        snapshot.pipeline->second != run_->meta.pipeline_learned)) {
    run_->meta.pipeline = snapshot.pipeline->first;
    run_->meta.pipeline_learned = snapshot.pipeline->second;
    run_row_changed = true;
  }
}

absl::Status ClickHouseWriter::InsertBatch(int64_t run_id, uint64_t batch, BatchRows& rows) {
  // Dictionaries first (rows refer to them), the counters last but one, the
  // commit record last.
  absl::Status s = InsertIdempotent("names", rows.new_names);
  if (s.ok()) s = InsertIdempotent("stages", rows.new_stages);
  if (s.ok()) s = InsertOnce(run_id, "intervals", "batch", batch, rows.intervals);
  if (s.ok()) s = InsertOnce(run_id, "intervals_minute", "batch", batch, rows.late_rollup);
  if (s.ok()) s = InsertOnce(run_id, "interval_detail", "batch", batch, rows.detail);
  if (s.ok()) s = InsertOnce(run_id, "orders", "batch", batch, rows.orders);
  if (s.ok()) s = InsertIdempotent("processes", rows.processes);
  if (s.ok()) s = InsertIdempotent("threads", rows.threads);
  if (s.ok()) s = InsertIdempotent("tags", rows.tags);
  if (s.ok()) s = InsertIdempotent("stage_stats", rows.stage_stats);
  if (s.ok()) s = InsertIdempotent("cores", rows.cores);
  if (s.ok()) s = InsertIdempotent("anchors", rows.anchors);
  if (s.ok() && rows.run_row_changed) s = InsertRunRow(batch);
  if (s.ok()) s = InsertIdempotent("run_notes", rows.run_notes);
  if (s.ok()) s = InsertIdempotent("budget_breaches", rows.budget_breaches);
  if (s.ok()) s = InsertIdempotent("stage_clocks", rows.stage_clocks);
  if (s.ok()) s = InsertIdempotent("counters", rows.counters);
  if (!s.ok()) return s;
  RowBinaryWriter marker;
  marker.I64(run_id);
  marker.U64(batch);
  marker.U64(rows.orders.rows() + rows.intervals.rows() + rows.detail.rows() +
             rows.late_rollup.rows());
  marker.I64(RealtimeNs());
  marker.EndRow();
  return InsertOnce(run_id, "batches", "batch", batch, marker);
}

absl::Status ClickHouseWriter::Write(int64_t run_id, const std::vector<IntervalDelta>& intervals,
                                     const std::vector<IntervalOrders>& interval_orders,
                                     const std::vector<OrderDetail>& orders,
                                     const Snapshot* snapshot, uint64_t* already_stored) {
  if (absl::Status s = PrepareRun(run_id); !s.ok()) return s;
  // Minutes closed by the batches before this one: rolled up first, so
  // that this batch's deltas of a rolled minute go in as rollup deltas.
  if (absl::Status s = RollClosedMinutes(run_id, false); !s.ok()) return s;
  const uint64_t batch = (generation_ << 32) | ++sequence_;
  BatchRows rows;
  // Orders that may be stored already (re-emitted after a restart).
  absl::StatusOr<StoredOrders> stored = ReadStoredOrders(run_id, orders);
  if (!stored.ok()) return stored.status();
  std::map<int64_t, uint64_t> kept;  // orders with detail, by interval start
  if (absl::Status s = AppendOrders(run_id, batch, orders, *stored, already_stored, &kept, &rows);
      !s.ok()) {
    return s;
  }
  AppendIntervals(run_id, batch, intervals, interval_orders, kept, &rows);
  // The snapshot (versioned rows: the newest version is the value).
  if (snapshot != nullptr) {
    AppendSnapshotTables(run_id, batch, *snapshot, &rows);
    AppendSnapshotStatistics(run_id, batch, *snapshot, &rows);
  }
  if (absl::Status s = InsertBatch(run_id, batch, rows); !s.ok()) {
    // Ids handed out in this batch may not be stored: ask the store again.
    dictionaries_run_ = -1;
    return s;
  }
  for (const IntervalDelta& d : intervals) {
    oldest_interval_ns_ = std::min(oldest_interval_ns_.value_or(d.start_utc_ns), d.start_utc_ns);
    newest_interval_ns_ = std::max(newest_interval_ns_.value_or(d.start_utc_ns), d.start_utc_ns);
  }
  return absl::OkStatus();
}

absl::Status ClickHouseWriter::DeleteDetail(int64_t run_id, std::optional<int64_t> from,
                                            int64_t before, uint64_t* deleted) {
  before = IntervalStart(before, interval_ns_);
  const std::string range =
      absl::StrCat("run_id = ", run_id, from ? absl::StrCat(" AND first_utc_ns >= ", *from) : "",
                   " AND first_utc_ns < ", before);
  absl::StatusOr<std::string> n =
      QueryRetrying(absl::StrCat("SELECT count() FROM orders WHERE ", range));
  if (!n.ok()) return n.status();
  const uint64_t count = ParseCount(*n);
  const uint64_t batch = (generation_ << 32) | ++sequence_;
  absl::StatusOr<std::string> mark = QueryRetrying(absl::StrCat(
      "INSERT INTO interval_detail SELECT run_id, start_utc_ns, toUInt64(", batch,
      "), toUInt64(0), toUInt64(0), toUInt8(1) FROM interval_detail WHERE run_id = ", run_id,
      from ? absl::StrCat(" AND start_utc_ns >= ", *from) : "", " AND start_utc_ns < ", before,
      " GROUP BY run_id, start_utc_ns HAVING max(detail_deleted) = 0"));
  if (!mark.ok()) return mark.status();
  RowBinaryWriter marker;
  marker.I64(run_id);
  marker.U64(batch);
  marker.U64(0);
  marker.I64(RealtimeNs());
  marker.EndRow();
  if (absl::Status s = InsertOnce(run_id, "batches", "batch", batch, marker); !s.ok()) return s;
  if (count > 0) {
    absl::StatusOr<std::string> d =
        QueryRetrying(absl::StrCat("ALTER TABLE orders DELETE WHERE ", range));
    if (!d.ok()) return d.status();
  }
  *deleted += count;
  return absl::OkStatus();
}

absl::Status ClickHouseWriter::DeleteForSize(int64_t run_id, uint64_t max_bytes,
                                             uint64_t* deleted) {
  absl::StatusOr<std::string> bytes = QueryRetrying(
      absl::StrCat("SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = ",
                   ClickHouseQuote(options_.database)));
  if (!bytes.ok()) return bytes.status();
  if (ParseCount(*bytes) > max_bytes) {
    // The oldest hour of detail left (one step per call: the deletion
    // runs in the background and the size shrinks after it).
    absl::StatusOr<std::string> oldest = QueryRetrying(
        absl::StrCat("SELECT count(), min(first_utc_ns) FROM orders WHERE run_id = ", run_id,
                     " FORMAT TabSeparated"));
    if (!oldest.ok()) return oldest.status();
    std::vector<std::vector<std::string>> t = ParseTsv(*oldest);
    if (!t.empty() && t[0].size() == 2 && t[0][0] != "0") {
      const int64_t until = TsvInt(t[0][1]).value_or(0) + 3'600'000'000'000;
      if (absl::Status s = DeleteDetail(run_id, std::nullopt, until, deleted); !s.ok()) return s;
      detail_deleted_before_ns_ = std::max(detail_deleted_before_ns_.value_or(INT64_MIN),
                                           IntervalStart(until, interval_ns_));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ClickHouseWriter::ApplyRetention(
    int64_t run_id, std::optional<int64_t> detail_before_utc_ns, uint64_t max_bytes,
    std::optional<int64_t> intervals_before_utc_ns) {
  uint64_t deleted = 0;
  if (batches_run_ != run_id) {
    if (absl::Status s = EstablishGeneration(run_id); !s.ok()) return s;
  }
  if (detail_before_utc_ns.has_value() &&
      (!detail_deleted_before_ns_.has_value() ||
       *detail_before_utc_ns - *detail_deleted_before_ns_ >= options_.retention_step_ns)) {
    if (absl::Status s =
            DeleteDetail(run_id, detail_deleted_before_ns_, *detail_before_utc_ns, &deleted);
        !s.ok()) {
      return s;
    }
    detail_deleted_before_ns_ = IntervalStart(*detail_before_utc_ns, interval_ns_);
  }
  if (max_bytes > 0) {
    if (absl::Status s = DeleteForSize(run_id, max_bytes, &deleted); !s.ok()) return s;
  }
  if (intervals_before_utc_ns.has_value() &&
      (!intervals_deleted_before_ns_.has_value() ||
       *intervals_before_utc_ns - *intervals_deleted_before_ns_ >= options_.retention_step_ns)) {
    const int64_t before = IntervalStart(*intervals_before_utc_ns, interval_ns_);
    absl::StatusOr<std::string> n = QueryRetrying(absl::StrCat(
        "SELECT count() FROM orders WHERE run_id = ", run_id, " AND first_utc_ns < ", before));
    if (!n.ok()) return n.status();
    for (const auto& [table, column] :
         {std::pair("orders", "first_utc_ns"), std::pair("intervals", "start_utc_ns"),
          std::pair("interval_detail", "start_utc_ns")}) {
      absl::StatusOr<std::string> r =
          QueryRetrying(absl::StrCat("ALTER TABLE ", table, " DELETE WHERE run_id = ", run_id,
                                     " AND ", column, " < ", before));
      if (!r.ok()) return r.status();
    }
    // The rollup keeps the minute that holds `before` whole (a reader of
    // that minute sees the deleted part of it too, at most one minute).
    absl::StatusOr<std::string> r =
        QueryRetrying(absl::StrCat("ALTER TABLE intervals_minute DELETE WHERE run_id = ", run_id,
                                   " AND start_utc_ns < ", RollupMinuteOf(before)));
    if (!r.ok()) return r.status();
    deleted += ParseCount(*n);
    intervals_deleted_before_ns_ = before;
  }
  return deleted;
}

absl::Status ClickHouseWriter::EndRun(int64_t run_id, int64_t ended_utc_ns) {
  if (run_ == nullptr || run_->run_id != run_id) {
    if (absl::Status s = LoadRun(run_id); !s.ok()) return s;
    if (run_ == nullptr) return absl::NotFoundError(absl::StrCat(location_, ": no run ", run_id));
  }
  run_->ended_utc_ns = ended_utc_ns;
  if (batches_run_ != run_id) {
    if (absl::Status s = EstablishGeneration(run_id); !s.ok()) return s;
  }
  // The run's last minutes: nothing more comes (a resume's late deltas of
  // them become rollup deltas).
  if (rollup_run_ != run_id) {
    if (absl::Status s = LoadRollupState(run_id); !s.ok()) return s;
  }
  if (absl::Status s = RollClosedMinutes(run_id, true); !s.ok()) return s;
  return InsertRunRow((generation_ << 32) | ++sequence_);
}

}  // namespace ticktrace::store
