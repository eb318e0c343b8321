#include "collector/app/run_info.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/name_text.h"

namespace ticktrace::collect {
namespace {

using nlohmann::json;

json EnvironmentArray(const std::vector<EnvironmentNote>& env) {
  json a = json::array();
  for (const EnvironmentNote& e : env) {
    a.push_back({{"name", e.name}, {"value", e.value}, {"meaning", e.meaning},
                 {"warning", e.warning}});
  }
  return a;
}

json Settings(const RunInfo& r) {
  return {{"pipeline", r.pipeline},
          {"order_timeout_ms", r.order_timeout_ms},
          {"include_flagged", r.include_flagged},
          {"learn_orders", r.learn_orders},
          {"max_open_orders", r.max_open_orders},
          {"source", r.mode},
          {"linger_ms", r.linger_ms()},
          {"correct_skew", r.correct_skew},
          {"skew_interval_s", r.skew_interval_s},
          {"skew_cores", r.skew_cores},
          {"anchor_interval_ms", r.anchor_interval_ms}};
}

json CoresArray(const std::vector<CoreSkew>& cores) {
  json a = json::array();
  for (const CoreSkew& c : cores) {
    a.push_back({{"cpu", c.cpu}, {"offset_ns", c.offset_ns}, {"bound_ns", c.bound_ns},
                 {"consistent", c.consistent}, {"measured_at_utc_ns", c.measured_at_utc_ns}});
  }
  return a;
}

absl::StatusOr<std::vector<CoreSkew>> ParseCores(const json& array) {
  std::vector<CoreSkew> out;
  for (const json& c : array) {
    CoreSkew k;
    k.cpu = c.at("cpu").get<int>();
    k.offset_ns = c.at("offset_ns").get<double>();
    k.bound_ns = c.at("bound_ns").get<double>();
    k.consistent = c.value("consistent", true);
    k.measured_at_utc_ns = c.value("measured_at_utc_ns", int64_t{0});
    if (k.cpu < 0 || k.cpu >= (1 << 20) || !std::isfinite(k.offset_ns) ||
        !(k.bound_ns >= 0 && std::isfinite(k.bound_ns))) {
      return absl::InvalidArgumentError("run info: impossible core offset");
    }
    out.push_back(k);
  }
  return out;
}

}  // namespace

std::string RunInfo::EnvironmentJson() const { return EnvironmentArray(environment).dump(); }
std::string RunInfo::SettingsJson() const { return Settings(*this).dump(); }

std::string RunInfo::ToJson() const {
  json j = {{"session", session},
            {"host", host},
            {"started_utc_ns", started_utc_ns},
            {"tsc_hz", tsc_hz},
            {"calibration_source", calibration_source},
            {"rounds_used", rounds_used},
            {"rounds_discarded", rounds_discarded},
            {"kernel_source", kernel_source},
            {"anchor_tsc", anchor_tsc},
            {"anchor_utc_ns", anchor_utc_ns},
            {"environment", EnvironmentArray(environment)},
            {"settings", Settings(*this)}};
  if (spread_ppm) j["spread_ppm"] = *spread_ppm;
  if (kernel_tsc_hz) j["kernel_tsc_hz"] = *kernel_tsc_hz;
  if (tsc_step_ns) j["tsc_step_ns"] = *tsc_step_ns;
  if (measured_tsc_hz) j["measured_tsc_hz"] = *measured_tsc_hz;
  if (!cores.empty()) j["cores"] = CoresArray(cores);
  json clocks = {{"anchor_error_ns", external_clocks.anchor_error_ns},
                 {"realtime_error_ns", external_clocks.realtime_error_ns}};
  if (external_clocks.phc_error_ns) clocks["phc_error_ns"] = *external_clocks.phc_error_ns;
  if (external_clocks.exchange_error_ns) {
    clocks["exchange_error_ns"] = *external_clocks.exchange_error_ns;
  }
  j["external_clocks"] = clocks;
  return j.dump();
}

absl::StatusOr<RunInfo> RunInfo::FromJson(std::string_view text) {
  RunInfo r;
  try {
    const json j = json::parse(text.begin(), text.end());
    if (!j.is_object()) return absl::InvalidArgumentError("run info: not a JSON object");
    // An archive to replay is anyone's: its names are escaped like all names
    // (common/name_text.h) before they are printed or stored.
    r.session = EscapeName(j.value("session", ""));
    r.host = EscapeName(j.value("host", ""));
    r.started_utc_ns = j.value("started_utc_ns", int64_t{0});
    r.tsc_hz = j.at("tsc_hz").get<double>();
    r.calibration_source = EscapeName(j.value("calibration_source", ""));
    r.rounds_used = j.value("rounds_used", 0);
    r.rounds_discarded = j.value("rounds_discarded", 0);
    r.kernel_source = EscapeName(j.value("kernel_source", ""));
    r.anchor_tsc = j.value("anchor_tsc", uint64_t{0});
    r.anchor_utc_ns = j.value("anchor_utc_ns", int64_t{0});
    if (j.contains("spread_ppm")) r.spread_ppm = j["spread_ppm"].get<double>();
    if (j.contains("kernel_tsc_hz")) r.kernel_tsc_hz = j["kernel_tsc_hz"].get<double>();
    if (j.contains("tsc_step_ns")) r.tsc_step_ns = j["tsc_step_ns"].get<double>();
    if (j.contains("measured_tsc_hz")) r.measured_tsc_hz = j["measured_tsc_hz"].get<double>();
    if (j.contains("environment") && j["environment"].is_array()) {
      for (const json& e : j["environment"]) {
        EnvironmentNote n;
        n.name = e.value("name", "");
        n.value = e.value("value", "");
        n.meaning = e.value("meaning", "");
        n.warning = e.value("warning", false);
        r.environment.push_back(std::move(n));
      }
    }
    if (j.contains("external_clocks") && j["external_clocks"].is_object()) {
      const json& c = j["external_clocks"];
      ExternalClockErrors& e = r.external_clocks;
      e.anchor_error_ns = c.value("anchor_error_ns", 0.0);
      e.realtime_error_ns = c.value("realtime_error_ns", 1.0);
      if (c.contains("phc_error_ns")) e.phc_error_ns = c["phc_error_ns"].get<double>();
      if (c.contains("exchange_error_ns")) {
        e.exchange_error_ns = c["exchange_error_ns"].get<double>();
      }
      for (const std::optional<double> v :
           {std::optional<double>(e.anchor_error_ns), std::optional<double>(e.realtime_error_ns),
            e.phc_error_ns, e.exchange_error_ns}) {
        if (v.has_value() && !(*v >= 0 && std::isfinite(*v))) {
          return absl::InvalidArgumentError("run info: impossible clock error");
        }
      }
    }
    if (j.contains("cores") && j["cores"].is_array()) {
      absl::StatusOr<std::vector<CoreSkew>> cores = ParseCores(j["cores"]);
      if (!cores.ok()) return cores.status();
      r.cores = *std::move(cores);
    }
    if (j.contains("settings") && j["settings"].is_object()) {
      const json& s = j["settings"];
      r.pipeline = s.value("pipeline", std::vector<std::string>{});
      for (std::string& tag : r.pipeline) tag = EscapeName(tag);
      r.order_timeout_ms = s.value("order_timeout_ms", int64_t{1000});
      r.include_flagged = s.value("include_flagged", false);
      r.learn_orders = s.value("learn_orders", uint64_t{100});
      r.max_open_orders = s.value("max_open_orders", uint64_t{2'000'000});
      r.mode = s.value("source", "live");
      r.correct_skew = s.value("correct_skew", false);
      r.skew_interval_s = s.value("skew_interval_s", int64_t{600});
      r.skew_cores = s.value("skew_cores", "allowed");
      r.anchor_interval_ms = s.value("anchor_interval_ms", int64_t{1000});
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("run info: ", e.what()));
  }
  if (!(r.tsc_hz >= 1e6 && r.tsc_hz <= 1e11)) {
    return absl::InvalidArgumentError(absl::StrCat("run info: impossible tsc_hz ", r.tsc_hz));
  }
  if (r.order_timeout_ms <= 0 || r.learn_orders == 0 || r.skew_interval_s < 0 ||
      r.anchor_interval_ms <= 0) {
    return absl::InvalidArgumentError("run info: impossible settings");
  }
  return r;
}

std::string RunInfoUpdate::ToJson() const {
  if (kind == Kind::kAnchor) {
    return json{{"update", "anchor"}, {"tsc", anchor.tsc}, {"utc_ns", anchor.utc_ns}}.dump();
  }
  if (kind == Kind::kCounters) {
    json c = json::object();
    for (const auto& [name, value] : counters) c[name] = value;
    return json{{"update", "counters"}, {"counters", c}}.dump();
  }
  return json{{"update", "cores"},
              {"measured_at_utc_ns", measured_at_utc_ns},
              {"cores", CoresArray(cores)}}
      .dump();
}

absl::StatusOr<RunInfoUpdate> RunInfoUpdate::FromJson(std::string_view text) {
  RunInfoUpdate u;
  try {
    const json j = json::parse(text.begin(), text.end());
    if (!j.is_object() || !j.contains("update")) {
      return absl::NotFoundError("not a run info update");
    }
    const std::string kind = j.at("update").get<std::string>();
    if (kind == "anchor") {
      u.kind = Kind::kAnchor;
      u.anchor.tsc = j.at("tsc").get<uint64_t>();
      u.anchor.utc_ns = j.at("utc_ns").get<int64_t>();
    } else if (kind == "counters") {
      u.kind = Kind::kCounters;
      if (!j.at("counters").is_object()) {
        return absl::InvalidArgumentError("run info update: counters is not an object");
      }
      for (const auto& [name, value] : j["counters"].items()) {
        if (!value.is_number_unsigned() || name.size() > 64) {
          return absl::InvalidArgumentError("run info update: a counter is not a count");
        }
        u.counters.emplace_back(name, value.get<uint64_t>());
      }
    } else if (kind == "cores") {
      u.kind = Kind::kCores;
      u.measured_at_utc_ns = j.value("measured_at_utc_ns", int64_t{0});
      if (!j.at("cores").is_array()) {
        return absl::InvalidArgumentError("run info update: cores is not a list");
      }
      absl::StatusOr<std::vector<CoreSkew>> cores = ParseCores(j["cores"]);
      if (!cores.ok()) return cores.status();
      u.cores = *std::move(cores);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("run info update: unknown kind '", kind, "'"));
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("run info update: ", e.what()));
  }
  return u;
}

}  // namespace ticktrace::collect
