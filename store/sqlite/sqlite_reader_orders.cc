// The SQLite StoreReader's samples, orders and stamps: orders in blocks of
// one interval (order_blocks, sqlite_blocks.h), found by id through the id
// pages of order_ids and by time through interval_detail's key ranges; each
// order's samples in its JSON element, their context and its stamps in its
// packed detail; the slowest orders through the intervals' maxima
// (sqlite_reader.h, docs/store.md).

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_statement.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store::internal {
namespace sqlite_reader {

// The columns ForEachBlockOrder reads.
constexpr char kBlockColumns[] = "b.block_key, b.start_utc_ns, b.orders, b.detail";

OrderRow ReadOrder(const store::BlockOrder& o) {
  OrderRow row;
  row.order_id = o.order_id;
  row.instance = o.instance;
  row.parent_order_id = o.parent_order_id;
  row.first_utc_ns = o.first_utc_ns;
  if (o.total_ns.has_value()) row.total_ns = static_cast<double>(*o.total_ns);
  row.complete = o.complete;
  row.missing = o.missing;
  row.late = (o.flags & store::kFlagLate) != 0;
  return row;
}

// A ranked sample during FindSlowest.
struct Ranked {
  int64_t latency_ns;
  int64_t order_id;
  uint32_t flags;
  bool operator<(const Ranked& o) const {  // slowest first, then lower id
    if (latency_ns != o.latency_ns) return latency_ns > o.latency_ns;
    return order_id < o.order_id;
  }
};

// The `limit` slowest orders offered so far, each by its slowest sample.
class TopOrders {
 public:
  explicit TopOrders(int64_t limit) : limit_(limit) {}

  // The latency an order must reach to enter, once `limit` are held.
  std::optional<int64_t> kth() const {
    if (static_cast<int64_t>(top_.size()) < limit_) return std::nullopt;
    return std::prev(top_.end())->latency_ns;
  }

  void Offer(const Ranked& r) {
    auto [it, fresh] = best_.try_emplace(r.order_id, r);
    if (!fresh) {
      if (!(r < it->second)) return;  // not slower than this order's best
      top_.erase(it->second);
      it->second = r;
    }
    top_.insert(r);
    if (static_cast<int64_t>(top_.size()) > limit_) top_.erase(std::prev(top_.end()));
  }

  std::vector<RankedOrder> Slowest() const {
    std::vector<RankedOrder> out;
    for (const Ranked& r : top_) {
      out.push_back({r.order_id, static_cast<double>(r.latency_ns), r.flags});
    }
    return out;
  }

 private:
  int64_t limit_;
  std::unordered_map<int64_t, Ranked> best_;  // each order's best sample seen
  std::set<Ranked> top_;                      // those bests, ranked
};

absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SqliteStoreReader::SampleSpanUtcNs(
    int64_t run_id) {
  using Span = std::optional<std::pair<int64_t, int64_t>>;
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, TimeWindow{}));
  int64_t first = kMaxTime, last = kMinTime;
  const auto scan = [&](size_t i) {
    return ScanSamples(run_id, {ranges[i]}, std::nullopt, TimeWindow{}, [&](const SampleRow& r) {
      first = std::min(first, r.start_utc_ns);
      last = std::max(last, r.start_utc_ns);
    });
  };
  // The earliest: the first interval whose orders have samples (an
  // interval may hold only orders without any, e.g. late instances).
  size_t lo = 0;
  for (; lo < ranges.size() && first == kMaxTime; ++lo) TICKTRACE_RETURN_IF_ERROR(scan(lo));
  // The latest: the last such interval, and the one before it (its orders
  // may start samples after the last interval's first stamps).
  size_t hi = ranges.size();
  const int64_t before = last;
  while (hi > lo && last == before) TICKTRACE_RETURN_IF_ERROR(scan(--hi));
  if (hi > lo) TICKTRACE_RETURN_IF_ERROR(scan(hi - 1));
  if (first <= last) return Span(std::make_pair(first, last));
  // No detail: the intervals' extent.
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare("SELECT min(start_utc_ns), max(start_utc_ns) FROM interval_detail "
                           "WHERE run_id = ?",
                           "reading the time span of the intervals"));
  s.Bind(1, run_id);
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (!row || s.IsNull(0)) return Span();
  return Span(std::make_pair(s.Int(0), s.Int(1) + dict->interval_ns - 1));
}

absl::Status SqliteStoreReader::ForEachBlockOrder(
    Statement& s, const std::function<absl::Status(const store::BlockOrder&)>& visit) {
  return s.ForEachRow([&]() -> absl::Status {
    absl::StatusOr<std::vector<store::BlockOrder>> orders =
        store::ParseBlock(s.Int(0), s.Int(1), s.Blob(2), s.Blob(3));
    if (!orders.ok()) {
      return absl::DataLossError(absl::StrCat(path_, ": ", orders.status().message()));
    }
    for (const store::BlockOrder& o : *orders) TICKTRACE_RETURN_IF_ERROR(visit(o));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<SqliteStoreReader::FoundOrder>> SqliteStoreReader::OrdersWithId(
    int64_t run_id, int64_t order_id, std::optional<int64_t> instance) {
  // The blocks of the id's page (a block or two for ids handed out in
  // sequence), then the id among their orders.
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kBlockColumns,
                           " FROM order_ids i JOIN order_blocks b ON b.block_key = i.block_key "
                           "WHERE i.run_id = ? AND i.id_page = ?"),
              "reading an order"));
  s.Bind(1, run_id).Bind(2, store::IdPage(order_id));
  std::vector<FoundOrder> found;
  TICKTRACE_RETURN_IF_ERROR(ForEachBlockOrder(s, [&](const store::BlockOrder& o) -> absl::Status {
    if (o.order_id != order_id || (instance.has_value() && o.instance != *instance)) {
      return absl::OkStatus();
    }
    TICKTRACE_ASSIGN_OR_RETURN(store::PackedDetail detail,
                               UnpackOrderDetail(path_, o.detail, order_id));
    FoundOrder f{o, std::move(detail)};
    f.order.detail = {};  // points into the row, gone after the next step
    found.push_back(std::move(f));
    return absl::OkStatus();
  }));
  std::sort(found.begin(), found.end(), [](const FoundOrder& a, const FoundOrder& b) {
    return std::tie(a.order.instance, a.order.order_key) <
           std::tie(b.order.instance, b.order.order_key);
  });
  return found;
}

absl::Status SqliteStoreReader::ForEachSample(int64_t run_id, const SampleFilter& filter,
                                              bool ordered,
                                              const std::function<void(const SampleRow&)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  std::optional<int64_t> stage_id;
  if (!ResolveStageFilter(*dict, filter, &stage_id)) return absl::OkStatus();
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kBlockColumns, " FROM order_blocks b WHERE b.run_id = ?"),
              "reading samples"));
  s.Bind(1, run_id);
  const SampleMatcher passes(filter);
  std::vector<SampleRow> rows;
  // The ordered form: by order id, instance and key, each order's samples by
  // start.
  struct Keyed {
    int64_t order_key;
    SampleRow row;
  };
  std::vector<Keyed> sorted;
  TICKTRACE_RETURN_IF_ERROR(ForEachBlockOrder(s, [&](const store::BlockOrder& o) -> absl::Status {
    rows.clear();
    if (absl::Status st = OrderSamples(o, *dict, stage_id, &rows); !st.ok()) return st;
    if (ordered) SortByStart(&rows);
    for (SampleRow& r : rows) {
      if (!passes(r)) continue;
      if (ordered) {
        sorted.push_back({o.order_key, std::move(r)});
      } else {
        visit(r);
      }
    }
    return absl::OkStatus();
  }));
  if (ordered) {
    std::stable_sort(sorted.begin(), sorted.end(), [](const Keyed& a, const Keyed& b) {
      return std::tie(a.row.order_id, a.row.instance, a.order_key) <
             std::tie(b.row.order_id, b.row.instance, b.order_key);
    });
    for (const Keyed& k : sorted) visit(k.row);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SampleRow>> SqliteStoreReader::SamplesOfOrder(int64_t run_id,
                                                                         int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<FoundOrder> found,
                             OrdersWithId(run_id, order_id, std::nullopt));
  std::vector<SampleRow> out;
  for (const FoundOrder& f : found) {
    const OrderKeyFields fields = OrderFields(f.order);
    for (size_t seq = 0; seq < f.order.cells.size(); ++seq) {
      const store::SampleCell& c = f.order.cells[seq];
      out.push_back(MakeSampleRow(*dict, fields, f.detail, static_cast<int64_t>(seq), c.stage_id,
                                  c.latency_ns, c.flags));
    }
  }
  SortByStart(&out);
  return out;
}

absl::StatusOr<std::vector<SlowCandidate>> SqliteStoreReader::SlowestCandidates(
    int64_t run_id, int64_t stage_id, const TimeWindow& window, int64_t interval_ns) {
  // Intervals that may hold an order of the window.
  const int64_t from =
      window.since_utc_ns.has_value() ? FloorTo(*window.since_utc_ns, interval_ns) : kMinTime;
  const int64_t to = window.until_utc_ns.value_or(kMaxTime);
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement iq, Prepare("SELECT start_utc_ns, max_ns, count, samples_all FROM intervals "
                            "WHERE run_id = ? AND stage_id = ? AND start_utc_ns >= ? AND "
                            "start_utc_ns < ?",
                            "reading a stage's intervals"));
  iq.Bind(1, run_id).Bind(2, stage_id).Bind(3, from).Bind(4, to);
  std::unordered_map<int64_t, double> bound_of;  // interval start -> max latency in it
  TICKTRACE_RETURN_IF_ERROR(iq.ForEachRow([&] {
    const bool bounded = !iq.IsNull(1) && iq.Int(2) == iq.Int(3);
    // +1: samples hold latencies rounded to the ns, the max is exact.
    bound_of[iq.Int(0)] = bounded ? iq.Double(1) + 1 : std::numeric_limits<double>::infinity();
  }));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, window));
  std::vector<SlowCandidate> candidates;
  candidates.reserve(ranges.size());
  for (const KeyRange& r : ranges) {
    const auto it = bound_of.find(r.start_utc_ns);
    if (it != bound_of.end()) candidates.push_back({it->second, r});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const SlowCandidate& a, const SlowCandidate& b) {
              if (a.bound != b.bound) return a.bound > b.bound;
              return a.range.start_utc_ns < b.range.start_utc_ns;
            });
  return candidates;
}

absl::StatusOr<Statement> SqliteStoreReader::PrepareRangeScan(absl::string_view what) {
  // The blocks of one interval among its key range (blocks hold one
  // interval each).
  return Prepare(absl::StrCat("SELECT ", kBlockColumns,
                              " FROM order_blocks b WHERE b.block_key BETWEEN ?1 AND ?2 AND "
                              "+b.run_id = ?3 AND b.start_utc_ns = ?4"),
                 what);
}

void SqliteStoreReader::BindRange(Statement& s, int64_t run_id, const KeyRange& r) {
  s.Reset();
  s.Bind(1, r.first_key / store::kOrdersPerBlock).Bind(2, r.last_key / store::kOrdersPerBlock);
  s.Bind(3, run_id).Bind(4, r.start_utc_ns);
}

absl::StatusOr<std::vector<RankedOrder>> SqliteStoreReader::FindSlowest(int64_t run_id,
                                                                        const std::string& stage,
                                                                        int64_t limit,
                                                                        const TimeWindow& window) {
  if (limit <= 0) return std::vector<RankedOrder>();
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  const std::optional<int64_t> stage_id = StageIdOf(*dict, stage);
  if (!stage_id.has_value()) return std::vector<RankedOrder>();
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<SlowCandidate> candidates,
                             SlowestCandidates(run_id, *stage_id, window, dict->interval_ns));
  TICKTRACE_ASSIGN_OR_RETURN(Statement scan, PrepareRangeScan("ranking orders"));
  TopOrders top(limit);
  for (const SlowCandidate& c : candidates) {
    const std::optional<int64_t> k = top.kth();
    if (k.has_value() && c.bound < static_cast<double>(*k)) break;
    const int64_t lo = std::max(c.range.start_utc_ns, window.since_utc_ns.value_or(kMinTime));
    const int64_t hi =
        std::min(c.range.start_utc_ns + dict->interval_ns, window.until_utc_ns.value_or(kMaxTime));
    BindRange(scan, run_id, c.range);
    TICKTRACE_RETURN_IF_ERROR(
        ForEachBlockOrder(scan, [&](const store::BlockOrder& o) -> absl::Status {
          if (o.first_utc_ns < lo || o.first_utc_ns >= hi) return absl::OkStatus();
          for (const store::SampleCell& cell : o.cells) {
            if (cell.stage_id == *stage_id) top.Offer({cell.latency_ns, o.order_id, cell.flags});
          }
          return absl::OkStatus();
        }));
  }
  return top.Slowest();
}

absl::StatusOr<std::vector<OrderRow>> SqliteStoreReader::OrderInstances(int64_t run_id,
                                                                        int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<FoundOrder> found,
                             OrdersWithId(run_id, order_id, std::nullopt));
  std::vector<OrderRow> out;
  out.reserve(found.size());
  for (const FoundOrder& f : found) out.push_back(ReadOrder(f.order));
  return out;
}

absl::StatusOr<std::vector<int64_t>> SqliteStoreReader::RunsWithOrder(int64_t order_id) {
  // The runs whose id page holds a block, then the id in those blocks.
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare("SELECT r.run_id FROM runs r WHERE EXISTS (SELECT 1 FROM order_ids i "
                           "WHERE i.run_id = r.run_id AND i.id_page = ?) ORDER BY r.run_id",
                           "finding an order's runs"));
  s.Bind(1, store::IdPage(order_id));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<int64_t> candidates,
                             s.Collect([](const Statement& row) { return row.Int(0); }));
  std::vector<int64_t> out;
  for (const int64_t run_id : candidates) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<FoundOrder> found,
                               OrdersWithId(run_id, order_id, std::nullopt));
    if (!found.empty()) out.push_back(run_id);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> SqliteStoreReader::ChildOrders(int64_t run_id,
                                                                    int64_t order_id) {
  // parent_order_id has no index: a scan of the run's orders.
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kBlockColumns, " FROM order_blocks b WHERE b.run_id = ?"),
              "finding an order's children"));
  s.Bind(1, run_id);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> children;  // first_utc_ns, id, instance
  TICKTRACE_RETURN_IF_ERROR(ForEachBlockOrder(s, [&](const store::BlockOrder& o) -> absl::Status {
    if (o.parent_order_id == order_id)
      children.emplace_back(o.first_utc_ns, o.order_id, o.instance);
    return absl::OkStatus();
  }));
  std::sort(children.begin(), children.end());
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (const auto& c : children) {
    if (seen.insert(std::get<1>(c)).second) out.push_back(std::get<1>(c));
  }
  return out;
}

absl::StatusOr<std::vector<OrderRow>> SqliteStoreReader::OrdersByTime(
    int64_t run_id, std::optional<int64_t> limit) {
  std::vector<OrderRow> out;
  const auto by_time = [](const OrderRow& a, const OrderRow& b) {
    return std::tie(a.first_utc_ns, a.order_id, a.instance) <
           std::tie(b.first_utc_ns, b.order_id, b.instance);
  };
  const auto keep = [&](const store::BlockOrder& o) -> absl::Status {
    out.push_back(ReadOrder(o));
    return absl::OkStatus();
  };
  if (!limit.has_value() || *limit < 0) {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s,
        Prepare(absl::StrCat("SELECT ", kBlockColumns, " FROM order_blocks b WHERE b.run_id = ?"),
                "listing orders"));
    s.Bind(1, run_id);
    TICKTRACE_RETURN_IF_ERROR(ForEachBlockOrder(s, keep));
    std::sort(out.begin(), out.end(), by_time);
    return out;
  }
  // The first `limit`: interval by interval (each one's orders sorted),
  // without sorting the run.
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, TimeWindow{}));
  TICKTRACE_ASSIGN_OR_RETURN(Statement s, PrepareRangeScan("listing orders"));
  for (const KeyRange& r : ranges) {
    if (static_cast<int64_t>(out.size()) >= *limit) break;
    BindRange(s, run_id, r);
    const size_t begin = out.size();
    TICKTRACE_RETURN_IF_ERROR(ForEachBlockOrder(s, keep));
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(begin), out.end(), by_time);
  }
  if (static_cast<int64_t>(out.size()) > *limit) out.resize(static_cast<size_t>(*limit));
  return out;
}

absl::StatusOr<std::vector<StampRow>> SqliteStoreReader::Stamps(int64_t run_id, int64_t order_id) {
  return ReadStamps(run_id, order_id, std::nullopt);
}

absl::StatusOr<std::vector<StampRow>> SqliteStoreReader::StampsOfInstance(int64_t run_id,
                                                                          int64_t order_id,
                                                                          int64_t instance) {
  return ReadStamps(run_id, order_id, instance);
}

OrderKeyFields SqliteStoreReader::OrderFields(const store::BlockOrder& o) {
  return OrderKeyFields{o.order_id, o.instance, o.first_utc_ns, o.first_tsc};
}

absl::StatusOr<std::vector<KeyRange>> SqliteStoreReader::KeyRanges(int64_t run_id,
                                                                   const TimeWindow& window) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(Statement s,
                             Prepare("SELECT start_utc_ns, first_order_key, last_order_key FROM "
                                     "interval_detail WHERE run_id = ? AND start_utc_ns >= ? AND "
                                     "start_utc_ns < ? AND first_order_key IS NOT NULL AND "
                                     "detail_deleted = 0 ORDER BY start_utc_ns",
                                     "reading interval_detail"));
  s.Bind(1, run_id);
  s.Bind(2, window.since_utc_ns.has_value() ? FloorTo(*window.since_utc_ns, dict->interval_ns)
                                            : kMinTime);
  s.Bind(3, window.until_utc_ns.value_or(kMaxTime));
  return s.Collect([](const Statement& row) {
    return KeyRange{row.Int(0), row.Int(1), row.Int(2)};
  });
}

absl::Status SqliteStoreReader::ScanSamples(int64_t run_id, const std::vector<KeyRange>& ranges,
                                            std::optional<int64_t> stage_id,
                                            const TimeWindow& window,
                                            const std::function<void(const SampleRow&)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(Statement s, PrepareRangeScan("reading samples"));
  std::vector<SampleRow> rows;
  for (const KeyRange& r : ranges) {
    const int64_t lo = std::max(r.start_utc_ns, window.since_utc_ns.value_or(kMinTime));
    const int64_t hi =
        std::min(r.start_utc_ns + dict->interval_ns, window.until_utc_ns.value_or(kMaxTime));
    BindRange(s, run_id, r);
    TICKTRACE_RETURN_IF_ERROR(ForEachBlockOrder(s, [&](const store::BlockOrder& o) -> absl::Status {
      if (o.first_utc_ns < lo || o.first_utc_ns >= hi) return absl::OkStatus();
      rows.clear();
      if (absl::Status st = OrderSamples(o, *dict, stage_id, &rows); !st.ok()) return st;
      for (const SampleRow& sample : rows) visit(sample);
      return absl::OkStatus();
    }));
  }
  return absl::OkStatus();
}

absl::Status SqliteStoreReader::OrderSamples(const store::BlockOrder& o, const RunDictionary& dict,
                                             std::optional<int64_t> stage_id,
                                             std::vector<SampleRow>* out) {
  bool wanted = false;
  for (const store::SampleCell& c : o.cells)
    wanted = wanted || !stage_id || c.stage_id == *stage_id;
  if (!wanted) return absl::OkStatus();
  TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail,
                             UnpackOrderDetail(path_, o.detail, o.order_id));
  const OrderKeyFields order = OrderFields(o);
  for (size_t seq = 0; seq < o.cells.size(); ++seq) {
    const store::SampleCell& c = o.cells[seq];
    if (stage_id && c.stage_id != *stage_id) continue;
    out->push_back(MakeSampleRow(dict, order, detail, static_cast<int64_t>(seq), c.stage_id,
                                 c.latency_ns, c.flags));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StampRow>> SqliteStoreReader::ReadStamps(
    int64_t run_id, int64_t order_id, std::optional<int64_t> instance) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<FoundOrder> found,
                             OrdersWithId(run_id, order_id, instance));
  std::vector<StampRow> out;
  for (const FoundOrder& f : found) {
    bool known = true;
    for (const store::PackedStamp& p : f.detail.stamps) {
      known = known && p.name_id < dict->names.size();
    }
    if (!known) {
      TICKTRACE_ASSIGN_OR_RETURN(dict, Dictionary(run_id, true));
    }
    std::vector<StampRow> rows = MakeStampRows(*dict, OrderFields(f.order), f.detail);
    out.insert(out.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  }
  return out;
}

}  // namespace sqlite_reader
}  // namespace ticktrace::store::internal
