// The compact order block (store/sqlite/sqlite_block_codec.h): a block of two
// orders encodes to the bytes worked out by hand below and decodes back; a
// block of the older encoding (a JSON array and packed details, as the
// writer wrote them before) still parses, and the views `orders` and
// `stage_latencies` of a real store give the same rows for both encodings
// of the same orders. Bad bytes are refused, never read past.

#include <sqlite3.h>

#include <string>
#include <vector>

#include "store/common/detail.h"
#include "store/sqlite/sqlite_block_codec.h"
#include "store/sqlite/sqlite_block_sql.h"
#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_schema.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

constexpr int64_t kBlockStart = 1000;

// Two orders of two stamps ("a" name 2, "b" name 3; process 1, thread 9,
// core 0) and one sample (stage 1, processes 1, cores 0).
//   A: id 5, first UTC 1010, first TSC 100, stamps at +0 and +14 ticks,
//      latency 7 ns, total 7 ns.
//   B: id 6, first UTC 1012, first TSC 104, stamps at +0 and +10 ticks, the
//      second flagged 4, latency 5 ns, total 5 ns.
std::vector<CompactOrder> TwoOrders() {
  std::vector<CompactOrder> orders(2);
  const int64_t ids[2] = {5, 6}, utc[2] = {1010, 1012}, tsc[2] = {100, 104}, hop[2] = {14, 10},
                latency[2] = {7, 5};
  for (int i = 0; i < 2; ++i) {
    CompactOrder& o = orders[i];
    o.order_id = ids[i];
    o.first_utc_ns = utc[i];
    o.first_tsc = tsc[i];
    o.total_ns = latency[i];
    o.complete = true;
    o.cells = {{.stage_id = 1, .latency_ns = latency[i], .flags = 0}};
    o.detail.stamps = {
        {.name_id = 2, .process_id = 1, .tid = 9, .cpu = 0, .tsc_delta = 0},
        {.name_id = 3, .process_id = 1, .tid = 9, .cpu = 0, .tsc_delta = hop[i],
         .flags = i == 1 ? 4u : 0u}};
    o.detail.samples = {
        {.start_delta_ns = 0, .process_begin = 1, .process_end = 1, .cpu_begin = 0, .cpu_end = 0}};
  }
  return orders;
}

// By hand, from the layout in sqlite_block_codec.cc (z(v) = zigzag: 2v for
// v >= 0):
//   02                    version
//   02                    2 orders
//   02                    2 stamp table entries:
//   02 01 09 01 00 00       name 2, process 1, tid 9, cpu 0 + 1, no cpu_end, not a span
//   03 01 09 01 00 00       name 3, the same
//   01                    1 sample table entry:
//   01 02 02 01 01          stage 1, processes 1 + 1, cores 0 + 1
//   A: 14                 bits: reference 0 | complete 4 | total 16 = 20
//      0a                 z(5 - 0) = 10
//      14                 z(1010 - 1000) = 20
//      c8 01              z(100 - 0) = 200 = 0x48 | 0x80, then 1
//      00                 z(total 7 - latency 7)
//      01 00 0e 00        1 sample: entry 0, no flags; z(7) = 14; z(start 0 - 0)
//      02 00 00 02 1c     2 stamps: entry 0, z(0); entry 1 (1 << 1), z(14 - 0) = 28
//   B: 14 02              bits 20; z(6 - 5) = 2 (reference 0 now holds 5)
//      04 08 00           z(1012 - 1010) = 4; z(104 - 100) = 8; z(5 - 5)
//      01 00 0a 00        1 sample: entry 0; z(5) = 10; z(start 0 - (0 + 0))
//      02 00 00 03 14 04  2 stamps: entry 0, z(0); entry 1 flagged (1 << 1 | 1),
//                         z(10 - 0) = 20, flags 4
const unsigned char kTwoOrdersBytes[] = {
    0x02, 0x02, 0x02, 0x02, 0x01, 0x09, 0x01, 0x00, 0x00, 0x03, 0x01, 0x09, 0x01, 0x00,
    0x00, 0x01, 0x01, 0x02, 0x02, 0x01, 0x01, 0x14, 0x0a, 0x14, 0xc8, 0x01, 0x00, 0x01,
    0x00, 0x0e, 0x00, 0x02, 0x00, 0x00, 0x02, 0x1c, 0x14, 0x02, 0x04, 0x08, 0x00, 0x01,
    0x00, 0x0a, 0x00, 0x02, 0x00, 0x00, 0x03, 0x14, 0x04};

std::string Bytes(const unsigned char* p, size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}

std::string Hex(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    constexpr char kHex[] = "0123456789abcdef";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
    out.push_back(' ');
  }
  return out;
}

TEST(BlockCodec, TwoOrdersEncodeToTheBytesWorkedOutByHand) {
  std::string bytes;
  EncodeCompactBlock(kBlockStart, TwoOrders(), &bytes);
  EXPECT_EQ(Hex(bytes), Hex(Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes))));
}

TEST(BlockCodec, TheHandWorkedBytesDecodeToTheOrders) {
  absl::StatusOr<std::vector<CompactOrder>> got =
      DecodeCompactBlock(7, kBlockStart, Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes)));
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<CompactOrder> want = TwoOrders();
  ASSERT_EQ(got->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const CompactOrder& g = (*got)[i];
    const CompactOrder& w = want[i];
    EXPECT_EQ(g.order_id, w.order_id);
    EXPECT_EQ(g.instance, 0);
    EXPECT_FALSE(g.parent_order_id.has_value());
    EXPECT_EQ(g.first_utc_ns, w.first_utc_ns);
    EXPECT_EQ(g.first_tsc, w.first_tsc);
    EXPECT_EQ(g.total_ns, w.total_ns);
    EXPECT_TRUE(g.complete);
    EXPECT_EQ(g.missing, "");
    ASSERT_EQ(g.cells.size(), 1u);
    EXPECT_EQ(g.cells[0].stage_id, 1u);
    EXPECT_EQ(g.cells[0].latency_ns, w.cells[0].latency_ns);
    // The packed detail is the same bytes as the order's own (version 1).
    std::string gd, wd;
    PackDetail(g.detail, &gd);
    PackDetail(w.detail, &wd);
    EXPECT_EQ(Hex(gd), Hex(wd));
  }
  EXPECT_EQ((*got)[0].flags(), 0u);
  EXPECT_EQ((*got)[1].flags(), 4u);
}

// Every field that has a bit of its own, ids far apart and ids at the ends
// of the range, spans and negative deltas.
TEST(BlockCodec, RareFieldsRoundTrip) {
  std::vector<CompactOrder> orders(4);
  orders[0].order_id = -1;  // 2^64 - 1
  orders[0].instance = 3;
  orders[0].parent_order_id = 17;
  orders[0].first_utc_ns = kBlockStart - 50;
  orders[0].first_tsc = 1'000'000'000'000;
  orders[0].missing = "b,c\"";
  orders[0].detail.first_tsc_utc_delta_ns = -12;
  orders[0].cells = {{.stage_id = 9, .latency_ns = -3, .flags = 1u << 31}};
  orders[0].detail.samples = {{.start_delta_ns = 40}};
  orders[0].detail.stamps = {{.name_id = 70000, .is_span = true, .process_id = 4,
                              .tid = 123456, .cpu = 63, .cpu_end = 2, .tsc_delta = 5,
                              .duration_ns = -9, .flags = 2}};
  orders[1].order_id = (1ll << 40) + 1;
  orders[1].first_utc_ns = kBlockStart + 999'999'999;
  orders[1].first_tsc = 5;
  orders[2].order_id = INT64_MIN;
  orders[2].first_utc_ns = kBlockStart;
  orders[3].order_id = (1ll << 40) + 2;
  orders[3].first_utc_ns = kBlockStart + 1;
  std::string bytes;
  EncodeCompactBlock(kBlockStart, orders, &bytes);
  absl::StatusOr<std::vector<CompactOrder>> got = DecodeCompactBlock(1, kBlockStart, bytes);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const CompactOrder& g = (*got)[i];
    const CompactOrder& w = orders[i];
    EXPECT_EQ(g.order_id, w.order_id) << i;
    EXPECT_EQ(g.instance, w.instance) << i;
    EXPECT_EQ(g.parent_order_id, w.parent_order_id) << i;
    EXPECT_EQ(g.first_utc_ns, w.first_utc_ns) << i;
    EXPECT_EQ(g.first_tsc, w.first_tsc) << i;
    EXPECT_EQ(g.total_ns, w.total_ns) << i;
    EXPECT_EQ(g.complete, w.complete) << i;
    EXPECT_EQ(g.missing, w.missing) << i;
    std::string gd, wd;
    PackDetail(g.detail, &gd);
    PackDetail(w.detail, &wd);
    EXPECT_EQ(Hex(gd), Hex(wd)) << i;
    ASSERT_EQ(g.cells.size(), w.cells.size()) << i;
    for (size_t c = 0; c < g.cells.size(); ++c) {
      EXPECT_EQ(g.cells[c].stage_id, w.cells[c].stage_id);
      EXPECT_EQ(g.cells[c].latency_ns, w.cells[c].latency_ns);
      EXPECT_EQ(g.cells[c].flags, w.cells[c].flags);
    }
  }
}

TEST(BlockCodec, BadBytesAreRefused) {
  const std::string good = Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes));
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeCompactBlock(1, 0, good.substr(0, n)).ok()) << "cut at " << n;
  }
  EXPECT_FALSE(DecodeCompactBlock(1, 0, good + std::string(1, '\0')).ok());
  std::string bad_index = good;
  bad_index[34] = 0x04;  // A's second stamp names entry 2 of 2
  EXPECT_FALSE(DecodeCompactBlock(1, 0, bad_index).ok());
  std::string huge_count = good;
  huge_count[1] = 0x7f;  // 127 orders in 51 bytes
  EXPECT_FALSE(DecodeCompactBlock(1, 0, huge_count).ok());
}

// The same two orders as the writer encoded them before compact blocks: the
// JSON text written by hand from docs/store.md's element layout, the packed
// details (version 1) end to end.
std::string OldJson(const std::string& detail_a, const std::string& detail_b) {
  return "[[5,0,null,10,100,7,1,null,0,[[1,7,0]],0," + std::to_string(detail_a.size()) +
         "],[6,0,null,12,104,5,1,null,4,[[1,5,0]]," + std::to_string(detail_a.size()) + "," +
         std::to_string(detail_b.size()) + "]]";
}

TEST(BlockCodec, OldJsonBlocksStillParseToTheSameOrders) {
  const std::vector<CompactOrder> want = TwoOrders();
  std::string da, db;
  PackDetail(want[0].detail, &da);
  PackDetail(want[1].detail, &db);
  absl::StatusOr<std::vector<BlockOrder>> old = ParseBlock(3, kBlockStart, OldJson(da, db), da + db);
  absl::StatusOr<std::vector<BlockOrder>> compact =
      ParseBlock(3, kBlockStart, Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes)), "");
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_TRUE(compact.ok()) << compact.status();
  ASSERT_EQ(old->size(), 2u);
  ASSERT_EQ(compact->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const BlockOrder& o = (*old)[i];
    const BlockOrder& c = (*compact)[i];
    EXPECT_EQ(o.order_key, 3 * 256 + static_cast<int64_t>(i));
    EXPECT_EQ(c.order_key, o.order_key);
    EXPECT_EQ(c.order_id, o.order_id);
    EXPECT_EQ(c.first_utc_ns, o.first_utc_ns);
    EXPECT_EQ(c.first_tsc, o.first_tsc);
    EXPECT_EQ(c.total_ns, o.total_ns);
    EXPECT_EQ(c.flags, o.flags);
    EXPECT_EQ(Hex(c.detail), Hex(o.detail));
  }
  absl::StatusOr<std::vector<BlockId>> ids =
      ParseBlockIds(3, Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes)));
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[1].order_id, 6);
  EXPECT_EQ((*ids)[1].first_tsc, 104);
  // The JSON the views read for the compact block is the old block's text.
  absl::StatusOr<std::string> json = BlockOrdersJson(Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes)));
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, OldJson(da, db));
}

std::vector<std::string> Rows(sqlite3* db, const char* sql) {
  std::vector<std::string> rows;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    return rows;
  }
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const unsigned char* t = sqlite3_column_text(s, i);
      row += t ? reinterpret_cast<const char*>(t) : "NULL";
      row += '|';
    }
    rows.push_back(row);
  }
  sqlite3_finalize(s);
  return rows;
}

// A fresh schema in memory, block 1 in the old encoding, block 2 compact:
// the views give the same rows for both but the key.
TEST(BlockCodec, TheViewsReadBothEncodingsAlike) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_TRUE(RegisterBlockSqlFunctions(db).ok());
  ASSERT_EQ(sqlite3_exec(db, SqliteSchemaSql(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO runs(run_id, session, host, started_utc_ns, tsc_hz, "
                         "calibration_source, anchor_tsc, anchor_utc_ns, environment, settings, "
                         "pipeline, pipeline_learned) VALUES(1,'s','h',0,2e9,'t',0,0,'','','',0);"
                         "INSERT INTO stages VALUES(1, 1, 'a->b', 'hop');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  const std::vector<CompactOrder> want = TwoOrders();
  std::string da, dbytes;
  PackDetail(want[0].detail, &da);
  PackDetail(want[1].detail, &dbytes);
  const std::string old_json = OldJson(da, dbytes), old_detail = da + dbytes;
  const std::string compact = Bytes(kTwoOrdersBytes, sizeof(kTwoOrdersBytes));
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO order_blocks(block_key, run_id, start_utc_ns, orders, "
                               "detail) VALUES(?, 1, 1000, ?, ?)",
                               -1, &s, nullptr),
            SQLITE_OK);
  sqlite3_bind_int(s, 1, 1);
  sqlite3_bind_text(s, 2, old_json.data(), static_cast<int>(old_json.size()), SQLITE_STATIC);
  sqlite3_bind_blob(s, 3, old_detail.data(), static_cast<int>(old_detail.size()), SQLITE_STATIC);
  ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_reset(s);
  sqlite3_bind_int(s, 1, 2);
  sqlite3_bind_blob(s, 2, compact.data(), static_cast<int>(compact.size()), SQLITE_STATIC);
  sqlite3_bind_blob(s, 3, "", 0, SQLITE_STATIC);
  ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  const std::vector<std::string> orders =
      Rows(db,
           "SELECT order_key / 256, order_id, instance, parent_order_id, first_utc_ns, first_tsc, "
           "total_ns, complete, missing, flags, samples, hex(detail) FROM orders "
           "ORDER BY order_id, order_key");
  ASSERT_EQ(orders.size(), 4u);
  // Order 5 from block 1, then from block 2; the same for order 6.
  EXPECT_EQ(orders[0].substr(0, 2), "1|");
  EXPECT_EQ(orders[1].substr(0, 2), "2|");
  EXPECT_EQ(orders[0].substr(2), orders[1].substr(2));
  EXPECT_EQ(orders[2].substr(2), orders[3].substr(2));
  EXPECT_EQ(orders[0].rfind("1|5|0|NULL|1010|100|7|1|NULL|0|[[1,7,0]]|", 0), 0u) << orders[0];
  const std::vector<std::string> latencies =
      Rows(db,
           "SELECT order_key / 256, order_id, stage, latency_ns, flags, first_utc_ns, seq FROM "
           "stage_latencies ORDER BY order_id, order_key");
  ASSERT_EQ(latencies.size(), 4u);
  EXPECT_EQ(latencies[0], "1|5|a->b|7|0|1010|0|");
  EXPECT_EQ(latencies[1], "2|5|a->b|7|0|1010|0|");
  EXPECT_EQ(latencies[3], "2|6|a->b|5|0|1012|0|");
  sqlite3_close(db);
}

}  // namespace
}  // namespace ticktrace::store
