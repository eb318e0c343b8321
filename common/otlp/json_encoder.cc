#include "common/otlp/json_encoder.h"

#include <nlohmann/json.hpp>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/otlp/trace_ids.h"

namespace ticktrace::otlp {
namespace {

using Json = nlohmann::ordered_json;

Json ValueJson(const AnyValue& v) {
  switch (v.kind) {
    case AnyValue::Kind::kString:
      return {{"stringValue", v.string_value}};
    case AnyValue::Kind::kBool:
      return {{"boolValue", v.bool_value}};
    case AnyValue::Kind::kInt:
      return {{"intValue", absl::StrCat(v.int_value)}};
    case AnyValue::Kind::kDouble:
      return {{"doubleValue", v.double_value}};
  }
  return Json::object();
}

Json AttributesJson(const std::vector<KeyValue>& kvs) {
  Json a = Json::array();
  for (const KeyValue& kv : kvs) a.push_back({{"key", kv.key}, {"value", ValueJson(kv.value)}});
  return a;
}

Json SpanJson(const Span& s) {
  Json j = {{"traceId", Hex(s.trace_id)}, {"spanId", Hex(s.span_id)}};
  if (s.parent_span_id.has_value()) j["parentSpanId"] = Hex(*s.parent_span_id);
  j["name"] = s.name;
  j["kind"] = s.kind;
  j["startTimeUnixNano"] = absl::StrCat(s.start_unix_ns);
  j["endTimeUnixNano"] = absl::StrCat(s.end_unix_ns);
  j["attributes"] = AttributesJson(s.attributes);
  if (!s.links.empty()) {
    Json links = Json::array();
    for (const SpanLink& l : s.links) {
      links.push_back({{"traceId", Hex(l.trace_id)},
                       {"spanId", Hex(l.span_id)},
                       {"attributes", AttributesJson(l.attributes)}});
    }
    j["links"] = std::move(links);
  }
  if (s.status_code != StatusCode::kUnset) {
    Json status = {{"code", static_cast<int>(s.status_code)}};
    if (!s.status_message.empty()) status["message"] = s.status_message;
    j["status"] = std::move(status);
  }
  return j;
}

}  // namespace

std::string EncodeJson(const ExportRequest& request) {
  Json scope = {{"name", request.scope_name}};
  if (!request.scope_version.empty()) scope["version"] = request.scope_version;
  Json resource_spans = Json::array();
  for (const ResourceSpans& r : request.resource_spans) {
    Json spans = Json::array();
    for (const Span& s : r.spans) spans.push_back(SpanJson(s));
    resource_spans.push_back(
        {{"resource", {{"attributes", AttributesJson(r.resource)}}},
         {"scopeSpans", Json::array({Json{{"scope", scope}, {"spans", std::move(spans)}}})}});
  }
  return Json{{"resourceSpans", std::move(resource_spans)}}.dump();
}

}  // namespace ticktrace::otlp
