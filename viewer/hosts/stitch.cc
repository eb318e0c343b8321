// Orders stitched across hosts (stitch.h).

#include "viewer/hosts/stitch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

struct RunFacts {
  std::string host;
  std::optional<double> clock_error_ns;
  double tsc_hz = 0;
};

// Runs read once per call.
class RunCache {
 public:
  explicit RunCache(store::StoreReader& store) : store_(store) {}
  absl::StatusOr<const RunFacts*> Get(int64_t run_id) {
    if (auto it = runs_.find(run_id); it != runs_.end()) return &it->second;
    TICKTRACE_ASSIGN_OR_RETURN(const store::RunRow run, store_.GetRun(run_id));
    RunFacts& f = runs_[run_id];
    f.host = run.host;
    f.clock_error_ns = run.clock_error_ns;
    f.tsc_hz = run.tsc_hz;
    return &f;
  }

 private:
  store::StoreReader& store_;
  std::map<int64_t, RunFacts> runs_;
};

// The instance of `order_id` in `run_id` nearest `reference_utc_ns` within
// `window_ns`, or nullopt.
absl::StatusOr<std::optional<int64_t>> NearestInstance(store::StoreReader& store, int64_t run_id,
                                                       int64_t order_id, int64_t reference_utc_ns,
                                                       int64_t window_ns) {
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::OrderRow> instances,
                             store.OrderInstances(run_id, order_id));
  std::optional<int64_t> best;
  int64_t best_gap = window_ns;
  for (const store::OrderRow& o : instances) {
    const int64_t gap = std::llabs(o.first_utc_ns - reference_utc_ns);
    if (gap <= best_gap) {
      best_gap = gap;
      best = o.instance;
    }
  }
  return best;
}

// The stages between consecutive pipeline stamps of `order`.
absl::Status ComputeStages(RunCache& runs, const StitchOptions& options, UtcStitchedOrder* order) {
  std::vector<const HostStamp*> chain;
  if (options.pipeline.empty()) {
    for (const HostStamp& s : order->stamps) {
      if (s.stamp.kind == "stamp") chain.push_back(&s);
    }
  } else {
    for (const std::string& tag : options.pipeline) {
      const HostStamp* found = nullptr;
      for (const HostStamp& s : order->stamps) {
        if (s.stamp.kind == "stamp" && s.stamp.tag == tag) {
          found = &s;
          break;  // the first (stamps are by UTC)
        }
      }
      if (found) {
        chain.push_back(found);
      } else {
        order->complete = false;
      }
    }
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    const HostStamp& a = *chain[i - 1];
    const HostStamp& b = *chain[i];
    StitchedStage st;
    st.stage = absl::StrCat(a.stamp.tag, "->", b.stamp.tag);
    st.from_host = a.host;
    st.to_host = b.host;
    st.cross_host = a.host != b.host;
    if (a.run_id == b.run_id) {
      // One collector's TSC: as it computes a hop.
      TICKTRACE_ASSIGN_OR_RETURN(const RunFacts* f, runs.Get(a.run_id));
      st.latency_ns = f->tsc_hz > 0
                          ? static_cast<double>(b.stamp.tsc - a.stamp.tsc) * 1e9 / f->tsc_hz
                          : static_cast<double>(b.stamp.utc_ns - a.stamp.utc_ns);
    } else {
      // Two collectors: never their TSC values, only their UTC.
      st.latency_ns = static_cast<double>(b.stamp.utc_ns - a.stamp.utc_ns);
    }
    if (st.cross_host) {
      st.flags |= store::kFlagCrossHost;
      TICKTRACE_ASSIGN_OR_RETURN(const RunFacts* fa, runs.Get(a.run_id));
      TICKTRACE_ASSIGN_OR_RETURN(const RunFacts* fb, runs.Get(b.run_id));
      if (fa->clock_error_ns && fb->clock_error_ns) {
        st.uncertainty_ns = *fa->clock_error_ns + *fb->clock_error_ns;
      }
    }
    order->stages.push_back(std::move(st));
  }
  return absl::OkStatus();
}

// Stitches the order from its instances: (run, instance) pairs.
absl::StatusOr<UtcStitchedOrder> Assemble(store::StoreReader& store, RunCache& runs, int64_t order_id,
                                       const std::vector<std::pair<int64_t, int64_t>>& parts,
                                       const StitchOptions& options) {
  UtcStitchedOrder order;
  order.order_id = order_id;
  for (const auto& [run_id, instance] : parts) {
    TICKTRACE_ASSIGN_OR_RETURN(const RunFacts* f, runs.Get(run_id));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::StampRow> stamps,
                               store.StampsOfInstance(run_id, order_id, instance));
    for (store::StampRow& s : stamps) order.stamps.push_back(HostStamp{f->host, run_id, std::move(s)});
  }
  std::stable_sort(order.stamps.begin(), order.stamps.end(),
                   [](const HostStamp& a, const HostStamp& b) {
                     return a.stamp.utc_ns < b.stamp.utc_ns;
                   });
  for (const HostStamp& s : order.stamps) {
    if (std::find(order.hosts.begin(), order.hosts.end(), s.host) == order.hosts.end()) {
      order.hosts.push_back(s.host);
    }
  }
  TICKTRACE_RETURN_IF_ERROR(ComputeStages(runs, options, &order));
  return order;
}

// True when `host` may join an order under `options` (StitchOptions::hosts).
bool HostChosen(const StitchOptions& options, const std::string& host) {
  return options.hosts.empty() ||
         std::find(options.hosts.begin(), options.hosts.end(), host) != options.hosts.end();
}

double NearestRank(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * v.size())));
  return v[std::min(rank, v.size()) - 1];
}

}  // namespace

absl::StatusOr<std::optional<UtcStitchedOrder>> StitchOrder(store::StoreReader& store, int64_t run_id,
                                                         int64_t order_id,
                                                         const StitchOptions& options) {
  TICKTRACE_ASSIGN_OR_RETURN(const std::optional<store::OrderRow> reference,
                             store.FindOrder(run_id, order_id));
  if (!reference) return std::optional<UtcStitchedOrder>();
  RunCache runs(store);
  std::vector<std::pair<int64_t, int64_t>> parts = {{run_id, reference->instance}};
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<int64_t> holders, store.RunsWithOrder(order_id));
  for (int64_t other : holders) {
    if (other == run_id) continue;
    TICKTRACE_ASSIGN_OR_RETURN(const RunFacts* facts, runs.Get(other));
    if (!HostChosen(options, facts->host)) continue;
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::optional<int64_t> instance,
        NearestInstance(store, other, order_id, reference->first_utc_ns, options.window_ns));
    if (instance) parts.emplace_back(other, *instance);
  }
  TICKTRACE_ASSIGN_OR_RETURN(UtcStitchedOrder order,
                             Assemble(store, runs, order_id, parts, options));
  return std::optional<UtcStitchedOrder>(std::move(order));
}

absl::StatusOr<std::vector<UtcStitchedOrder>> StitchOrders(store::StoreReader& store, int64_t run_id,
                                                        const store::TimeWindow& window,
                                                        const StitchOptions& options,
                                                        int64_t limit) {
  RunCache runs(store);
  // The reference run's orders in the window.
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::OrderRow> mine, store.OrdersByTime(run_id, {}));
  // Every other chosen run's orders by id (the instance nearest in time wins
  // below).
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::RunRow> all_runs, store.ListRuns());
  std::map<int64_t, std::vector<std::pair<int64_t, const store::OrderRow*>>> others;
  std::vector<std::vector<store::OrderRow>> keep;
  keep.reserve(all_runs.size());
  for (const store::RunRow& r : all_runs) {
    if (r.run_id == run_id || !HostChosen(options, r.host)) continue;
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::OrderRow> rows, store.OrdersByTime(r.run_id, {}));
    keep.push_back(std::move(rows));
    for (const store::OrderRow& o : keep.back()) others[o.order_id].emplace_back(r.run_id, &o);
  }
  std::vector<UtcStitchedOrder> out;
  for (const store::OrderRow& o : mine) {
    if (o.instance != 0) continue;
    if (window.since_utc_ns && o.first_utc_ns < *window.since_utc_ns) continue;
    if (window.until_utc_ns && o.first_utc_ns >= *window.until_utc_ns) continue;
    if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
    std::vector<std::pair<int64_t, int64_t>> parts = {{run_id, o.instance}};
    if (auto it = others.find(o.order_id); it != others.end()) {
      std::map<int64_t, std::pair<int64_t, int64_t>> nearest;  // run -> (gap, instance)
      for (const auto& [other_run, row] : it->second) {
        const int64_t gap = std::llabs(row->first_utc_ns - o.first_utc_ns);
        if (gap > options.window_ns) continue;
        auto [n, fresh] = nearest.try_emplace(other_run, gap, row->instance);
        if (!fresh && gap < n->second.first) n->second = {gap, row->instance};
      }
      for (const auto& [other_run, gi] : nearest) parts.emplace_back(other_run, gi.second);
    }
    TICKTRACE_ASSIGN_OR_RETURN(UtcStitchedOrder order,
                               Assemble(store, runs, o.order_id, parts, options));
    out.push_back(std::move(order));
  }
  return out;
}

std::optional<StitchedStage> StitchedTotal(const UtcStitchedOrder& order) {
  if (order.stages.empty()) return std::nullopt;
  StitchedStage total;
  total.stage = "total";
  total.from_host = order.stages.front().from_host;
  total.to_host = order.stages.back().to_host;
  bool unknown = false;
  double uncertainty = 0;
  for (const StitchedStage& st : order.stages) {
    total.latency_ns += st.latency_ns;
    if (!st.cross_host) continue;
    total.cross_host = true;
    if (st.uncertainty_ns) {
      uncertainty += *st.uncertainty_ns;
    } else {
      unknown = true;
    }
  }
  if (total.cross_host) {
    total.flags |= store::kFlagCrossHost;
    if (!unknown) total.uncertainty_ns = uncertainty;
  }
  return total;
}

std::vector<StitchedStageStats> SummarizeStitched(const std::vector<UtcStitchedOrder>& orders,
                                                  bool with_total) {
  struct Acc {
    StitchedStageStats stats;
    std::vector<double> values;
    size_t first_seen = 0;
  };
  std::map<std::string, Acc> by_stage;
  size_t seen = 0;
  const auto add = [&](const StitchedStage& st) {
    Acc& a = by_stage[st.stage];
    if (a.values.empty()) {
      a.first_seen = st.stage == "total" ? SIZE_MAX : seen++;
      a.stats.stage = st.stage;
      a.stats.from_host = st.from_host;
      a.stats.to_host = st.to_host;
      a.stats.cross_host = st.cross_host;
      a.stats.uncertainty_ns = st.uncertainty_ns;
    } else if (st.uncertainty_ns && a.stats.uncertainty_ns) {
      a.stats.uncertainty_ns = std::max(*a.stats.uncertainty_ns, *st.uncertainty_ns);
    } else if (st.cross_host) {
      a.stats.uncertainty_ns.reset();  // one order's is unknown: the stage's is
    }
    a.values.push_back(st.latency_ns);
  };
  for (const UtcStitchedOrder& order : orders) {
    for (const StitchedStage& st : order.stages) add(st);
    if (with_total) {
      if (const std::optional<StitchedStage> total = StitchedTotal(order)) add(*total);
    }
  }
  std::vector<Acc*> ordered;
  for (auto& [name, a] : by_stage) ordered.push_back(&a);
  std::sort(ordered.begin(), ordered.end(),
            [](const Acc* x, const Acc* y) { return x->first_seen < y->first_seen; });
  std::vector<StitchedStageStats> out;
  for (Acc* a : ordered) {
    StitchedStageStats s = a->stats;
    s.count = static_cast<int64_t>(a->values.size());
    double sum = 0;
    for (double v : a->values) sum += v;
    s.mean_ns = sum / static_cast<double>(s.count);
    s.p50_ns = NearestRank(a->values, 0.5);
    s.p99_ns = NearestRank(a->values, 0.99);
    s.min_ns = a->values.front();
    s.max_ns = a->values.back();
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<StitchedStageStats>> StitchedBreakdown(
    store::StoreReader& store, int64_t run_id, const store::TimeWindow& window, const StitchOptions& options,
    int64_t limit, int64_t* stitched) {
  *stitched = 0;
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<UtcStitchedOrder> orders,
                             StitchOrders(store, run_id, window, options, limit));
  for (const UtcStitchedOrder& order : orders) {
    if (order.hosts.size() > 1) ++*stitched;
  }
  return SummarizeStitched(orders, /*with_total=*/false);
}

}  // namespace ticktrace::view
