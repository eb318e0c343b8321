#include "common/otlp/proto_encoder.h"

#include <string_view>

#include "common/otlp/proto_wire.h"

namespace ticktrace::otlp {
namespace {

using wire::AppendBytesField;
using wire::AppendDoubleField;
using wire::AppendFixed64Field;
using wire::AppendVarintField;

// common.proto AnyValue.
constexpr uint32_t kAnyString = 1, kAnyBool = 2, kAnyInt = 3, kAnyDouble = 4;
// common.proto KeyValue and InstrumentationScope.
constexpr uint32_t kKeyValueKey = 1, kKeyValueValue = 2;
constexpr uint32_t kScopeName = 1, kScopeVersion = 2;
// resource.proto Resource.
constexpr uint32_t kResourceAttributes = 1;
// trace.proto Span, Span.Link, Status.
constexpr uint32_t kSpanTraceId = 1, kSpanSpanId = 2, kSpanParentSpanId = 4, kSpanName = 5,
                   kSpanKind = 6, kSpanStart = 7, kSpanEnd = 8, kSpanAttributes = 9,
                   kSpanLinks = 13, kSpanStatus = 15;
constexpr uint32_t kLinkTraceId = 1, kLinkSpanId = 2, kLinkAttributes = 4;
constexpr uint32_t kStatusMessage = 2, kStatusCode = 3;
// trace.proto ResourceSpans, ScopeSpans.
constexpr uint32_t kResourceSpansResource = 1, kResourceSpansScopeSpans = 2;
constexpr uint32_t kScopeSpansScope = 1, kScopeSpansSpans = 2;
// trace_service.proto ExportTraceServiceRequest.
constexpr uint32_t kRequestResourceSpans = 1;

template <size_t N>
std::string_view Bytes(const std::array<uint8_t, N>& id) {
  return {reinterpret_cast<const char*>(id.data()), N};
}

std::string AnyValueMessage(const AnyValue& v) {
  std::string m;
  switch (v.kind) {
    case AnyValue::Kind::kString:
      // A oneof member is written even when empty: it says which one is set.
      AppendBytesField(&m, kAnyString, v.string_value);
      break;
    case AnyValue::Kind::kBool:
      AppendVarintField(&m, kAnyBool, v.bool_value ? 1 : 0);
      break;
    case AnyValue::Kind::kInt:
      // int64: the two's complement as an unsigned varint (10 bytes when negative).
      AppendVarintField(&m, kAnyInt, static_cast<uint64_t>(v.int_value));
      break;
    case AnyValue::Kind::kDouble:
      AppendDoubleField(&m, kAnyDouble, v.double_value);
      break;
  }
  return m;
}

void AppendKeyValues(std::string* out, uint32_t field, const std::vector<KeyValue>& kvs) {
  for (const KeyValue& kv : kvs) {
    std::string m;
    AppendBytesField(&m, kKeyValueKey, kv.key);
    AppendBytesField(&m, kKeyValueValue, AnyValueMessage(kv.value));
    AppendBytesField(out, field, m);
  }
}

std::string ScopeMessage(const ExportRequest& r) {
  std::string m;
  if (!r.scope_name.empty()) AppendBytesField(&m, kScopeName, r.scope_name);
  if (!r.scope_version.empty()) AppendBytesField(&m, kScopeVersion, r.scope_version);
  return m;
}

}  // namespace

std::string EncodeSpanMessage(const Span& s) {
  std::string m;
  AppendBytesField(&m, kSpanTraceId, Bytes(s.trace_id));
  AppendBytesField(&m, kSpanSpanId, Bytes(s.span_id));
  if (s.parent_span_id.has_value()) AppendBytesField(&m, kSpanParentSpanId, Bytes(*s.parent_span_id));
  if (!s.name.empty()) AppendBytesField(&m, kSpanName, s.name);
  if (s.kind != 0) AppendVarintField(&m, kSpanKind, static_cast<uint64_t>(s.kind));
  AppendFixed64Field(&m, kSpanStart, s.start_unix_ns);
  AppendFixed64Field(&m, kSpanEnd, s.end_unix_ns);
  AppendKeyValues(&m, kSpanAttributes, s.attributes);
  for (const SpanLink& l : s.links) {
    std::string lm;
    AppendBytesField(&lm, kLinkTraceId, Bytes(l.trace_id));
    AppendBytesField(&lm, kLinkSpanId, Bytes(l.span_id));
    AppendKeyValues(&lm, kLinkAttributes, l.attributes);
    AppendBytesField(&m, kSpanLinks, lm);
  }
  if (s.status_code != StatusCode::kUnset || !s.status_message.empty()) {
    std::string st;
    if (!s.status_message.empty()) AppendBytesField(&st, kStatusMessage, s.status_message);
    if (s.status_code != StatusCode::kUnset) {
      AppendVarintField(&st, kStatusCode, static_cast<uint64_t>(s.status_code));
    }
    AppendBytesField(&m, kSpanStatus, st);
  }
  return m;
}

std::string EncodeResourceMessage(const ResourceSpans& r) {
  std::string m;
  AppendKeyValues(&m, kResourceAttributes, r.resource);
  return m;
}

std::string EncodeProtobuf(const ExportRequest& request) {
  const std::string scope = ScopeMessage(request);
  std::string out;
  for (const ResourceSpans& r : request.resource_spans) {
    std::string scope_spans;
    AppendBytesField(&scope_spans, kScopeSpansScope, scope);
    for (const Span& s : r.spans) AppendBytesField(&scope_spans, kScopeSpansSpans, EncodeSpanMessage(s));
    std::string resource_spans;
    AppendBytesField(&resource_spans, kResourceSpansResource, EncodeResourceMessage(r));
    AppendBytesField(&resource_spans, kResourceSpansScopeSpans, scope_spans);
    AppendBytesField(&out, kRequestResourceSpans, resource_spans);
  }
  return out;
}

}  // namespace ticktrace::otlp
