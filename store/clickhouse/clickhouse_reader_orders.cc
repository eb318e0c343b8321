// The ClickHouse StoreReader's samples, orders and stamps: one `orders` row
// per instance, its samples three arrays, its context and stamps the packed
// detail; the slowest orders ranked by the server (clickhouse_reader.h).

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/clickhouse/clickhouse_reader.h"
#include "store/clickhouse/clickhouse_rollup.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/clickhouse/http_client.h"
#include "store/clickhouse/row_binary.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store::internal {
namespace clickhouse_reader {

constexpr char kOrderColumns[] =
    "toInt64(order_id), toInt64(instance), parent_order_id, first_utc_ns, total_ns, complete, "
    "missing, flags";

OrderRow ReadOrder(RowBinaryCursor& c) {
  OrderRow row;
  row.order_id = c.Int64();
  row.instance = c.Int64();
  if (const std::optional<uint64_t> p = c.NullableUInt64()) row.parent_order_id = int64_t(*p);
  row.first_utc_ns = c.Int64();
  if (const std::optional<int64_t> t = c.NullableInt64()) row.total_ns = double(*t);
  row.complete = c.UInt8() != 0;
  row.missing = c.String();
  row.late = (c.UInt32() & store::kFlagLate) != 0;
  return row;
}

// An order with what its samples and stamps need.
constexpr char kOrderSampleColumns[] =
    "toInt64(order_id), toInt64(instance), first_utc_ns, toInt64(first_tsc), detail, "
    "sample_stage_ids, sample_latency_ns, sample_flags";

struct OrderSamplesRow {
  OrderKeyFields key;
  std::string_view detail;
  std::vector<uint32_t> stage_ids;
  std::vector<int64_t> latency_ns;
  std::vector<uint32_t> flags;
};

OrderSamplesRow ReadOrderSamples(RowBinaryCursor& c) {
  OrderSamplesRow r;
  r.key.order_id = c.Int64();
  r.key.instance = c.Int64();
  r.key.first_utc_ns = c.Int64();
  r.key.first_tsc = c.Int64();
  r.detail = c.Bytes();
  r.stage_ids = c.Array<uint32_t>([](RowBinaryCursor& x) { return x.UInt32(); });
  r.latency_ns = c.Array<int64_t>([](RowBinaryCursor& x) { return x.Int64(); });
  r.flags = c.Array<uint32_t>([](RowBinaryCursor& x) { return x.UInt32(); });
  return r;
}

absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> ClickHouseStoreReader::SampleSpanUtcNs(
    int64_t run_id) {
  using Span = std::optional<std::pair<int64_t, int64_t>>;
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  const int64_t interval = dict->interval_ns;
  std::optional<std::pair<int64_t, int64_t>> firsts;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toUInt64(count()), min(first_utc_ns), max(first_utc_ns) FROM orders "
                   "WHERE run_id = ",
                   run_id, " AND notEmpty(sample_stage_ids)"),
      "reading the time span of the samples", [&](RowBinaryCursor& c) {
        const uint64_t n = c.UInt64();
        const int64_t lo = c.Int64(), hi = c.Int64();
        if (n > 0) firsts = std::make_pair(lo, hi);
      }));
  if (firsts) {
    int64_t first = kMaxTime, last = kMinTime;
    const auto visit = [&](const SampleRow& r) {
      first = std::min(first, r.start_utc_ns);
      last = std::max(last, r.start_utc_ns);
    };
    const int64_t lo = FloorTo(firsts->first, interval);
    const int64_t hi = FloorTo(firsts->second, interval);
    TICKTRACE_RETURN_IF_ERROR(ScanSamples(
        run_id, absl::StrCat(" AND first_utc_ns >= ", lo, " AND first_utc_ns < ", lo + interval),
        std::nullopt, false, visit));
    TICKTRACE_RETURN_IF_ERROR(
        ScanSamples(run_id,
                    absl::StrCat(" AND first_utc_ns >= ", std::max(hi - interval, lo + interval),
                                 " AND first_utc_ns < ", hi + interval),
                    std::nullopt, false, visit));
    if (first <= last) return Span(std::make_pair(first, last));
  }
  Span span;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT toUInt64(count()), min(start_utc_ns), max(start_utc_ns) FROM "
                              "interval_detail WHERE run_id = ",
                              run_id),
                 "reading the time span of the intervals", [&](RowBinaryCursor& c) {
                   const uint64_t n = c.UInt64();
                   const int64_t lo = c.Int64(), hi = c.Int64();
                   if (n > 0) span = std::make_pair(lo, hi + interval - 1);
                 }));
  return span;
}

absl::Status ClickHouseStoreReader::ForEachSample(
    int64_t run_id, const SampleFilter& filter, bool ordered,
    const std::function<void(const SampleRow&)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  std::optional<int64_t> stage_id;
  if (!ResolveStageFilter(*dict, filter, &stage_id)) return absl::OkStatus();
  const SampleMatcher passes(filter);
  // A sample starts at or after its order's first stamp: orders that
  // start after `until` hold none of the window.
  std::string where;
  if (filter.until_utc_ns) absl::StrAppend(&where, " AND first_utc_ns <= ", *filter.until_utc_ns);
  return ScanSamples(run_id, where, stage_id, ordered, [&](const SampleRow& r) {
    if (passes(r)) visit(r);
  });
}

absl::StatusOr<std::vector<SampleRow>> ClickHouseStoreReader::SamplesOfOrder(int64_t run_id,
                                                                             int64_t order_id) {
  std::vector<SampleRow> out;
  TICKTRACE_RETURN_IF_ERROR(
      ScanSamples(run_id, absl::StrCat(" AND order_id = ", IdLiteral(order_id)), std::nullopt, true,
                  [&](const SampleRow& r) { out.push_back(r); }));
  SortByStart(&out);
  return out;
}

absl::StatusOr<std::vector<RankedOrder>> ClickHouseStoreReader::FindSlowest(
    int64_t run_id, const std::string& stage, int64_t limit, const TimeWindow& window) {
  std::vector<RankedOrder> out;
  if (limit <= 0) return out;
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  const std::optional<int64_t> stage_id = StageIdOf(*dict, stage);
  if (!stage_id.has_value()) return out;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toInt64(order_id) AS id, s_latency, s_flags FROM orders "
                   "ARRAY JOIN sample_stage_ids AS s_stage, sample_latency_ns AS s_latency, "
                   "sample_flags AS s_flags WHERE run_id = ",
                   run_id, " AND has(sample_stage_ids, ", *stage_id, ") AND s_stage = ", *stage_id,
                   WindowClause("first_utc_ns", window),
                   " ORDER BY s_latency DESC, id ASC LIMIT 1 BY id LIMIT ", limit),
      "ranking orders", [&](RowBinaryCursor& c) {
        RankedOrder r;
        r.order_id = c.Int64();
        r.latency_ns = static_cast<double>(c.Int64());
        r.flags = c.UInt32();
        out.push_back(r);
      }));
  return out;
}

absl::StatusOr<std::vector<OrderRow>> ClickHouseStoreReader::OrderInstances(int64_t run_id,
                                                                            int64_t order_id) {
  return ReadOrders(absl::StrCat("WHERE run_id = ", run_id, " AND order_id = ", IdLiteral(order_id),
                                 " ORDER BY instance LIMIT 1 BY instance"),
                    "reading an order");
}

absl::StatusOr<std::vector<int64_t>> ClickHouseStoreReader::RunsWithOrder(int64_t order_id) {
  std::vector<int64_t> out;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT DISTINCT run_id FROM orders WHERE order_id = ", IdLiteral(order_id),
                   " ORDER BY run_id"),
      "finding an order's runs", [&](RowBinaryCursor& c) { out.push_back(c.Int64()); }));
  return out;
}

absl::StatusOr<std::vector<int64_t>> ClickHouseStoreReader::ChildOrders(int64_t run_id,
                                                                        int64_t order_id) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT toInt64(order_id) FROM orders WHERE run_id = ", run_id,
                              " AND parent_order_id = ", IdLiteral(order_id),
                              " ORDER BY first_utc_ns, order_id, instance"),
                 "finding an order's children", [&](RowBinaryCursor& c) {
                   const int64_t id = c.Int64();
                   if (seen.insert(id).second) out.push_back(id);
                 }));
  return out;
}

absl::StatusOr<std::vector<OrderRow>> ClickHouseStoreReader::OrdersByTime(
    int64_t run_id, std::optional<int64_t> limit) {
  std::string tail =
      absl::StrCat("WHERE run_id = ", run_id, " ORDER BY first_utc_ns, order_id, instance");
  if (limit.has_value() && *limit >= 0) absl::StrAppend(&tail, " LIMIT ", *limit);
  return ReadOrders(tail, "listing orders");
}

absl::StatusOr<std::vector<StampRow>> ClickHouseStoreReader::Stamps(int64_t run_id,
                                                                    int64_t order_id) {
  return ReadStamps(run_id, order_id, std::nullopt);
}

absl::StatusOr<std::vector<StampRow>> ClickHouseStoreReader::StampsOfInstance(int64_t run_id,
                                                                              int64_t order_id,
                                                                              int64_t instance) {
  return ReadStamps(run_id, order_id, instance);
}

absl::StatusOr<std::vector<OrderRow>> ClickHouseStoreReader::ReadOrders(const std::string& tail,
                                                                        const std::string& what) {
  std::vector<OrderRow> out;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT ", kOrderColumns, " FROM orders ", tail), what,
                 [&](RowBinaryCursor& c) { out.push_back(ReadOrder(c)); }));
  return out;
}

absl::Status ClickHouseStoreReader::ScanSamples(
    int64_t run_id, const std::string& where, std::optional<int64_t> stage_id, bool ordered,
    const std::function<void(const SampleRow&)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(
      const std::string body,
      Select(absl::StrCat("SELECT ", kOrderSampleColumns, " FROM orders WHERE run_id = ", run_id,
                          stage_id ? absl::StrCat(" AND has(sample_stage_ids, ", *stage_id, ")")
                                   : std::string(),
                          where, ordered ? " ORDER BY order_id, instance" : ""),
             "reading samples"));
  RowBinaryCursor c(body);
  std::vector<SampleRow> rows;
  while (!c.at_end()) {
    const OrderSamplesRow o = ReadOrderSamples(c);
    if (c.failed()) return Truncated("reading samples");
    const size_t n = o.stage_ids.size();
    if (o.latency_ns.size() != n || o.flags.size() != n) {
      return absl::DataLossError(
          absl::StrCat(uri_, ": order ", o.key.order_id, ": sample arrays of different lengths"));
    }
    TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail,
                               UnpackOrderDetail(uri_, o.detail, o.key.order_id));
    rows.clear();
    for (size_t seq = 0; seq < n; ++seq) {
      if (stage_id && o.stage_ids[seq] != *stage_id) continue;
      rows.push_back(MakeSampleRow(*dict, o.key, detail, static_cast<int64_t>(seq),
                                   o.stage_ids[seq], o.latency_ns[seq], o.flags[seq]));
    }
    if (ordered) SortByStart(&rows);
    for (const SampleRow& r : rows) visit(r);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StampRow>> ClickHouseStoreReader::ReadStamps(
    int64_t run_id, int64_t order_id, std::optional<int64_t> instance) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(
      const std::string body,
      Select(absl::StrCat("SELECT toInt64(order_id), toInt64(instance), first_utc_ns, "
                          "toInt64(first_tsc), detail FROM orders WHERE run_id = ",
                          run_id, " AND order_id = ", IdLiteral(order_id),
                          instance ? absl::StrCat(" AND instance = ", *instance) : "",
                          " ORDER BY instance LIMIT 1 BY instance"),
             "reading an order's stamps"));
  RowBinaryCursor c(body);
  std::vector<StampRow> out;
  while (!c.at_end()) {
    OrderKeyFields key;
    key.order_id = c.Int64();
    key.instance = c.Int64();
    key.first_utc_ns = c.Int64();
    key.first_tsc = c.Int64();
    const std::string_view blob = c.Bytes();
    if (c.failed()) return Truncated("reading an order's stamps");
    TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail,
                               UnpackOrderDetail(uri_, blob, order_id));
    bool known = true;
    for (const store::PackedStamp& p : detail.stamps) {
      known = known && p.name_id < dict->names.size();
    }
    if (!known) {
      TICKTRACE_ASSIGN_OR_RETURN(dict, Dictionary(run_id, true));
    }
    std::vector<StampRow> rows = MakeStampRows(*dict, key, detail);
    out.insert(out.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  }
  return out;
}

}  // namespace clickhouse_reader
}  // namespace ticktrace::store::internal
