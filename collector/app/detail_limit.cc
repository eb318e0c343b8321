#include "collector/app/detail_limit.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/duration.h"
#include "common/size.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kMaxAgeNs = int64_t{3650} * 86'400 * 1'000'000'000;

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--retain-detail '", text, "': ", why,
      " (expected none, an age like 8h, a size like 2GB or 512MiB, a share like 10%, or an age "
      "and a size: 8h,2GB)"));
}

std::string Percent(double share) {
  const double p = share * 100;
  return p == std::floor(p) ? absl::StrCat(static_cast<int64_t>(p), "%") : absl::StrCat(p, "%");
}

}  // namespace

absl::StatusOr<DetailLimitSpec> ParseDetailLimit(absl::string_view text) {
  DetailLimitSpec spec;
  spec.text = std::string(text);
  if (text.empty()) return spec;
  if (text == "none") {
    spec.size = DetailLimitSpec::Size::kNone;
    return spec;
  }
  for (absl::string_view term : absl::StrSplit(text, ',')) {
    if (term.empty()) return Bad(text, "an empty term");
    if (term == "none") return Bad(text, "none cannot be combined with a limit");
    const bool is_size_term = term.back() == '%' || ParseSizeBytes(term).has_value();
    if (is_size_term && spec.size != DetailLimitSpec::Size::kDefault) {
      return Bad(text, "more than one size");
    }
    if (term.back() == '%') {
      double percent = 0;
      if (!absl::SimpleAtod(term.substr(0, term.size() - 1), &percent) ||
          !(percent > 0 && percent <= 100)) {
        return Bad(text, "a share must be more than 0% and at most 100%");
      }
      spec.size = DetailLimitSpec::Size::kShare;
      spec.share = percent / 100;
      continue;
    }
    if (const std::optional<uint64_t> bytes = ParseSizeBytes(term); bytes.has_value()) {
      spec.size = DetailLimitSpec::Size::kBytes;
      spec.bytes = *bytes;
      continue;
    }
    if (spec.age_ns.has_value()) return Bad(text, "more than one age");
    // An age, as --retain takes it (a bare number: seconds).
    absl::StatusOr<int64_t> ns =
        ParseDurationNs("--retain-detail", term, {.bare_number_is_seconds = true});
    if (!ns.ok()) return Bad(text, absl::StrCat("'", term, "' is neither an age nor a size"));
    if (*ns > kMaxAgeNs) return Bad(text, "an age of at most 3650d");
    spec.age_ns = *ns;
  }
  return spec;
}

uint64_t DefaultDetailLimitBytes(uint64_t usable_bytes) {
  const auto share = static_cast<uint64_t>(static_cast<double>(usable_bytes) * kDefaultDetailShare);
  return std::min(share, kDefaultDetailCapBytes);
}

absl::StatusOr<DetailLimit> ResolveDetailLimit(const DetailLimitSpec& spec,
                                               const std::string& directory,
                                               uint64_t store_bytes, uint64_t free_bytes) {
  const uint64_t usable = free_bytes + store_bytes;
  switch (spec.size) {
    case DetailLimitSpec::Size::kNone:
      return DetailLimit{0, "--retain-detail none"};
    case DetailLimitSpec::Size::kBytes:
      return DetailLimit{spec.bytes, absl::StrCat("--retain-detail ", spec.text)};
    case DetailLimitSpec::Size::kShare:
      if (directory.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--retain-detail ", spec.text,
            ": a share needs a store on a local filesystem; give a size (e.g. 200GB)"));
      }
      return DetailLimit{
          static_cast<uint64_t>(static_cast<double>(usable) * spec.share),
          absl::StrCat("--retain-detail ", spec.text, ": ", Percent(spec.share), " of ",
                       directory, "'s free space and the store")};
    case DetailLimitSpec::Size::kDefault:
      break;
  }
  if (directory.empty()) {
    return DetailLimit{0, "no default size limit: the store's server keeps its own disk"};
  }
  return DetailLimit{DefaultDetailLimitBytes(usable),
                     absl::StrCat("default: ", Percent(kDefaultDetailShare), " of ", directory,
                                  "'s free space and the store, at most ",
                                  FormatBytes(static_cast<double>(kDefaultDetailCapBytes)))};
}

std::optional<uint64_t> FreeBytes(const std::string& directory) {
  struct statvfs st{};
  if (::statvfs(directory.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace ticktrace::collect
