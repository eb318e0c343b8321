#include "collector/app/options.h"

#include <pwd.h>
#include <sched.h>

#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect {

absl::StatusOr<std::vector<uint32_t>> ParseUidList(absl::string_view text) {
  std::vector<uint32_t> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::string p(part);
    uint32_t uid = 0;
    if (!p.empty() && p.find_first_not_of("0123456789") == std::string::npos) {
      if (!absl::SimpleAtoi(p, &uid) || uid == UINT32_MAX) {
        return absl::InvalidArgumentError(absl::StrCat("--allow-uid '", p, "': not a uid"));
      }
    } else {
      const passwd* pw = p.empty() ? nullptr : getpwnam(p.c_str());
      if (pw == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("--allow-uid '", p, "': no such user"));
      }
      uid = pw->pw_uid;
    }
    out.push_back(uid);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParsePipeline(absl::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    if (part.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--pipeline '", text, "': empty stage name"));
    }
    if (part.size() > abi::kTagNameMax) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--pipeline: stage '", part, "' is longer than ", abi::kTagNameMax, " bytes"));
    }
    if (!seen.insert(std::string(part)).second) {
      return absl::InvalidArgumentError(absl::StrCat("--pipeline: stage '", part, "' repeated"));
    }
    out.emplace_back(part);
  }
  return out;
}

absl::Status ValidateSession(absl::string_view session) {
  if (session.empty() || session.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--session '", session, "': must be 1 to 64 characters"));
  }
  for (char c : session) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("--session '", session, "': only letters, digits, '_' and '-' allowed"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const CollectorOptions& o) {
  if (absl::Status s = ValidateSession(o.session); !s.ok()) return s;
  if (o.order_timeout_ms <= 0 || o.order_timeout_ms > 24ll * 3600 * 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--order-timeout-ms ", o.order_timeout_ms, ": must be between 1 and 86400000"));
  }
  if (!(o.duration_s >= 0) || std::isinf(o.duration_s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--duration-s ", o.duration_s, ": must be a number >= 0"));
  }
  if (o.tsc_hz != 0 && !(o.tsc_hz >= 1e6 && o.tsc_hz <= 1e11)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tsc-hz ", o.tsc_hz, ": must be between 1e6 and 1e11 ticks per second"));
  }
  if (o.skew_interval_s < 0 || o.skew_interval_s > 7 * 24 * 3600) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--skew-interval ", o.skew_interval_s, "s: must be between 0 (at start only) and 7 days"));
  }
  if (o.skew_cores != "allowed" && o.skew_cores != "producers") {
    return absl::InvalidArgumentError(
        absl::StrCat("--skew-cores '", o.skew_cores, "': must be 'allowed' or 'producers'"));
  }
  if (o.anchor_interval.count() <= 0) {
    return absl::InvalidArgumentError("anchor interval: must be at least 1 ms");
  }
  if (!o.raw_path.empty() && !o.replay_path.empty()) {
    return absl::InvalidArgumentError("--raw and --replay cannot be used together");
  }
  const std::optional<std::string> store_file =
      o.store_uri.has_value() ? o.store_uri->local_file() : std::nullopt;
  if (!o.raw_path.empty() && o.raw_path == store_file) {
    return absl::InvalidArgumentError("--raw and --db name the same file");
  }
  if (!o.replay_path.empty() && o.replay_path == store_file) {
    return absl::InvalidArgumentError("--replay and --db name the same file");
  }
  if (o.cpu >= 0 || o.cpu < -1) {
    // Only a core of this process's allowed set (taskset, cgroup cpuset).
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (o.cpu < 0 || o.cpu >= CPU_SETSIZE ||
        ::sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || !CPU_ISSET(o.cpu, &allowed)) {
      std::string cores;
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &allowed)) absl::StrAppend(&cores, cores.empty() ? "" : ",", c);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "--cpu ", o.cpu, ": not a core this collector may run on (allowed: ", cores, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::collect
