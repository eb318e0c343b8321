// OTLP spans as the OTLP export tests compare them, read from OTLP/JSON
// (nlohmann/json) or from protoc --decode_raw's output (tests/support/
// protoc_raw.h), and expected from a store through its reader: trace and
// span ids from the documented FNV-1a keys (docs/viewer.md, "OTLP"),
// computed here, never by the code under test.
#ifndef TICKTRACE_TESTS_VIEWER_OTLP_SPANS_H_
#define TICKTRACE_TESTS_VIEWER_OTLP_SPANS_H_

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/protoc_raw.h"

namespace ticktrace::testing {

struct SpanView {
  std::string trace_id, span_id, parent_span_id;  // lower-case hex; parent "" for a root
  std::string name;
  int64_t kind = 0;
  uint64_t start_ns = 0, end_ns = 0;
  // Values as "s:" string, "i:" decimal, "b:true", "d:" %.17g.
  std::map<std::string, std::string> attributes;
  std::vector<std::pair<std::string, std::string>> links;  // (trace id, span id)
  int64_t status_code = 0;
  std::string status_message;
  std::string service_name, host_name;  // the resource's
};

inline std::string HexOf(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

inline std::string DoubleText(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// FNV-1a as draft-eastlake-fnv defines it, 64 and 128 bits, as hex.
inline std::string Fnv64Hex(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
inline std::string Fnv128Hex(const std::string& s) {
  __extension__ typedef unsigned __int128 U128;
  U128 h = (static_cast<U128>(0x6c62272e07bb0142ull) << 64) | 0x62b821756295c58dull;
  const U128 prime = (static_cast<U128>(1) << 88) | 0x13b;
  for (unsigned char c : s) {
    h ^= c;
    h *= prime;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h >> 64),
                static_cast<unsigned long long>(h));
  return buf;
}
// The documented keys.
inline std::string TraceKeyText(const std::string& host, int64_t started, int64_t run,
                                uint64_t order, int64_t instance) {
  return "ticktrace.v1\n" + host + "\n" + std::to_string(started) + "\n" + std::to_string(run) +
         "\n" + std::to_string(order) + "\n" + std::to_string(instance);
}

inline std::string JsonValueText(const nlohmann::json& v) {
  if (v.contains("stringValue")) return "s:" + v["stringValue"].get<std::string>();
  if (v.contains("intValue")) return "i:" + v["intValue"].get<std::string>();
  if (v.contains("boolValue")) return v["boolValue"].get<bool>() ? "b:true" : "b:false";
  if (v.contains("doubleValue")) return "d:" + DoubleText(v["doubleValue"].get<double>());
  ADD_FAILURE() << "unexpected AnyValue " << v.dump();
  return "";
}

// Every span of an OTLP/JSON ExportTraceServiceRequest.
inline std::vector<SpanView> SpansFromJson(const nlohmann::json& request) {
  std::vector<SpanView> out;
  for (const nlohmann::json& rs : request["resourceSpans"]) {
    std::map<std::string, std::string> resource;
    for (const nlohmann::json& kv : rs["resource"]["attributes"]) {
      resource[kv["key"].get<std::string>()] = JsonValueText(kv["value"]);
    }
    for (const nlohmann::json& ss : rs["scopeSpans"]) {
      for (const nlohmann::json& s : ss["spans"]) {
        SpanView v;
        v.trace_id = s["traceId"];
        v.span_id = s["spanId"];
        if (s.contains("parentSpanId")) v.parent_span_id = s["parentSpanId"];
        v.name = s["name"];
        v.kind = s["kind"];
        v.start_ns = std::stoull(s["startTimeUnixNano"].get<std::string>());
        v.end_ns = std::stoull(s["endTimeUnixNano"].get<std::string>());
        for (const nlohmann::json& kv : s["attributes"]) {
          v.attributes[kv["key"].get<std::string>()] = JsonValueText(kv["value"]);
        }
        if (s.contains("links")) {
          for (const nlohmann::json& l : s["links"]) v.links.emplace_back(l["traceId"], l["spanId"]);
        }
        if (s.contains("status")) {
          v.status_code = s["status"]["code"];
          if (s["status"].contains("message")) v.status_message = s["status"]["message"];
        }
        v.service_name = resource["service.name"].substr(2);  // after "s:"
        v.host_name = resource["host.name"].substr(2);
        out.push_back(std::move(v));
      }
    }
  }
  return out;
}

// AnyValue (common.proto): string_value 1, bool_value 2, int_value 3,
// double_value 4. Strings as decode_raw printed them (RawField::Text).
inline std::string RawValueText(const RawField& any) {
  if (const RawField* f = any.One(1)) return "s:" + f->Text();
  if (const RawField* f = any.One(2)) return f->Varint() ? "b:true" : "b:false";
  if (const RawField* f = any.One(3)) return "i:" + std::to_string(static_cast<int64_t>(f->Varint()));
  if (const RawField* f = any.One(4)) {
    const uint64_t bits = f->Fixed64();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return "d:" + DoubleText(d);
  }
  return "";
}

// KeyValue (common.proto): key 1, value 2; keys as decode_raw printed them.
inline std::map<std::string, std::string> RawAttributes(const RawField& message, int field) {
  std::map<std::string, std::string> out;
  for (const RawField* kv : message.All(field)) {
    const RawField* value = kv->One(2);
    out[kv->One(1)->Text()] = value != nullptr ? RawValueText(*value) : "";
  }
  return out;
}

// Every span of an ExportTraceServiceRequest as protoc --decode_raw printed
// it: ids, names and strings as decode_raw's text of them (Rendered() turns
// an expected span into the same form). Field numbers from opentelemetry-proto: ExportTraceServiceRequest
// resource_spans 1; ResourceSpans resource 1, scope_spans 2; Resource
// attributes 1; ScopeSpans spans 2; Span trace_id 1, span_id 2,
// parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9, links 13,
// status 15; Link trace_id 1, span_id 2; Status message 2, code 3.
inline std::vector<SpanView> SpansFromRaw(const RawField& request) {
  std::vector<SpanView> out;
  for (const RawField* rs : request.All(1)) {
    // Resource attributes by key (plain: "service.name" and "host.name" print
    // as strings), values as decode_raw printed them.
    std::map<std::string, std::string> resource;
    if (const RawField* r = rs->One(1)) {
      for (const RawField* kv : r->All(1)) resource[kv->One(1)->Bytes()] = RawValueText(*kv->One(2));
    }
    for (const RawField* ss : rs->All(2)) {
      for (const RawField* s : ss->All(2)) {
        SpanView v;
        v.trace_id = s->One(1)->Text();
        v.span_id = s->One(2)->Text();
        if (const RawField* p = s->One(4)) v.parent_span_id = p->Text();
        if (const RawField* n = s->One(5)) v.name = n->Text();
        if (const RawField* k = s->One(6)) v.kind = static_cast<int64_t>(k->Varint());
        v.start_ns = s->One(7)->Fixed64();
        v.end_ns = s->One(8)->Fixed64();
        v.attributes = RawAttributes(*s, 9);
        for (const RawField* l : s->All(13)) {
          v.links.emplace_back(l->One(1)->Text(), l->One(2)->Text());
        }
        if (const RawField* st = s->One(15)) {
          if (const RawField* c = st->One(3)) v.status_code = static_cast<int64_t>(c->Varint());
          if (const RawField* m = st->One(2)) v.status_message = m->Text();
        }
        v.service_name = resource["service.name"].substr(2);  // after "s:"
        v.host_name = resource["host.name"].substr(2);
        out.push_back(std::move(v));
      }
    }
  }
  return out;
}

inline std::string BytesOfHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// `spans` (plain: hex ids, strings) in SpansFromRaw's form: every bytes
// field as protoc --decode_raw prints it (one protoc run).
inline std::vector<SpanView> Rendered(const std::vector<SpanView>& spans, const std::string& dir) {
  std::set<std::string> values;
  auto take_id = [&](const std::string& hex) {
    if (!hex.empty()) values.insert(BytesOfHex(hex));
  };
  auto take = [&](const std::string& s) {
    if (!s.empty()) values.insert(s);
  };
  for (const SpanView& s : spans) {
    take_id(s.trace_id);
    take_id(s.span_id);
    take_id(s.parent_span_id);
    for (const auto& [t, sp] : s.links) {
      take_id(t);
      take_id(sp);
    }
    take(s.name);
    take(s.status_message);
    take(s.service_name);
    take(s.host_name);
    for (const auto& [k, v] : s.attributes) {
      take(k);
      if (v.rfind("s:", 0) == 0) take(v.substr(2));
    }
  }
  const std::map<std::string, std::string> text = RenderAll(values, dir);
  auto id = [&](const std::string& hex) { return hex.empty() ? hex : text.at(BytesOfHex(hex)); };
  auto str = [&](const std::string& s) { return s.empty() ? s : text.at(s); };
  std::vector<SpanView> out;
  for (SpanView s : spans) {
    s.trace_id = id(s.trace_id);
    s.span_id = id(s.span_id);
    s.parent_span_id = id(s.parent_span_id);
    for (auto& [t, sp] : s.links) {
      t = id(t);
      sp = id(sp);
    }
    s.name = str(s.name);
    s.status_message = str(s.status_message);
    s.service_name = str(s.service_name);
    s.host_name = str(s.host_name);
    std::map<std::string, std::string> attributes;
    for (const auto& [k, v] : s.attributes) {
      attributes[str(k)] = v.rfind("s:", 0) == 0 ? "s:" + str(v.substr(2)) : v;
    }
    s.attributes = std::move(attributes);
    out.push_back(std::move(s));
  }
  return out;
}

inline std::map<std::string, SpanView> BySpanId(const std::vector<SpanView>& spans) {
  std::map<std::string, SpanView> out;
  for (const SpanView& s : spans) {
    EXPECT_TRUE(out.emplace(s.span_id, s).second) << "span id twice: " << s.span_id;
  }
  return out;
}

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_VIEWER_OTLP_SPANS_H_
