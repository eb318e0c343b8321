// The SQLite StoreReader's samples, orders and stamps: one `orders` row per
// order instance, its samples in orders.samples and its context and stamps in
// the packed detail; the slowest orders through the intervals' maxima and
// order-key ranges (sqlite_reader.h, docs/store.md).

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
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
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

// An order with what its samples need: OrderFields() reads the first four,
// OrderSamples() the detail and the samples.
constexpr char kOrderSampleColumns[] =
    "order_id, instance, first_utc_ns, first_tsc, detail, samples";

constexpr char kOrderColumns[] =
    "order_id, instance, parent_order_id, first_utc_ns, total_ns, complete, missing, flags";

OrderRow ReadOrder(const Statement& s, int first = 0) {
  OrderRow row;
  row.order_id = s.Int(first + 0);
  row.instance = s.Int(first + 1);
  row.parent_order_id = s.OptionalInt(first + 2);
  row.first_utc_ns = s.Int(first + 3);
  row.total_ns = s.OptionalDouble(first + 4);
  row.complete = s.Int(first + 5) != 0;
  row.missing = s.Text(first + 6);
  row.late = (static_cast<uint32_t>(s.Int(first + 7)) & store::kFlagLate) != 0;
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

absl::Status SqliteStoreReader::ForEachSample(int64_t run_id, const SampleFilter& filter,
                                              bool ordered,
                                              const std::function<void(const SampleRow&)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  std::optional<int64_t> stage_id;
  if (!ResolveStageFilter(*dict, filter, &stage_id)) return absl::OkStatus();
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kOrderSampleColumns, " FROM orders WHERE run_id = ?",
                           ordered ? " ORDER BY order_id, instance, order_key" : ""),
              "reading samples"));
  s.Bind(1, run_id);
  const SampleMatcher passes(filter);
  std::vector<SampleRow> rows;
  const absl::Status walked = s.ForEachRow([&]() -> absl::Status {
    rows.clear();
    TICKTRACE_RETURN_IF_ERROR(OrderSamples(s, *dict, stage_id, &rows));
    // The ordered form gives an order's samples by start.
    if (ordered) SortByStart(&rows);
    for (const SampleRow& r : rows) {
      if (passes(r)) visit(r);
    }
    return absl::OkStatus();
  });
  TICKTRACE_RETURN_IF_ERROR(walked);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SampleRow>> SqliteStoreReader::SamplesOfOrder(int64_t run_id,
                                                                         int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_ASSIGN_OR_RETURN(Statement s,
                             Prepare(absl::StrCat("SELECT ", kOrderSampleColumns,
                                                  " FROM orders WHERE run_id = ? AND order_id = ? "
                                                  "ORDER BY instance"),
                                     "reading an order's samples"));
  s.Bind(1, run_id).Bind(2, order_id);
  std::vector<SampleRow> out;
  const absl::Status walked = s.ForEachRow([&]() -> absl::Status {
    TICKTRACE_RETURN_IF_ERROR(OrderSamples(s, *dict, std::nullopt, &out));
    return absl::OkStatus();
  });
  TICKTRACE_RETURN_IF_ERROR(walked);
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
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement scan, Prepare("SELECT order_id, samples FROM orders WHERE order_key BETWEEN ?1 AND "
                              "?2 AND +run_id = ?3 AND first_utc_ns >= ?4 AND first_utc_ns < ?5",
                              "ranking orders"));
  TopOrders top(limit);
  for (const SlowCandidate& c : candidates) {
    const std::optional<int64_t> k = top.kth();
    if (k.has_value() && c.bound < static_cast<double>(*k)) break;
    const int64_t lo = std::max(c.range.start_utc_ns, window.since_utc_ns.value_or(kMinTime));
    const int64_t hi =
        std::min(c.range.start_utc_ns + dict->interval_ns, window.until_utc_ns.value_or(kMaxTime));
    scan.Reset();
    scan.Bind(1, c.range.first_key).Bind(2, c.range.last_key).Bind(3, run_id).Bind(4, lo);
    scan.Bind(5, hi);
    const absl::Status walked = scan.ForEachRow([&]() -> absl::Status {
      TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::SampleCell> cells,
                                 Cells(scan.Blob(1), scan.Int(0)));
      for (const store::SampleCell& cell : cells) {
        if (cell.stage_id == *stage_id) top.Offer({cell.latency_ns, scan.Int(0), cell.flags});
      }
      return absl::OkStatus();
    });
    TICKTRACE_RETURN_IF_ERROR(walked);
  }
  return top.Slowest();
}

absl::StatusOr<std::vector<OrderRow>> SqliteStoreReader::OrderInstances(int64_t run_id,
                                                                        int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(Statement s,
                             Prepare(absl::StrCat("SELECT ", kOrderColumns,
                                                  " FROM orders WHERE run_id = ? AND order_id = ? "
                                                  "ORDER BY instance"),
                                     "reading an order"));
  s.Bind(1, run_id).Bind(2, order_id);
  return s.Collect([](const Statement& row) { return ReadOrder(row); });
}

absl::StatusOr<std::vector<int64_t>> SqliteStoreReader::RunsWithOrder(int64_t order_id) {
  // One index seek per run: (run_id, order_id, instance).
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare("SELECT r.run_id FROM runs r WHERE EXISTS (SELECT 1 FROM orders o "
                           "WHERE o.run_id = r.run_id AND o.order_id = ?) ORDER BY r.run_id",
                           "finding an order's runs"));
  s.Bind(1, order_id);
  return s.Collect([](const Statement& row) { return row.Int(0); });
}

absl::StatusOr<std::vector<int64_t>> SqliteStoreReader::ChildOrders(int64_t run_id,
                                                                    int64_t order_id) {
  // parent_order_id has no index: a scan of the run's orders (about 1 s
  // per 10 M orders).
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare("SELECT order_id FROM orders WHERE run_id = ? AND parent_order_id = ? "
                           "ORDER BY first_utc_ns, order_id, instance",
                           "finding an order's children"));
  s.Bind(1, run_id).Bind(2, order_id);
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  TICKTRACE_RETURN_IF_ERROR(s.ForEachRow([&] {
    if (seen.insert(s.Int(0)).second) out.push_back(s.Int(0));
  }));
  return out;
}

absl::StatusOr<std::vector<OrderRow>> SqliteStoreReader::OrdersByTime(
    int64_t run_id, std::optional<int64_t> limit) {
  std::vector<OrderRow> out;
  const auto by_time = [](const OrderRow& a, const OrderRow& b) {
    return std::tie(a.first_utc_ns, a.order_id, a.instance) <
           std::tie(b.first_utc_ns, b.order_id, b.instance);
  };
  if (!limit.has_value() || *limit < 0) {
    TICKTRACE_ASSIGN_OR_RETURN(Statement s,
                               Prepare(absl::StrCat("SELECT ", kOrderColumns,
                                                    " FROM orders WHERE run_id = ? "
                                                    "ORDER BY first_utc_ns, order_id, instance"),
                                       "listing orders"));
    s.Bind(1, run_id);
    TICKTRACE_RETURN_IF_ERROR(s.ForEachRow([&] { out.push_back(ReadOrder(s)); }));
    return out;
  }
  // The first `limit`: interval by interval (each one's orders sorted),
  // without sorting the run.
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, TimeWindow{}));
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kOrderColumns,
                           " FROM orders o WHERE order_key BETWEEN ?1 AND ?2 AND "
                           "+run_id = ?3 AND first_utc_ns >= ?4 AND first_utc_ns < ?5"),
              "listing orders"));
  for (const KeyRange& r : ranges) {
    if (static_cast<int64_t>(out.size()) >= *limit) break;
    s.Reset();
    s.Bind(1, r.first_key).Bind(2, r.last_key).Bind(3, run_id).Bind(4, r.start_utc_ns);
    s.Bind(5, r.start_utc_ns + dict->interval_ns);
    const size_t begin = out.size();
    TICKTRACE_RETURN_IF_ERROR(s.ForEachRow([&] { out.push_back(ReadOrder(s)); }));
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

OrderKeyFields SqliteStoreReader::OrderFields(const Statement& s) {
  return OrderKeyFields{s.Int(0), s.Int(1), s.Int(2), s.Int(3)};
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
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kOrderSampleColumns,
                           " FROM orders WHERE order_key BETWEEN ?1 AND ?2 AND "
                           "+run_id = ?3 AND first_utc_ns >= ?4 AND first_utc_ns < ?5"),
              "reading samples"));
  std::vector<SampleRow> rows;
  for (const KeyRange& r : ranges) {
    s.Reset();
    s.Bind(1, r.first_key).Bind(2, r.last_key).Bind(3, run_id);
    s.Bind(4, std::max(r.start_utc_ns, window.since_utc_ns.value_or(kMinTime)));
    s.Bind(5, std::min(r.start_utc_ns + dict->interval_ns, window.until_utc_ns.value_or(kMaxTime)));
    const absl::Status walked = s.ForEachRow([&]() -> absl::Status {
      rows.clear();
      TICKTRACE_RETURN_IF_ERROR(OrderSamples(s, *dict, stage_id, &rows));
      for (const SampleRow& sample : rows) visit(sample);
      return absl::OkStatus();
    });
    TICKTRACE_RETURN_IF_ERROR(walked);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<store::SampleCell>> SqliteStoreReader::Cells(std::string_view text,
                                                                        int64_t order_id) {
  absl::StatusOr<std::vector<store::SampleCell>> cells = store::ParseSampleCells(text);
  if (!cells.ok()) {
    return absl::DataLossError(
        absl::StrCat(path_, ": order ", order_id, ": ", cells.status().message()));
  }
  return cells;
}

absl::Status SqliteStoreReader::OrderSamples(const Statement& s, const RunDictionary& dict,
                                             std::optional<int64_t> stage_id,
                                             std::vector<SampleRow>* out) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::SampleCell> cells, Cells(s.Blob(5), s.Int(0)));
  bool wanted = false;
  for (const store::SampleCell& c : cells) wanted = wanted || !stage_id || c.stage_id == *stage_id;
  if (!wanted) return absl::OkStatus();
  TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail,
                             UnpackOrderDetail(path_, s.Blob(4), s.Int(0)));
  const OrderKeyFields order = OrderFields(s);
  for (size_t seq = 0; seq < cells.size(); ++seq) {
    const store::SampleCell& c = cells[seq];
    if (stage_id && c.stage_id != *stage_id) continue;
    out->push_back(MakeSampleRow(dict, order, detail, static_cast<int64_t>(seq), c.stage_id,
                                 c.latency_ns, c.flags));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StampRow>> SqliteStoreReader::ReadStamps(
    int64_t run_id, int64_t order_id, std::optional<int64_t> instance) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT order_id, instance, first_utc_ns, first_tsc, detail "
                           "FROM orders WHERE run_id = ? AND order_id = ?",
                           instance.has_value() ? " AND instance = ?" : "", " ORDER BY instance"),
              "reading an order's stamps"));
  s.Bind(1, run_id).Bind(2, order_id);
  if (instance.has_value()) s.Bind(3, *instance);
  std::vector<StampRow> out;
  const absl::Status walked = s.ForEachRow([&]() -> absl::Status {
    TICKTRACE_ASSIGN_OR_RETURN(store::PackedDetail detail,
                               UnpackOrderDetail(path_, s.Blob(4), order_id));
    bool known = true;
    for (const store::PackedStamp& p : detail.stamps)
      known = known && p.name_id < dict->names.size();
    if (!known) {
      TICKTRACE_ASSIGN_OR_RETURN(dict, Dictionary(run_id, true));
    }
    std::vector<StampRow> rows = MakeStampRows(*dict, OrderFields(s), detail);
    out.insert(out.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
    return absl::OkStatus();
  });
  TICKTRACE_RETURN_IF_ERROR(walked);
  return out;
}

}  // namespace sqlite_reader
}  // namespace ticktrace::store::internal
