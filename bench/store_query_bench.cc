// How fast the viewer's StoreReader answers from a trading day's store (issue
// 13's targets): percentiles of every stage for a 10-minute window of an
// 8-hour store (target < 100 ms), and the 10 slowest orders of the whole run,
// with and without a stage (target < 1 s on 10 M orders), both without a
// latency index.
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
#include <random>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/reader.h"

namespace {

namespace store = ticktrace::store;

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

int MakeStore(const Options& o) {
  for (const char* suffix : {"", "-wal", "-shm", ".schema1.bak"}) {
    ::unlink((o.path + suffix).c_str());
  }
  std::fprintf(stderr, "making %s: %lld orders over %d h ...\n", o.path.c_str(),
               static_cast<long long>(o.orders), o.hours);
  const auto begin = std::chrono::steady_clock::now();
  auto w = store::SqliteWriter::OpenOrCreate(o.path);
  if (!w.ok()) {
    std::fprintf(stderr, "store_query_bench: %s\n", std::string(w.status().message()).c_str());
    return 1;
  }
  store::RunMeta meta;
  meta.session = "store_query_bench";
  meta.host = "bench";
  meta.started_utc_ns = kT0;
  meta.tsc_hz = 1e9;
  meta.calibration_source = "bench";
  meta.pipeline = "md_rx,md_decoded,strat_in,strat_out,gw_in,gw_sent";
  auto run = (*w)->BeginRun(meta);
  if (!run.ok()) {
    std::fprintf(stderr, "store_query_bench: %s\n", std::string(run.status().message()).c_str());
    return 1;
  }
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
  constexpr int64_t kBatchNs = 30 * kSecond;  // one Write per 30 s of orders
  int64_t next = 0;
  uint64_t already = 0;
  for (int64_t batch_start = 0; batch_start < span_ns; batch_start += kBatchNs) {
    std::map<std::pair<int, int64_t>, store::IntervalDelta> deltas;
    std::map<int64_t, uint64_t> per_interval;
    std::vector<store::OrderDetail> orders;
    for (; next < o.orders; ++next) {
      const int64_t at = static_cast<int64_t>(static_cast<double>(next) * step_ns);
      if (at >= batch_start + kBatchNs) break;
      store::OrderDetail d = MakeOrder(static_cast<uint64_t>(next + 1), kT0 + at, rng);
      const int64_t interval = kT0 + at / kSecond * kSecond;
      ++per_interval[interval];
      for (const store::SampleDetail& s : d.samples) {
        const int stage = static_cast<int>(
            std::find_if(std::begin(kStages), std::end(kStages),
                         [&](const char* n) { return s.stage == n; }) -
            std::begin(kStages));
        store::IntervalDelta& delta = deltas[{stage, interval}];
        delta.stage = s.stage;
        delta.kind = s.stage == "total"    ? store::StageKind::kTotal
                     : s.stage == "decide" ? store::StageKind::kSpan
                                           : store::StageKind::kTransition;
        delta.start_utc_ns = interval;
        ++delta.samples_all;
        if (s.flags & store::kFlagCrossCore) ++delta.flag_counts[2];
        delta.histogram.Add(s.latency_ns);
      }
      orders.push_back(std::move(d));
    }
    std::vector<store::IntervalDelta> d;
    d.reserve(deltas.size());
    for (auto& [k, v] : deltas) d.push_back(std::move(v));
    std::vector<store::IntervalOrders> io;
    for (const auto& [start, n] : per_interval) io.push_back({start, n, 0});
    const absl::Status s =
        (*w)->Write(*run, d, io, orders, batch_start == 0 ? &snap : nullptr, &already);
    if (!s.ok()) {
      std::fprintf(stderr, "store_query_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    if (batch_start % (3600 * kSecond) == 0) {
      std::fprintf(stderr, "  %lld orders, %.0f s\n", static_cast<long long>(next),
                   Seconds(std::chrono::steady_clock::now() - begin));
    }
  }
  if (absl::Status s = (*w)->EndRun(*run, kT0 + span_ns); !s.ok()) {
    std::fprintf(stderr, "store_query_bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  w->reset();
  // Marks the cache as complete for this size (not a ticktrace meta key).
  sqlite3* db = nullptr;
  sqlite3_open(o.path.c_str(), &db);
  const std::string mark = "INSERT OR REPLACE INTO meta(key, value) VALUES('bench_orders', '" +
                           std::to_string(o.orders) + "')";
  sqlite3_exec(db, mark.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
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

bool Fail(const absl::Status& s) {
  if (s.ok()) return false;
  std::fprintf(stderr, "store_query_bench: %s\n", std::string(s.message()).c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--orders" && has_value) {
      o.orders = std::atoll(argv[++i]);
    } else if (a == "--hours" && has_value) {
      o.hours = std::atoi(argv[++i]);
    } else if (a == "--repeat" && has_value) {
      o.repeat = std::atoi(argv[++i]);
    } else if (a == "--store" && has_value) {
      o.path = argv[++i];
    } else if (a == "--no-verify") {
      o.verify = false;
    } else {
      std::fprintf(stderr,
                   "usage: store_query_bench [--orders N] [--hours H] [--repeat R] "
                   "[--no-verify] [--store PATH]\n");
      return 2;
    }
  }
  if (o.orders <= 0 || o.hours <= 0 || o.repeat <= 0) {
    std::fprintf(stderr, "store_query_bench: --orders, --hours and --repeat must be positive\n");
    return 2;
  }
  if (o.path.empty()) {
    o.path = "/tmp/ticktrace_store_query_bench_" + std::to_string(o.orders) + "_" +
             std::to_string(o.hours) + "h.db";
  }
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
  size_t stages = 0;
  absl::Status status;
  const auto [w_first, w_median] = Time(o.repeat, [&] {
    auto s = r.StageWindowStats(run_id, window);
    if (!s.ok()) status = s.status();
    else stages = s->size();
  });
  if (Fail(status)) return 1;
  std::printf("window stats, 10 min (%zu stages x 600 intervals): median %.1f ms, first %.1f ms\n",
              stages, w_median, w_first);
  const auto [run_first, run_median] = Time(o.repeat, [&] {
    auto s = r.StageWindowStats(run_id, store::TimeWindow{});
    if (!s.ok()) status = s.status();
  });
  if (Fail(status)) return 1;
  std::printf("window stats, whole run (%d intervals per stage): median %.1f ms, first %.1f ms\n",
              o.hours * 3600, run_median, run_first);

  std::vector<store::RankedOrder> total_top, stage_top;
  const std::string stage = "strat_out->gw_in";
  const auto [t_first, t_median] = Time(o.repeat, [&] {
    auto s = r.FindSlowest(run_id, "total", 10);
    if (!s.ok()) status = s.status();
    else total_top = *s;
  });
  if (Fail(status)) return 1;
  const auto [s_first, s_median] = Time(o.repeat, [&] {
    auto s = r.FindSlowest(run_id, stage, 10);
    if (!s.ok()) status = s.status();
    else stage_top = *s;
  });
  if (Fail(status)) return 1;
  const auto [ws_first, ws_median] = Time(o.repeat, [&] {
    auto s = r.FindSlowest(run_id, stage, 10, window);
    if (!s.ok()) status = s.status();
  });
  if (Fail(status)) return 1;
  std::printf("slowest 10, whole run, total: median %.1f ms, first %.1f ms (slowest: order %lld, "
              "%.0f ns)\n",
              t_median, t_first, static_cast<long long>(total_top.front().order_id),
              total_top.front().latency_ns);
  std::printf("slowest 10, whole run, stage %s: median %.1f ms, first %.1f ms\n", stage.c_str(),
              s_median, s_first);
  std::printf("slowest 10, 10-min window, stage %s: median %.1f ms, first %.1f ms\n",
              stage.c_str(), ws_median, ws_first);

  std::string verified = "not verified (--no-verify)";
  if (o.verify) {
    // Every order's samples, ranked by brute force: what the walk avoids.
    const auto t = std::chrono::steady_clock::now();
    sqlite3* db = nullptr;
    sqlite3_open_v2(o.path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(db, "SELECT stage_id, name FROM stages WHERE run_id = ?", -1, &q, nullptr);
    sqlite3_bind_int64(q, 1, run_id);
    std::map<std::string, int64_t> ids;
    while (sqlite3_step(q) == SQLITE_ROW) {
      ids[reinterpret_cast<const char*>(sqlite3_column_text(q, 1))] = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> best;  // stage -> (-ns, id)
    sqlite3_prepare_v2(db, "SELECT order_id, samples FROM orders WHERE run_id = ?", -1, &q,
                       nullptr);
    sqlite3_bind_int64(q, 1, run_id);
    while (sqlite3_step(q) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
      auto cells = store::ParseSampleCells(
          std::string_view(text, static_cast<size_t>(sqlite3_column_bytes(q, 1))));
      if (!cells.ok()) continue;
      for (const store::SampleCell& c : *cells) {
        if (c.stage_id != ids["total"] && c.stage_id != ids[stage]) continue;
        auto& v = best[c.stage_id];
        v.emplace_back(-c.latency_ns, sqlite3_column_int64(q, 0));
        if (v.size() > 64) {
          std::nth_element(v.begin(), v.begin() + 10, v.end());
          v.resize(10);
        }
      }
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    const double scan_ms = Seconds(std::chrono::steady_clock::now() - t) * 1e3;
    bool same = true;
    for (const auto& [name, got] : {std::pair(std::string("total"), total_top),
                                    std::pair(stage, stage_top)}) {
      auto& v = best[ids[name]];
      std::sort(v.begin(), v.end());
      v.resize(std::min<size_t>(v.size(), 10));
      same = same && v.size() == got.size();
      for (size_t i = 0; same && i < v.size(); ++i) {
        same = v[i].second == got[i].order_id &&
               static_cast<double>(-v[i].first) == got[i].latency_ns;
      }
    }
    verified = same ? "equal to a brute-force ranking" : "DIFFERS from a brute-force ranking";
    std::printf("brute force over every order (one full scan, both rankings): %.0f ms; interval "
                "walk %s\n",
                scan_ms, verified.c_str());
    if (!same) return 1;
  }
  const auto verdict = [](double v, double target) { return v < target ? "met" : "**missed**"; };
  char n_text[32];
  std::snprintf(n_text, sizeof(n_text), "%.1f M orders", static_cast<double>(o.orders) / 1e6);
  const std::string n = n_text;
  std::printf("TARGET|store|window query: every stage's percentiles, 10 min of an %d h store "
              "(store_query_bench)|%.1f ms|< 100 ms|%s|%s, median of %d\n",
              o.hours, w_median, verdict(w_median, 100), n.c_str(), o.repeat);
  std::printf("TARGET|store|orders --slowest 10, whole run (store_query_bench)|%.0f ms|< 1 s|%s|"
              "%s, no latency index, %s; with --stage %s: %.0f ms\n",
              t_median, verdict(t_median, 1000), n.c_str(), verified.c_str(), stage.c_str(),
              s_median);
  return 0;
}
