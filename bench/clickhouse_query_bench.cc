// clickhouse_query_bench: the viewer's window query on ClickHouse — p50
// and p99 per stage per minute over 8 hours of intervals — through the
// viewer's StoreReader (store/clickhouse/clickhouse_reader.cc), on a
// clickhouse-server of its own (tests/support/clickhouse_server.h).
//
// The store: one run, 7 stages, 1-s intervals for --hours (28 800 per stage
// for 8 h), each interval's histogram that of --samples latencies (log-normal
// around 2 us, a different seed every interval, so buckets vary), as the
// collector's writer would have written them (one row per stage and
// interval), every batch committed, and the per-minute rollup (schema 2,
// store/clickhouse/clickhouse_rollup.h) of every minute but the newest, as
// the writer keeps it. The query is StoreReader::Intervals(run, all stages,
// the whole span, 60-s buckets): the reader takes one rollup row per stage
// and minute, and the newest minute's 60 interval rows. Timed --repeat times
// on a fresh reader each; the first (cold) and the median are printed.
//
//   clickhouse_query_bench [--hours 8] [--samples 200] [--repeat 5]
//
// Prints TARGET|... lines for bench/run_all.sh; prints "skipped: <reason>"
// and exits 0 when clickhouse-server is not installed.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bench_util.h"
#include "store/clickhouse/row_binary.h"
#include "store/clickhouse/clickhouse_rollup.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "ticktrace/store/histogram.h"
#include "store/clickhouse/http_client.h"
#include "tests/support/clickhouse_server.h"
#include "ticktrace/store/reader.h"


namespace {

using ticktrace::testing::ClickHouseServer;
namespace store = ticktrace::store;
namespace tb = ticktrace::bench;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'796'025'600'000'000'000;  // 2026-11-30T08:00:00Z
constexpr int kStages = 7;
const char* const kStageNames[kStages] = {"md->strat", "strat->risk", "risk->gw", "gw->ack",
                                          "risk",      "encode",      "total"};

struct Options {
  int hours = 8;
  int samples = 200;
  int repeat = 5;
};

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "clickhouse_query_bench: %s\n", what.c_str());
  return 1;
}

// Reads the flags, each followed by its value, into `o`; an error for an
// unknown flag or a value that is not positive.
absl::Status ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--hours") o->hours = v;
    else if (flag == "--samples") o->samples = v;
    else if (flag == "--repeat") o->repeat = v;
    else return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
  }
  if (o->hours <= 0 || o->samples <= 0 || o->repeat <= 0) {
    return absl::InvalidArgumentError("values must be positive");
  }
  return absl::OkStatus();
}

// The run and its stages.
absl::Status InsertRunAndStages(store::HttpClient& client, const std::string& db) {
  const std::string run = absl::StrCat(
      "INSERT INTO runs (run_id, claim, version, session, host, started_utc_ns, tsc_hz, "
      "calibration_source, anchor_tsc, anchor_utc_ns, environment, settings, pipeline, "
      "pipeline_learned, interval_ns, detail) VALUES (1, 1, 1, 'bench', 'bench', ", kT0,
      ", 1e9, 'bench', 0, ", kT0, ", '[]', '{}', 'md,strat,risk,gw,ack', 0, ", kSecond,
      ", 'all')");
  std::string stages = "INSERT INTO stages (run_id, stage_id, name, kind) VALUES ";
  for (int s = 0; s < kStages; ++s) {
    absl::StrAppend(&stages, s ? ", " : "", "(1, ", s, ", '", kStageNames[s], "', 'hop')");
  }
  for (const std::string& sql : {run, stages}) {
    if (absl::StatusOr<std::string> r = client.Query(sql, db); !r.ok()) return r.status();
  }
  return absl::OkStatus();
}

// A pool of histograms (one per interval would take minutes to build):
// 997 different ones, used in turn, so neighbouring intervals differ.
struct HistogramPool {
  std::vector<std::string> encoded;
  std::vector<store::Histogram> histograms;
};

HistogramPool MakeHistogramPool(int samples) {
  HistogramPool pool;
  std::mt19937_64 rng(42);
  for (int k = 0; k < 997; ++k) {
    std::lognormal_distribution<double> latency(std::log(2000.0 + 10 * (k % 50)), 0.6);
    store::Histogram h;
    for (int i = 0; i < samples; ++i) h.Add(std::round(latency(rng)));
    pool.encoded.push_back(h.Encode());
    pool.histograms.push_back(std::move(h));
  }
  return pool;
}

// Every stage's row of every interval, as the collector's writer writes them,
// and every interval's detail row; inserted an hour at a time. Adds the
// histograms' encoded size to `histogram_bytes`.
absl::Status InsertIntervals(store::HttpClient& client, const std::string& db, const Options& o,
                             int64_t intervals, const HistogramPool& pool,
                             size_t* histogram_bytes) {
  store::RowBinaryWriter rows;
  store::RowBinaryWriter details;
  size_t next = 0;
  for (int64_t i = 0; i < intervals; ++i) {
    const int64_t start = kT0 + i * kSecond;
    for (int s = 0; s < kStages; ++s) {
      const store::Histogram& h = pool.histograms[next % pool.encoded.size()];
      const std::string& encoded = pool.encoded[next % pool.encoded.size()];
      ++next;
      *histogram_bytes += encoded.size();
      rows.I64(1);
      rows.U32(uint32_t(s));
      rows.I64(start);
      rows.U64(uint64_t(i / 1000));  // batch
      rows.Str(kStageNames[s]);
      rows.U64(h.count());  // samples_all
      rows.U64(h.count());  // count
      for (size_t f = 0; f < store::kFlagNames.size(); ++f) rows.U64(0);
      rows.Nullable(std::optional<double>(h.min()));
      rows.Nullable(std::optional<double>(h.max()));
      rows.F64(h.sum());
      rows.Str(encoded);
      rows.EndRow();
    }
    details.I64(1);
    details.I64(start);
    details.U64(uint64_t(i / 1000));
    details.U64(uint64_t(o.samples));
    details.U64(uint64_t(o.samples));
    details.U8(0);
    details.EndRow();
    if ((i + 1) % 3600 == 0 || i + 1 == intervals) {
      for (auto [sql, b] : {std::pair{"INSERT INTO intervals FORMAT RowBinary", &rows},
                            std::pair{"INSERT INTO interval_detail FORMAT RowBinary", &details}}) {
        if (absl::Status st = client.Insert(sql, b->bytes(), db); !st.ok()) return st;
        b->Clear();
      }
    }
  }
  return absl::OkStatus();
}

// Every batch committed (its row in batches), as the writer leaves them.
absl::Status InsertCommittedBatches(store::HttpClient& client, const std::string& db,
                                    int64_t intervals) {
  store::RowBinaryWriter committed;
  for (int64_t b = 0; b <= (intervals - 1) / 1000; ++b) {
    committed.I64(1);
    committed.U64(uint64_t(b));
    committed.U64(0);
    committed.I64(kT0);
    committed.EndRow();
  }
  return client.Insert("INSERT INTO batches FORMAT RowBinary", committed.bytes(), db);
}

// As a long-running store would be: its parts merged.
absl::Status MergeParts(store::HttpClient& client, const std::string& db) {
  for (const char* t : {"intervals", "interval_detail", "intervals_minute"}) {
    if (absl::StatusOr<std::string> r = client.Query(absl::StrCat("OPTIMIZE TABLE ", t, " FINAL"),
                                                     db);
        !r.ok()) {
      return r.status();
    }
  }
  return absl::OkStatus();
}

// What building the store took, for its two lines.
struct StoreFigures {
  size_t histogram_bytes = 0;
  double build_ms = 0;   // everything, from the run's row to the merged parts
  double rollup_ms = 0;  // the per-minute rollup alone
};

// The store the query reads: one run of `intervals` 1-s intervals per stage,
// their batches committed, rolled up per minute and merged.
absl::StatusOr<StoreFigures> BuildStore(store::HttpClient& client, const std::string& db,
                                        const Options& o, int64_t intervals) {
  StoreFigures f;
  const auto build_begin = std::chrono::steady_clock::now();
  if (absl::Status st = InsertRunAndStages(client, db); !st.ok()) return st;
  const HistogramPool pool = MakeHistogramPool(o.samples);
  if (absl::Status st = InsertIntervals(client, db, o, intervals, pool, &f.histogram_bytes);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = InsertCommittedBatches(client, db, intervals); !st.ok()) return st;
  // The per-minute rollup (schema 2) as the writer keeps it: every minute
  // but the newest rolled up (store/clickhouse/clickhouse_rollup.h; the writer rolls
  // the closed minutes as it goes, a migration all at once like this).
  const auto rollup_begin = std::chrono::steady_clock::now();
  if (absl::Status st = store::BackfillMinuteRollup(client, db); !st.ok()) return st;
  f.rollup_ms = Ms(std::chrono::steady_clock::now() - rollup_begin);
  if (absl::Status st = MergeParts(client, db); !st.ok()) return st;
  f.build_ms = Ms(std::chrono::steady_clock::now() - build_begin);
  return f;
}

void PrintStore(const Options& o, int64_t intervals, const StoreFigures& f) {
  std::printf("store: 1 run, %d stages x %lld 1-s intervals (%d h), %d samples per interval, "
              "histograms %.1f MB (%.0f B each); built in %.1f s\n",
              kStages, static_cast<long long>(intervals), o.hours, o.samples,
              double(f.histogram_bytes) / 1e6,
              double(f.histogram_bytes) / double(intervals * kStages), f.build_ms / 1000);
  std::printf("per-minute rollup of the whole store (a schema-1 store's migration): %.1f s\n",
              f.rollup_ms / 1000);
}

// The timed query: one time per repeat, and the buckets of its answer.
struct QueryTimes {
  std::vector<double> ms;
  size_t buckets = 0;
};

// StoreReader::Intervals(run, all stages, the whole span, 60-s buckets),
// --repeat times, each on a fresh reader. An error when a bucket is not 60
// intervals of --samples with p50 and p99 set.
absl::StatusOr<QueryTimes> TimeWindowQuery(const std::string& uri, const Options& o,
                                           int64_t intervals) {
  const store::TimeWindow window{kT0, kT0 + intervals * kSecond};
  QueryTimes q;
  for (int r = 0; r < o.repeat; ++r) {
    absl::StatusOr<std::unique_ptr<store::StoreReader>> reader = store::StoreReader::Open(uri);
    if (!reader.ok()) return reader.status();
    const auto begin = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<store::IntervalRow>> rows_out =
        (*reader)->Intervals(1, std::nullopt, window, 60 * kSecond);
    q.ms.push_back(Ms(std::chrono::steady_clock::now() - begin));
    if (!rows_out.ok()) return rows_out.status();
    q.buckets = rows_out->size();
    // Every bucket: 60 intervals of o.samples, p50 and p99 set.
    for (const store::IntervalRow& b : *rows_out) {
      if (b.count != 60 * int64_t(o.samples) || !b.p50_ns || !b.p99_ns) {
        return absl::InternalError(absl::StrCat("bucket ", b.start_utc_ns, " of ", b.stage,
                                                ": count ", b.count, ", expected ",
                                                60 * o.samples));
      }
    }
  }
  return q;
}

// Where the time goes: the server's part alone (the rows read, and the
// rows summed and grouped as the reader asks), without any merging here.
absl::Status PrintServerOnly(store::HttpClient& client, const std::string& db) {
  for (const char* sql :
       {"SELECT histogram FROM intervals WHERE run_id = 1 FORMAT RowBinary",
        "SELECT stage_id, start_utc_ns - start_utc_ns % 60000000000 AS b, sum(samples_all), "
        "groupArray(histogram) FROM intervals WHERE run_id = 1 GROUP BY stage_id, b "
        "FORMAT RowBinary",
        "SELECT stage_id, start_utc_ns, sum(samples_all), groupArray(histogram) FROM "
        "intervals_minute WHERE run_id = 1 GROUP BY stage_id, start_utc_ns FORMAT RowBinary"}) {
    const auto begin = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> r = client.Query(sql, db);
    if (!r.ok()) return r.status();
    std::printf("server only, %s: %.1f ms, %.1f MB\n",
                std::strstr(sql, "intervals_minute") ? "the per-minute rollup"
                : std::strstr(sql, "GROUP BY")       ? "intervals grouped by stage and minute"
                                                     : "every interval row",
                Ms(std::chrono::steady_clock::now() - begin), double(r->size()) / 1e6);
  }
  return absl::OkStatus();
}

// The query's line (median, first and slowest) and its TARGET line.
void PrintQuery(const Options& o, int64_t intervals, QueryTimes q) {
  const double first = q.ms.front();
  std::sort(q.ms.begin(), q.ms.end());
  const double median = q.ms[q.ms.size() / 2];
  std::printf("p50/p99 per stage per minute over %d h (%zu buckets of 60 intervals, %lld interval "
              "rows): median %.1f ms, first %.1f ms, slowest %.1f ms (%d runs)\n",
              o.hours, q.buckets, static_cast<long long>(intervals * kStages), median, first,
              q.ms.back(), o.repeat);
  tb::PrintTarget("store",
                  absl::StrCat("ClickHouse window query: p50/p99 per stage per minute over ",
                               o.hours, " h of intervals (clickhouse_query_bench)"),
                  tb::Fmt("%.0f ms", median), "< 200 ms", median < 200,
                  absl::StrCat(kStages, " stages x ", intervals, " intervals, median of ",
                               o.repeat, tb::Fmt(", first %.0f ms", first)));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (absl::Status st = ParseFlags(argc, argv, &o); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  if (auto why = ClickHouseServer::SkipReason()) {
    std::printf("skipped: %s\n", why->c_str());
    return 0;
  }
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> server = ClickHouseServer::Start();
  if (!server.ok()) return Fail(std::string(server.status().message()));
  const std::string db = "tt_query_bench";
  store::HttpClient client(store::HttpClientOptions::FromEnvironment((*server)->host(),
                                                                     (*server)->http_port()));
  if (absl::Status s = store::EnsureClickHouseSchema(client, db); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const int64_t intervals = int64_t(o.hours) * 3600;

  const absl::StatusOr<StoreFigures> built = BuildStore(client, db, o, intervals);
  if (!built.ok()) return Fail(std::string(built.status().message()));
  PrintStore(o, intervals, *built);

  absl::StatusOr<QueryTimes> query = TimeWindowQuery((*server)->Uri(db), o, intervals);
  if (!query.ok()) return Fail(std::string(query.status().message()));
  if (absl::Status s = PrintServerOnly(client, db); !s.ok()) return Fail(std::string(s.message()));
  const size_t expected = size_t(kStages) * size_t(intervals / 60);
  if (query->buckets != expected) {
    return Fail(absl::StrCat(query->buckets, " buckets, expected ", expected));
  }
  PrintQuery(o, intervals, *std::move(query));
  return 0;
}
