#include "collector/app/store_projection.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/size.h"
#include "ticktrace/store/names.h"

namespace ticktrace::collect {
namespace {

// "2.9 s", "38 min", "7.5 h", "3.2 d".
std::string Span(double s) {
  if (s < 90) return absl::StrFormat("%.2g s", s);
  if (s < 90 * 60) return absl::StrFormat("%.0f min", s / 60);
  if (s < 48 * 3600) return absl::StrFormat("%.2g h", s / 3600);
  return absl::StrFormat("%.2g d", s / 86400);
}

void Put(std::vector<std::pair<std::string, int64_t>>* counters, store::Counter c, double v) {
  counters->emplace_back(std::string(store::CounterName(c)), std::llround(v));
}

}  // namespace

StoreProjection::StoreProjection(DetailLimit limit, std::string directory, bool live)
    : limit_(std::move(limit)), directory_(std::move(directory)), live_(live) {}

StoreProjection::Said StoreProjection::AtStart(uint64_t store_bytes,
                                                std::optional<uint64_t> free_bytes) const {
  Said said;
  said.line =
      limit_.bytes > 0
          ? absl::StrCat("store: detail limit ", FormatBytes(static_cast<double>(limit_.bytes)),
                         " (", limit_.origin,
                         "): the oldest detail is retired beyond it, every interval's "
                         "statistics stay")
          : absl::StrCat("store: no detail size limit (", limit_.origin, ")");
  said.warning = FillWarning(limit_, directory_, store_bytes, free_bytes);
  return said;
}

std::string StoreProjection::FillWarning(const DetailLimit& limit, const std::string& directory,
                                         uint64_t store_bytes,
                                         std::optional<uint64_t> free_bytes) {
  if (!free_bytes.has_value() || limit.bytes == 0 || limit.bytes <= store_bytes ||
      *free_bytes >= limit.bytes - store_bytes) {
    return "";
  }
  return absl::StrCat("warning: store: ", directory, " has ",
                      FormatBytes(static_cast<double>(*free_bytes)), " free, less than the ",
                      FormatBytes(static_cast<double>(limit.bytes - store_bytes)),
                      " the store may still grow by under its detail limit: the filesystem "
                      "would fill first; lower --retain-detail or free space");
}

std::optional<double> StoreProjection::growth_bytes_per_s() const {
  if (samples_.size() < 2) return std::nullopt;
  const auto& [t0, b0] = samples_.front();
  const auto& [t1, b1] = samples_.back();
  if (t1 - t0 < kMinSpanNs) return std::nullopt;
  return (static_cast<double>(b1) - static_cast<double>(b0)) / (static_cast<double>(t1 - t0) * 1e-9);
}

std::string StoreProjection::Line(double growth_bytes_per_s, const DetailLimit& limit,
                                   std::optional<uint64_t> free_bytes) {
  std::string out = absl::StrCat("store: +", FormatBytes(growth_bytes_per_s * 3600), "/h at this rate (",
                                 FormatBytes(growth_bytes_per_s), "/s); ");
  if (limit.bytes > 0) {
    absl::StrAppend(&out, "detail limit ", FormatBytes(static_cast<double>(limit.bytes)), " (",
                    limit.origin, ")");
    if (growth_bytes_per_s > 0) {
      absl::StrAppend(&out, ": detail kept for about the last ",
                      Span(static_cast<double>(limit.bytes) / growth_bytes_per_s));
    }
  } else {
    absl::StrAppend(&out, "no detail size limit (", limit.origin, ")");
    if (free_bytes.has_value() && growth_bytes_per_s > 0) {
      absl::StrAppend(&out, ": the filesystem's ", FormatBytes(static_cast<double>(*free_bytes)),
                      " free last about ",
                      Span(static_cast<double>(*free_bytes) / growth_bytes_per_s));
    }
  }
  return out;
}

StoreProjection::Said StoreProjection::Observe(
    int64_t now_ns, const StoreSinkCounters& sink, std::optional<uint64_t> free_bytes,
    std::vector<std::pair<std::string, int64_t>>* counters) {
  Said said;
  if (!live_ || !sink.store_size_known) return said;
  if (!sampled_) {
    sampled_ = true;
    next_line_ns_ = now_ns + kFirstLineNs;
  }
  samples_.emplace_back(now_ns, sink.store_live_bytes + sink.store_bytes_retired);
  while (samples_.size() > 2 && now_ns - samples_[1].first >= kWindowNs) samples_.pop_front();
  Put(counters, store::Counter::kStoreDetailLimitBytes, static_cast<double>(limit_.bytes));
  Put(counters, store::Counter::kStoreBytes, static_cast<double>(sink.store_disk_bytes));
  const std::optional<double> growth = growth_bytes_per_s();
  if (growth.has_value()) {
    Put(counters, store::Counter::kStoreGrowthBytesPerS, *growth);
    if (limit_.bytes > 0 && *growth > 0) {
      Put(counters, store::Counter::kStoreDetailWindowS,
          static_cast<double>(limit_.bytes) / *growth);
    }
  }
  const std::string warning = FillWarning(limit_, directory_, sink.store_disk_bytes, free_bytes);
  if (!warned_) said.warning = warning;
  warned_ = !warning.empty();  // said again once it cleared and came back
  if (now_ns >= next_line_ns_ && growth.has_value()) {
    said.line = Line(*growth, limit_, free_bytes);
    next_line_ns_ = now_ns + kLineEveryNs;
  }
  return said;
}

absl::StatusOr<StoreProjection> StartStoreProjection(const DetailLimitSpec& spec,
                                                     store::Writer& store, bool live,
                                                     StoreSinkOptions* sink) {
  const std::string directory = store.LocalDirectory();
  const std::optional<store::StoreSize> size = store.Size();
  const uint64_t store_bytes = size.has_value() ? size->disk_bytes : 0;
  const std::optional<uint64_t> free_bytes =
      directory.empty() ? std::nullopt : FreeBytes(directory);
  absl::StatusOr<DetailLimit> limit =
      ResolveDetailLimit(spec, directory, store_bytes, free_bytes.value_or(0));
  if (!limit.ok()) return limit.status();
  if (spec.size == DetailLimitSpec::Size::kDefault && sink->retain_detail_bytes > 0) {
    limit->bytes = sink->retain_detail_bytes;
    limit->origin = "set by the embedding program";
  }
  if (spec.size == DetailLimitSpec::Size::kDefault && !free_bytes.has_value() &&
      !directory.empty()) {
    limit->bytes = kDefaultDetailCapBytes;
    limit->origin = absl::StrCat("default: ", directory, "'s free space unknown, so the cap");
  }
  sink->retain_detail_bytes = limit->bytes;
  return StoreProjection(*std::move(limit), directory, live);
}

}  // namespace ticktrace::collect
