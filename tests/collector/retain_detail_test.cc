// --retain-detail and the detail's default size limit (collector/app/
// detail_limit.h), the store's size guard (store/sqlite/sqlite_size.h) and
// the projection line (collector/app/store_projection.h). Every expected
// value is worked out by hand in the comment beside it.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "collector/app/command_line.h"
#include "collector/app/detail_limit.h"
#include "collector/app/store_projection.h"
#include "collector/metrics/prometheus_text.h"
#include "common/size.h"
#include "gtest/gtest.h"
#include "store/sqlite/sqlite_size.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
using Size = DetailLimitSpec::Size;

DetailLimitSpec Parse(const std::string& text) {
  absl::StatusOr<DetailLimitSpec> spec = ParseDetailLimit(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status();
  return spec.value_or(DetailLimitSpec{});
}

TEST(RetainDetailFlag, NotGivenIsTheDefaultAndNoneKeepsAll) {
  EXPECT_EQ(Parse("").size, Size::kDefault);
  EXPECT_FALSE(Parse("").age_ns.has_value());
  EXPECT_EQ(Parse("none").size, Size::kNone);
  EXPECT_FALSE(Parse("none").age_ns.has_value());
}

TEST(RetainDetailFlag, Sizes) {
  EXPECT_EQ(Parse("50MB").size, Size::kBytes);
  EXPECT_EQ(Parse("50MB").bytes, 50'000'000u);         // 50 x 10^6
  EXPECT_EQ(Parse("2GB").bytes, 2'000'000'000u);       // 2 x 10^9
  EXPECT_EQ(Parse("512MiB").bytes, 536'870'912u);      // 512 x 2^20
  EXPECT_EQ(Parse("1TiB").bytes, 1'099'511'627'776u);  // 2^40
}

TEST(RetainDetailFlag, Shares) {
  EXPECT_EQ(Parse("10%").size, Size::kShare);
  EXPECT_DOUBLE_EQ(Parse("10%").share, 0.10);
  EXPECT_DOUBLE_EQ(Parse("2.5%").share, 0.025);
  EXPECT_DOUBLE_EQ(Parse("100%").share, 1.0);
}

TEST(RetainDetailFlag, AgesAloneKeepTheDefaultSize) {
  const DetailLimitSpec spec = Parse("8h");
  EXPECT_EQ(spec.size, Size::kDefault);
  EXPECT_EQ(spec.age_ns, 8 * 3600 * kSecondNs);  // 28800 s
  EXPECT_EQ(Parse("90").age_ns, 90 * kSecondNs);  // a bare number: seconds
}

TEST(RetainDetailFlag, AnAgeAndASize) {
  const DetailLimitSpec spec = Parse("8h,2GB");
  EXPECT_EQ(spec.size, Size::kBytes);
  EXPECT_EQ(spec.bytes, 2'000'000'000u);
  EXPECT_EQ(spec.age_ns, 8 * 3600 * kSecondNs);
  const DetailLimitSpec share = Parse("5%,30m");
  EXPECT_EQ(share.size, Size::kShare);
  EXPECT_DOUBLE_EQ(share.share, 0.05);
  EXPECT_EQ(share.age_ns, 30 * 60 * kSecondNs);
}

TEST(RetainDetailFlag, RefusesWhatIsNotALimit) {
  for (const char* bad : {"0%", "101%", "-5%", "x%", "0MB", "2G", "12 MB", "-1GB", "none,8h",
                          "8h,none", "1GB,2GB", "1GB,10%", "8h,9h", ",", "8h,", "3651d", "soon"}) {
    absl::StatusOr<DetailLimitSpec> spec = ParseDetailLimit(bad);
    EXPECT_FALSE(spec.ok()) << bad;
    if (!spec.ok()) {
      EXPECT_TRUE(absl::StrContains(spec.status().message(), "--retain-detail")) << bad;
    }
  }
}

TEST(RetainDetailFlag, TheCommandLineTakesIt) {
  CollectorFlags f;
  f.retain_detail = "8h,50MB";
  absl::StatusOr<CollectorOptions> o = OptionsFromFlags(f);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->detail_limit.size, Size::kBytes);
  EXPECT_EQ(o->detail_limit.bytes, 50'000'000u);
  EXPECT_EQ(o->store.retain_detail_ns, 8 * 3600 * kSecondNs);
  f.retain_detail = "2G";
  EXPECT_FALSE(OptionsFromFlags(f).ok());
}

TEST(DefaultDetailLimit, TenPercentOfTheUsableSpaceAtMostTenGB) {
  // 77 GB usable: 10% is 7.7 GB, under the cap.
  EXPECT_EQ(DefaultDetailLimitBytes(77'000'000'000), 7'700'000'000u);
  // 500 GB usable: 10% is 50 GB, so the cap: 10 GB.
  EXPECT_EQ(DefaultDetailLimitBytes(500'000'000'000), 10'000'000'000u);
  // Exactly 100 GB: 10% is the cap itself.
  EXPECT_EQ(DefaultDetailLimitBytes(100'000'000'000), 10'000'000'000u);
  // A small disk, 3 GB free: 300 MB.
  EXPECT_EQ(DefaultDetailLimitBytes(3'000'000'000), 300'000'000u);
  EXPECT_EQ(DefaultDetailLimitBytes(0), 0u);
}

TEST(DefaultDetailLimit, CountsTheStoresOwnFilesAsUsable) {
  // 20 GB free and a store of 5 GB from earlier runs: 10% of 25 GB = 2.5 GB.
  absl::StatusOr<DetailLimit> limit =
      ResolveDetailLimit(Parse(""), "/var/lib/ticktrace", 5'000'000'000, 20'000'000'000);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->bytes, 2'500'000'000u);
  EXPECT_TRUE(absl::StrContains(limit->origin, "default")) << limit->origin;
  EXPECT_TRUE(absl::StrContains(limit->origin, "/var/lib/ticktrace")) << limit->origin;
  // A share of the same: 4% of 25 GB = 1 GB.
  limit = ResolveDetailLimit(Parse("4%"), "/var/lib/ticktrace", 5'000'000'000, 20'000'000'000);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->bytes, 1'000'000'000u);
}

TEST(DefaultDetailLimit, ExplicitSizesAndNoneAndServers) {
  absl::StatusOr<DetailLimit> limit = ResolveDetailLimit(Parse("50MB"), "/tmp", 0, 1);
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(limit->bytes, 50'000'000u);  // whatever the free space
  limit = ResolveDetailLimit(Parse("none"), "/tmp", 0, 77'000'000'000);
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(limit->bytes, 0u);
  // A store that is not a local file (ClickHouse): no default, no share.
  limit = ResolveDetailLimit(Parse(""), "", 0, 0);
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(limit->bytes, 0u);
  EXPECT_FALSE(ResolveDetailLimit(Parse("10%"), "", 0, 0).ok());
}

TEST(SqliteSizeGuard, KeepsRoomForOneStepBesideTheLivePages) {
  store::SqliteSizeGuard guard;
  const uint64_t kMB = 1'000'000;
  // First check: no growth known yet; the WAL (4 MB) and -shm (32 kB) are room.
  guard.Observe(10 * kMB, {.db = 12 * kMB, .wal = 4 * kMB, .shm = 32'768});
  guard.AfterCheck(10 * kMB, {.db = 12 * kMB, .wal = 4 * kMB, .shm = 32'768});
  EXPECT_EQ(guard.headroom_bytes(), 4'032'768u);
  EXPECT_EQ(guard.LiveTarget(50 * kMB), 50 * kMB - 4'032'768);  // 45 967 232
  // A transaction added 3 MB; retirement's own transactions left a 6 MB WAL.
  guard.Observe(13 * kMB, {.db = 13 * kMB, .wal = 4 * kMB, .shm = 32'768});
  guard.AfterCheck(9 * kMB, {.db = 13 * kMB, .wal = 6 * kMB, .shm = 32'768});
  EXPECT_EQ(guard.headroom_bytes(), 3 * kMB + 6'032'768);        // 9 032 768
  EXPECT_EQ(guard.LiveTarget(50 * kMB), 50 * kMB - 9'032'768);  // 40 967 232
  // A smaller step does not shrink the room kept.
  guard.Observe(10 * kMB, {.db = 13 * kMB, .wal = 1 * kMB, .shm = 32'768});
  EXPECT_EQ(guard.headroom_bytes(), 9'032'768u);
  // A limit smaller than the room: retire everything.
  EXPECT_EQ(guard.LiveTarget(8 * kMB), 0u);
}

TEST(StoreProjection, LineWithHandComputedFigures) {
  // 1.6 GB/h = 444 444 B/s; a 2.0 GB limit holds 2e9 / 444 444 = 4500 s = 75 min.
  const DetailLimit limit{2'000'000'000, "default: 10% of /var/lib free space, at most 10.0 GB"};
  const std::string line = StoreProjection::Line(1.6e9 / 3600, limit, 70'000'000'000);
  EXPECT_EQ(line,
            "store: +1.60 GB/h at this rate (444 kB/s); detail limit 2.00 GB (default: 10% of "
            "/var/lib free space, at most 10.0 GB): detail kept for about the last 75 min");
  // No limit: 70 GB free at 444 444 B/s last 157 500 s = 43.75 h, printed "44 h".
  const std::string none =
      StoreProjection::Line(1.6e9 / 3600, DetailLimit{0, "--retain-detail none"}, 70'000'000'000);
  EXPECT_TRUE(absl::StrContains(none, "no detail size limit (--retain-detail none)")) << none;
  EXPECT_TRUE(absl::StrContains(none, "70.0 GB free last about 44 h")) << none;
}

TEST(StoreProjection, WarnsWhenTheFilesystemFillsBeforeTheLimit) {
  const DetailLimit limit{2'000'000'000, "--retain-detail 2GB"};
  // The store takes 0.5 GB and may grow by 1.5 GB; 1 GB free: warn.
  EXPECT_FALSE(StoreProjection::FillWarning(limit, "/data", 500'000'000, 1'000'000'000).empty());
  // 1.5 GB free: exactly enough, no warning.
  EXPECT_TRUE(StoreProjection::FillWarning(limit, "/data", 500'000'000, 1'500'000'000).empty());
  // No limit, or the free space unknown: nothing to compare.
  EXPECT_TRUE(StoreProjection::FillWarning(DetailLimit{0, "none"}, "/data", 0, 1).empty());
  EXPECT_TRUE(StoreProjection::FillWarning(limit, "/data", 0, std::nullopt).empty());
}

TEST(StoreProjection, GrowthIsLivePlusRetiredOverTheLastMinute) {
  StoreProjection p(DetailLimit{50'000'000, "--retain-detail 50MB"}, "/tmp", /*live=*/true);
  StoreSinkCounters c;
  c.store_size_known = true;
  std::vector<std::pair<std::string, int64_t>> counters;
  // 2 MB/s for 70 s: up to 50 MB live, then live stays at 40 MB while
  // retention frees 2 MB a second. The growth stays 2 MB/s throughout.
  std::string line;
  for (int s = 0; s <= 70; ++s) {
    const uint64_t written = 2'000'000ull * static_cast<uint64_t>(s);
    c.store_live_bytes = std::min<uint64_t>(written, 40'000'000);
    c.store_bytes_retired = written - c.store_live_bytes;
    c.store_disk_bytes = c.store_live_bytes + 4'000'000;
    counters.clear();
    const StoreProjection::Said said = p.Observe(s * kSecondNs, c, 1'000'000'000, &counters);
    if (s < 5) {
      EXPECT_FALSE(p.growth_bytes_per_s().has_value()) << s;
    }
    if (!said.line.empty()) {
      EXPECT_TRUE(line.empty()) << "a second line at " << s << " s: " << said.line;
      EXPECT_EQ(s, 60) << "the first line comes after a minute";
      line = said.line;
    }
  }
  ASSERT_TRUE(p.growth_bytes_per_s().has_value());
  EXPECT_DOUBLE_EQ(*p.growth_bytes_per_s(), 2e6);
  // 2 MB/s = 7.2 GB/h; 50 MB / 2 MB/s = 25 s.
  EXPECT_TRUE(absl::StrContains(line, "+7.20 GB/h at this rate (2.00 MB/s)")) << line;
  EXPECT_TRUE(absl::StrContains(line, "detail kept for about the last 25 s")) << line;
  std::map<std::string, int64_t> by_name(counters.begin(), counters.end());
  EXPECT_EQ(by_name["store_growth_bytes_per_s"], 2'000'000);
  EXPECT_EQ(by_name["store_detail_window_s"], 25);
  EXPECT_EQ(by_name["store_detail_limit_bytes"], 50'000'000);
  EXPECT_EQ(by_name["store_bytes"], 44'000'000);
}

TEST(StoreSizeMetrics, GaugesInTheirOwnBlockNotCounters) {
  metrics::MetricsSnapshot snap;
  snap.counters = {{"orders_retired", 1234},
                   {"store_bytes", 99'000'000},
                   {"store_detail_limit_bytes", 100'000'000},
                   {"store_detail_window_s", 6},
                   {"store_growth_bytes_per_s", 16'900'000}};
  const std::string text = metrics::RenderSnapshot(snap, "v", "c");
  for (const char* line :
       {"# TYPE ticktrace_store_bytes gauge\nticktrace_store_bytes 99000000\n",
        "# TYPE ticktrace_store_growth_bytes_per_second gauge\n"
        "ticktrace_store_growth_bytes_per_second 16900000\n",
        "# TYPE ticktrace_store_detail_limit_bytes gauge\n"
        "ticktrace_store_detail_limit_bytes 100000000\n",
        "# TYPE ticktrace_store_detail_window_seconds gauge\n"
        "ticktrace_store_detail_window_seconds 6\n",
        "# TYPE ticktrace_orders_retired_total counter\nticktrace_orders_retired_total 1234\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("ticktrace_store_bytes_total"), std::string::npos) << text;
}

TEST(SizeSyntax, FormatBytesThreeDigits) {
  EXPECT_EQ(FormatBytes(812), "812 B");
  EXPECT_EQ(FormatBytes(53'240), "53.2 kB");
  EXPECT_EQ(FormatBytes(1.6e9), "1.60 GB");
  EXPECT_EQ(FormatBytes(999'999), "1.00 MB");
  EXPECT_EQ(FormatBytes(123'456'789'000), "123 GB");
}

}  // namespace
}  // namespace ticktrace::collect
