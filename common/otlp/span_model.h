// The small span model the OTLP encoders take: what an ExportTraceServiceRequest
// holds of OpenTelemetry's trace data model, and nothing of ticktrace's store.
// Built by order_spans.h (a ticktrace order as a trace), written by
// json_encoder.h and proto_encoder.h, sent by http_exporter.h.
//
// One InstrumentationScope per request (the request's scope_name and
// scope_version), so a ResourceSpans here is a resource with its spans.

#ifndef TICKTRACE_COMMON_OTLP_SPAN_MODEL_H_
#define TICKTRACE_COMMON_OTLP_SPAN_MODEL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticktrace::otlp {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// AnyValue: only the scalar kinds ticktrace writes.
struct AnyValue {
  enum class Kind { kString, kBool, kInt, kDouble };
  Kind kind = Kind::kString;
  std::string string_value;
  bool bool_value = false;
  int64_t int_value = 0;
  double double_value = 0;
};

struct KeyValue {
  std::string key;
  AnyValue value;
};

KeyValue StringAttribute(std::string_view key, std::string_view value);
KeyValue BoolAttribute(std::string_view key, bool value);
KeyValue IntAttribute(std::string_view key, int64_t value);
KeyValue DoubleAttribute(std::string_view key, double value);

struct SpanLink {
  TraceId trace_id{};
  SpanId span_id{};
  std::vector<KeyValue> attributes;
};

// Span.Status.StatusCode, as the proto numbers it.
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

// Span.SpanKind: ticktrace's spans are all internal to the traced pipeline.
inline constexpr int kSpanKindInternal = 1;

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent_span_id;  // unset: a root span
  std::string name;
  int kind = kSpanKindInternal;
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
  std::vector<KeyValue> attributes;
  std::vector<SpanLink> links;
  StatusCode status_code = StatusCode::kUnset;
  std::string status_message;  // only with kError
};

struct ResourceSpans {
  std::vector<KeyValue> resource;  // Resource.attributes
  std::vector<Span> spans;
};

// ExportTraceServiceRequest.
struct ExportRequest {
  std::string scope_name = "ticktrace";
  std::string scope_version;
  std::vector<ResourceSpans> resource_spans;

  size_t span_count() const {
    size_t n = 0;
    for (const ResourceSpans& r : resource_spans) n += r.spans.size();
    return n;
  }
};

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_SPAN_MODEL_H_
