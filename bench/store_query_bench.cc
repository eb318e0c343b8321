// How fast the viewer's StoreReader answers from a trading day's store:
// percentiles of every stage for a 10-minute window of an 8-hour store
// (target < 100 ms), and the 10 slowest orders of the whole run, with and
// without a stage (target < 1 s on 10 M orders), both without a latency
// index.
//
// The store is made once through the store library's SqliteWriter and cached
// in /tmp (made again when missing or incomplete): 8 hours of 1 s intervals,
// 7 stages (the demo's: two hops in the feed, a hop to the strategy, its
// `decide` span, two hops to the gateway's send, and total), N orders evenly
// spread, log-normal hops with a rare 100x tail, every order kept
// (--detail all). Then each query runs --repeat times on a warm page cache;
// the median and the first run are printed. With --verify (default) a
// brute-force ranking over every order checks FindSlowest and times the scan
// that the interval walk avoids.
//
//   store_query_bench [--orders N] [--hours H] [--repeat R] [--no-verify]
//                     [--store PATH]
//
// Prints TARGET|... lines for bench/run_all.sh.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "bench_util.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/reader.h"

namespace {

namespace store = ticktrace::store;
namespace tb = ticktrace::bench;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'800'000'000LL * kSecond;  // an interval boundary

struct Options {
  int64_t orders = 10'000'000;
  int hours = 8;
  int repeat = 5;
  bool verify = true;
  std::string path;
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The demo's pipeline, as stages in order.
const char* const kStages[] = {"md_rx->md_decoded", "md_decoded->strat_in", "decide",
                               "strat_in->strat_out", "strat_out->gw_in", "gw_in->gw_sent",
                               "total"};
constexpr int kStageCount = 7;

// One order of the demo's shape: 6 stamps and the decide span, 7 samples.
store::OrderDetail MakeOrder(uint64_t id, int64_t first_utc_ns, std::mt19937_64& rng) {
  std::lognormal_distribution<double> hop(6.5, 0.6);  // ~700 ns, long tail
  std::uniform_int_distribution<int> tail(0, 9999);
  const auto latency = [&] {
    double v = std::round(hop(rng));
    if (tail(rng) == 0) v *= 100;
    return v;
  };
  store::OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = first_utc_ns;
  o.first_tsc = 1'000'000'000 + id * 5'000;
  o.first_tsc_utc_ns = first_utc_ns;
  o.complete = true;
  struct Hop {
    const char* from;
    const char* to;
    uint32_t process_from, process_to;
    int cpu_from, cpu_to;
  };
  static const Hop kHops[] = {{"md_rx", "md_decoded", 1, 1, 0, 0},
                              {"md_decoded", "strat_in", 1, 2, 0, 1},
                              {"strat_in", "strat_out", 2, 2, 1, 1},
                              {"strat_out", "gw_in", 2, 3, 1, 2},
                              {"gw_in", "gw_sent", 3, 3, 2, 2}};
  int64_t t_ns = 0;  // tsc_hz 1e9: ticks are ns
  o.stamps.push_back({.tag = "md_rx", .process_id = 1, .tid = 101, .cpu = 0,
                      .tsc = o.first_tsc, .utc_ns = first_utc_ns});
  for (int h = 0; h < 5; ++h) {
    const Hop& hp = kHops[h];
    const double v = latency();
    const uint32_t flags = hp.cpu_from != hp.cpu_to ? store::kFlagCrossCore : 0;
    o.samples.push_back({.stage = std::string(hp.from) + "->" + hp.to,
                         .start_utc_ns = first_utc_ns + t_ns, .latency_ns = v,
                         .process_begin = static_cast<int32_t>(hp.process_from),
                         .process_end = static_cast<int32_t>(hp.process_to),
                         .cpu_begin = hp.cpu_from, .cpu_end = hp.cpu_to, .flags = flags});
    t_ns += static_cast<int64_t>(v);
    o.stamps.push_back({.tag = hp.to, .process_id = hp.process_to, .tid = 100 + hp.process_to,
                        .cpu = hp.cpu_to, .tsc = o.first_tsc + static_cast<uint64_t>(t_ns),
                        .utc_ns = first_utc_ns + t_ns});
    if (h == 1) {  // the strategy's decide span, right after strat_in
      const double d = latency() + 1000;
      o.samples.push_back({.stage = "decide", .start_utc_ns = first_utc_ns + t_ns,
                           .latency_ns = d, .process_begin = 2, .process_end = 2,
                           .cpu_begin = 1, .cpu_end = 1});
      o.stamps.push_back({.tag = "decide", .is_span = true, .process_id = 2, .tid = 102,
                          .cpu = 1, .cpu_end = 1, .tsc = o.first_tsc + static_cast<uint64_t>(t_ns),
                          .utc_ns = first_utc_ns + t_ns, .duration_ns = d});
    }
  }
  o.total_ns = static_cast<double>(t_ns);
  o.samples.push_back({.stage = "total", .start_utc_ns = first_utc_ns,
                       .latency_ns = static_cast<double>(t_ns), .process_begin = 1,
                       .process_end = 3, .cpu_begin = 0, .cpu_end = 2,
                       .flags = store::kFlagCrossCore});
  return o;
}

// True when `path` holds a finished store of this shape.
bool CachedStoreIsComplete(const std::string& path, int64_t orders) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  sqlite3_stmt* s = nullptr;
  bool ok = false;
  if (sqlite3_prepare_v2(db,
                         "SELECT ended_utc_ns IS NOT NULL, (SELECT value FROM meta WHERE key = "
                         "'bench_orders') FROM runs WHERE run_id = 1",
                         -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    ok = sqlite3_column_int(s, 0) == 1 && sqlite3_column_int64(s, 1) == orders;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return ok;
}

bool Fail(const absl::Status& s) {
  if (s.ok()) return false;
  std::fprintf(stderr, "store_query_bench: %s\n", std::string(s.message()).c_str());
  return true;
}

// Reads the flags into `o` and names the cached store after its size when
// --store is not given. Prints the usage line, or what is wrong, and returns
// false (main exits 2) on a flag it does not know or a count that is not
// positive.
bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--orders" && has_value) {
      o->orders = std::atoll(argv[++i]);
    } else if (a == "--hours" && has_value) {
      o->hours = std::atoi(argv[++i]);
    } else if (a == "--repeat" && has_value) {
      o->repeat = std::atoi(argv[++i]);
    } else if (a == "--store" && has_value) {
      o->path = argv[++i];
    } else if (a == "--no-verify") {
      o->verify = false;
    } else {
      std::fprintf(stderr,
                   "usage: store_query_bench [--orders N] [--hours H] [--repeat R] "
                   "[--no-verify] [--store PATH]\n");
      return false;
    }
  }
  if (o->orders <= 0 || o->hours <= 0 || o->repeat <= 0) {
    std::fprintf(stderr, "store_query_bench: --orders, --hours and --repeat must be positive\n");
    return false;
  }
  if (o->path.empty()) {
    o->path = "/tmp/ticktrace_store_query_bench_" + std::to_string(o->orders) + "_" +
              std::to_string(o->hours) + "h.db";
  }
  return true;
}

store::RunMeta BenchRunMeta() {
  store::RunMeta meta;
  meta.session = "store_query_bench";
  meta.host = "bench";
  meta.started_utc_ns = kT0;
  meta.tsc_hz = 1e9;
  meta.calibration_source = "bench";
  meta.pipeline = "md_rx,md_decoded,strat_in,strat_out,gw_in,gw_sent";
  return meta;
}

constexpr int64_t kBatchNs = 30 * kSecond;  // one Write per 30 s of orders

// One Write's worth of orders and the statistics of their intervals.
struct StoreBatch {
  std::vector<store::IntervalDelta> deltas;
  std::vector<store::IntervalOrders> interval_orders;
  std::vector<store::OrderDetail> orders;
};

// Adds the samples of `d` to the statistics of its stages in the interval
// that starts at `interval`.
void AddSamples(const store::OrderDetail& d, int64_t interval,
                std::map<std::pair<int, int64_t>, store::IntervalDelta>* deltas) {
  for (const store::SampleDetail& s : d.samples) {
    const int stage = static_cast<int>(
        std::find_if(std::begin(kStages), std::end(kStages),
                     [&](const char* n) { return s.stage == n; }) -
        std::begin(kStages));
    store::IntervalDelta& delta = (*deltas)[{stage, interval}];
    delta.stage = s.stage;
    delta.kind = s.stage == "total"    ? store::StageKind::kTotal
                 : s.stage == "decide" ? store::StageKind::kSpan
                                       : store::StageKind::kTransition;
    delta.start_utc_ns = interval;
    ++delta.samples_all;
    if (s.flags & store::kFlagCrossCore) ++delta.flag_counts[2];
    delta.histogram.Add(s.latency_ns);
  }
}

// The orders from number `*next` on (one every `step_ns`) that start before
// the end of the batch beginning `batch_start` ns into the run; advances
// `*next` past them.
StoreBatch MakeBatch(const Options& o, int64_t batch_start, double step_ns, int64_t* next,
                     std::mt19937_64& rng) {
  std::map<std::pair<int, int64_t>, store::IntervalDelta> deltas;
  std::map<int64_t, uint64_t> per_interval;
  StoreBatch batch;
  for (; *next < o.orders; ++*next) {
    const int64_t at = static_cast<int64_t>(static_cast<double>(*next) * step_ns);
    if (at >= batch_start + kBatchNs) break;
    store::OrderDetail d = MakeOrder(static_cast<uint64_t>(*next + 1), kT0 + at, rng);
    const int64_t interval = kT0 + at / kSecond * kSecond;
    ++per_interval[interval];
    AddSamples(d, interval, &deltas);
    batch.orders.push_back(std::move(d));
  }
  batch.deltas.reserve(deltas.size());
  for (auto& [k, v] : deltas) batch.deltas.push_back(std::move(v));
  for (const auto& [start, n] : per_interval) batch.interval_orders.push_back({start, n, 0});
  return batch;
}

// Every order into `run`, one Write per 30 s of orders (the first with the
// stages), with a progress line on stderr for every hour of them.
absl::Status WriteOrders(store::SqliteWriter& writer, int64_t run, const Options& o,
                         std::chrono::steady_clock::time_point begin) {
  store::Snapshot snap;
  for (int i = 0; i < kStageCount; ++i) {
    store::StageStatsRow r;
    r.stage = kStages[i];
    r.position = i;
    snap.stages.push_back(r);
  }
  const int64_t span_ns = static_cast<int64_t>(o.hours) * 3600 * kSecond;
  const double step_ns = static_cast<double>(span_ns) / static_cast<double>(o.orders);
  std::mt19937_64 rng(13);
  int64_t next = 0;
  uint64_t already = 0;
  for (int64_t batch_start = 0; batch_start < span_ns; batch_start += kBatchNs) {
    const StoreBatch b = MakeBatch(o, batch_start, step_ns, &next, rng);
    const absl::Status s = writer.Write(run, b.deltas, b.interval_orders, b.orders,
                                        batch_start == 0 ? &snap : nullptr, &already);
    if (!s.ok()) return s;
    if (batch_start % (3600 * kSecond) == 0) {
      std::fprintf(stderr, "  %lld orders, %.0f s\n", static_cast<long long>(next),
                   Seconds(std::chrono::steady_clock::now() - begin));
    }
  }
  return absl::OkStatus();
}

// Marks the cache as complete for this size (not a ticktrace meta key).
void MarkStoreComplete(const Options& o) {
  sqlite3* db = nullptr;
  sqlite3_open(o.path.c_str(), &db);
  const std::string mark = "INSERT OR REPLACE INTO meta(key, value) VALUES('bench_orders', '" +
                           std::to_string(o.orders) + "')";
  sqlite3_exec(db, mark.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

// Makes the store at o.path (removing what is there) through SqliteWriter and
// prints its rate and size; 1 after saying what failed.
int MakeStore(const Options& o) {
  for (const char* suffix : {"", "-wal", "-shm", ".schema1.bak"}) {
    ::unlink((o.path + suffix).c_str());
  }
  std::fprintf(stderr, "making %s: %lld orders over %d h ...\n", o.path.c_str(),
               static_cast<long long>(o.orders), o.hours);
  const auto begin = std::chrono::steady_clock::now();
  auto w = store::SqliteWriter::OpenOrCreate(o.path);
  if (Fail(w.status())) return 1;
  auto run = (*w)->BeginRun(BenchRunMeta());
  if (Fail(run.status())) return 1;
  if (Fail(WriteOrders(**w, *run, o, begin))) return 1;
  const int64_t span_ns = static_cast<int64_t>(o.hours) * 3600 * kSecond;
  if (Fail((*w)->EndRun(*run, kT0 + span_ns))) return 1;
  w->reset();
  MarkStoreComplete(o);
  const double took = Seconds(std::chrono::steady_clock::now() - begin);
  struct stat st;
  ::stat(o.path.c_str(), &st);
  std::printf("store made: %lld orders, %lld samples in %.1f s (%.2f M samples/s through "
              "SqliteWriter, generation included), %.2f GB, %.1f B per stamp\n",
              static_cast<long long>(o.orders), static_cast<long long>(o.orders * kStageCount),
              took, static_cast<double>(o.orders * kStageCount) / took / 1e6,
              static_cast<double>(st.st_size) / 1e9,
              static_cast<double>(st.st_size) / static_cast<double>(o.orders * 7));
  return 0;
}

// Runs `f` `repeat` times; returns (first, median) in ms.
template <typename F>
std::pair<double, double> Time(int repeat, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto t = std::chrono::steady_clock::now();
    f();
    ms.push_back(Seconds(std::chrono::steady_clock::now() - t) * 1e3);
  }
  const double first = ms.front();
  std::sort(ms.begin(), ms.end());
  return {first, ms[ms.size() / 2]};
}

// Every stage's percentiles over `window`, then over the whole run, each
// timed --repeat times, with a line each. The window's median in ms, or
// nullopt after saying what failed.
std::optional<double> TimeWindowStats(store::StoreReader& r, int64_t run_id, const Options& o,
                                      const store::TimeWindow& window) {
  size_t stages = 0;
  absl::Status status;
  const auto [w_first, w_median] = Time(o.repeat, [&] {
    auto s = r.StageWindowStats(run_id, window);
    if (!s.ok()) status = s.status();
    else stages = s->size();
  });
  if (Fail(status)) return std::nullopt;
  std::printf("window stats, 10 min (%zu stages x 600 intervals): median %.1f ms, first %.1f ms\n",
              stages, w_median, w_first);
  const auto [run_first, run_median] = Time(o.repeat, [&] {
    auto s = r.StageWindowStats(run_id, store::TimeWindow{});
    if (!s.ok()) status = s.status();
  });
  if (Fail(status)) return std::nullopt;
  std::printf("window stats, whole run (%d intervals per stage): median %.1f ms, first %.1f ms\n",
              o.hours * 3600, run_median, run_first);
  return w_median;
}

// FindSlowest's answers and times (medians in ms) for the TARGET lines and
// the brute-force check.
struct Slowest {
  std::vector<store::RankedOrder> total_top, stage_top;
  double total_median_ms = 0, stage_median_ms = 0;
};

// The 10 slowest orders of the whole run by total and by `stage`, and by
// `stage` in `window`, each timed --repeat times, then a line each. Nullopt
// after saying what failed.
std::optional<Slowest> TimeFindSlowest(store::StoreReader& r, int64_t run_id, const Options& o,
                                       const store::TimeWindow& window, const std::string& stage) {
  Slowest out;
  absl::Status status;
  const auto [t_first, t_median] = Time(o.repeat, [&] {
    auto s = r.FindSlowest(run_id, "total", 10);
    if (!s.ok()) status = s.status();
    else out.total_top = *s;
  });
  if (Fail(status)) return std::nullopt;
  const auto [s_first, s_median] = Time(o.repeat, [&] {
    auto s = r.FindSlowest(run_id, stage, 10);
    if (!s.ok()) status = s.status();
    else out.stage_top = *s;
  });
  if (Fail(status)) return std::nullopt;
  const auto [ws_first, ws_median] = Time(o.repeat, [&] {
    auto s = r.FindSlowest(run_id, stage, 10, window);
    if (!s.ok()) status = s.status();
  });
  if (Fail(status)) return std::nullopt;
  std::printf("slowest 10, whole run, total: median %.1f ms, first %.1f ms (slowest: order %lld, "
              "%.0f ns)\n",
              t_median, t_first, static_cast<long long>(out.total_top.front().order_id),
              out.total_top.front().latency_ns);
  std::printf("slowest 10, whole run, stage %s: median %.1f ms, first %.1f ms\n", stage.c_str(),
              s_median, s_first);
  std::printf("slowest 10, 10-min window, stage %s: median %.1f ms, first %.1f ms\n",
              stage.c_str(), ws_median, ws_first);
  out.total_median_ms = t_median;
  out.stage_median_ms = s_median;
  return out;
}

// The brute-force ranking: every order's samples of total and of one stage,
// the slowest of each kept as (-latency_ns, order_id).
struct BruteForce {
  std::map<std::string, int64_t> ids;                                // stage name -> stage_id
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> best;  // stage -> (-ns, id)
};

// Every order's samples, ranked by brute force: what the walk avoids.
BruteForce ScanEveryOrder(const std::string& path, int64_t run_id, const std::string& stage) {
  BruteForce bf;
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT stage_id, name FROM stages WHERE run_id = ?", -1, &q, nullptr);
  sqlite3_bind_int64(q, 1, run_id);
  while (sqlite3_step(q) == SQLITE_ROW) {
    bf.ids[reinterpret_cast<const char*>(sqlite3_column_text(q, 1))] = sqlite3_column_int64(q, 0);
  }
  sqlite3_finalize(q);
  sqlite3_prepare_v2(db, "SELECT order_id, samples FROM orders WHERE run_id = ?", -1, &q,
                     nullptr);
  sqlite3_bind_int64(q, 1, run_id);
  while (sqlite3_step(q) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
    auto cells = store::ParseSampleCells(
        std::string_view(text, static_cast<size_t>(sqlite3_column_bytes(q, 1))));
    if (!cells.ok()) continue;
    for (const store::SampleCell& c : *cells) {
      if (c.stage_id != bf.ids["total"] && c.stage_id != bf.ids[stage]) continue;
      auto& v = bf.best[c.stage_id];
      v.emplace_back(-c.latency_ns, sqlite3_column_int64(q, 0));
      if (v.size() > 64) {
        std::nth_element(v.begin(), v.begin() + 10, v.end());
        v.resize(10);
      }
    }
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return bf;
}

// True when FindSlowest's two top-10s are the brute force's, order for order.
bool SameAsBruteForce(BruteForce* bf, const std::string& stage, const Slowest& slowest) {
  bool same = true;
  for (const auto& [name, got] : {std::pair(std::string("total"), slowest.total_top),
                                  std::pair(stage, slowest.stage_top)}) {
    auto& v = bf->best[bf->ids[name]];
    std::sort(v.begin(), v.end());
    v.resize(std::min<size_t>(v.size(), 10));
    same = same && v.size() == got.size();
    for (size_t i = 0; same && i < v.size(); ++i) {
      same = v[i].second == got[i].order_id &&
             static_cast<double>(-v[i].first) == got[i].latency_ns;
    }
  }
  return same;
}

// Checks FindSlowest against the brute force and times the scan, with a line;
// `*verified` says the outcome for the TARGET line. False when they differ.
bool VerifyRankings(const Options& o, int64_t run_id, const std::string& stage,
                    const Slowest& slowest, std::string* verified) {
  const auto t = std::chrono::steady_clock::now();
  BruteForce bf = ScanEveryOrder(o.path, run_id, stage);
  const double scan_ms = Seconds(std::chrono::steady_clock::now() - t) * 1e3;
  const bool same = SameAsBruteForce(&bf, stage, slowest);
  *verified = same ? "equal to a brute-force ranking" : "DIFFERS from a brute-force ranking";
  std::printf("brute force over every order (one full scan, both rankings): %.0f ms; interval "
              "walk %s\n",
              scan_ms, verified->c_str());
  return same;
}

void PrintTargets(const Options& o, double window_median_ms, const Slowest& slowest,
                  const std::string& verified, const std::string& stage) {
  const std::string n = tb::Fmt("%.1f M orders", static_cast<double>(o.orders) / 1e6);
  tb::PrintTarget("store",
                  absl::StrCat("window query: every stage's percentiles, 10 min of an ", o.hours,
                               " h store (store_query_bench)"),
                  tb::Fmt("%.1f ms", window_median_ms), "< 100 ms", window_median_ms < 100,
                  absl::StrCat(n, ", median of ", o.repeat));
  tb::PrintTarget("store", "orders --slowest 10, whole run (store_query_bench)",
                  tb::Fmt("%.0f ms", slowest.total_median_ms), "< 1 s",
                  slowest.total_median_ms < 1000,
                  absl::StrCat(n, ", no latency index, ", verified, "; with --stage ", stage,
                               tb::Fmt(": %.0f ms", slowest.stage_median_ms)));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  if (!CachedStoreIsComplete(o.path, o.orders)) {
    if (const int rc = MakeStore(o); rc != 0) return rc;
  } else {
    std::printf("store cached: %s\n", o.path.c_str());
  }

  auto reader = store::StoreReader::Open(o.path);
  if (Fail(reader.status())) return 1;
  store::StoreReader& r = **reader;
  auto run = r.GetRun(std::nullopt);
  if (Fail(run.status())) return 1;
  const int64_t run_id = run->run_id;
  const int64_t span_ns = static_cast<int64_t>(o.hours) * 3600 * kSecond;
  std::printf("store: %s, %lld orders, %d h of 1 s intervals x %d stages, warm page cache\n",
              o.path.c_str(), static_cast<long long>(o.orders), o.hours, kStageCount);

  // 10 minutes from the middle of the run.
  const store::TimeWindow window{kT0 + span_ns / 2, kT0 + span_ns / 2 + 600 * kSecond};
  const std::optional<double> window_median_ms = TimeWindowStats(r, run_id, o, window);
  if (!window_median_ms) return 1;
  const std::string stage = "strat_out->gw_in";
  const std::optional<Slowest> slowest = TimeFindSlowest(r, run_id, o, window, stage);
  if (!slowest) return 1;
  std::string verified = "not verified (--no-verify)";
  if (o.verify && !VerifyRankings(o, run_id, stage, *slowest, &verified)) return 1;
  PrintTargets(o, *window_median_ms, *slowest, verified, stage);
  return 0;
}
