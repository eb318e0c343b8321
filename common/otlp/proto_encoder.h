// ExportTraceServiceRequest in protobuf's binary form, for OTLP/HTTP's
// application/x-protobuf.
//
// Written by hand rather than generated: the message set is small
// (ExportTraceServiceRequest, ResourceSpans, Resource, KeyValue, AnyValue,
// ScopeSpans, InstrumentationScope, Span, Span.Link, Status: a few hundred
// lines), and a generated encoder would need protoc at build time and the
// protobuf runtime library in every binary, neither of which the
// collector's hosts otherwise need. Field numbers are those of
// opentelemetry-proto's trace.proto, common.proto, resource.proto and
// collector/trace/v1/trace_service.proto; tests decode the output with
// `protoc --decode_raw`, a decoder we did not write.
//
// Fields at their default (empty, zero) are left out, as proto3 does.

#ifndef TICKTRACE_COMMON_OTLP_PROTO_ENCODER_H_
#define TICKTRACE_COMMON_OTLP_PROTO_ENCODER_H_

#include <string>

#include "common/otlp/span_model.h"

namespace ticktrace::otlp {

std::string EncodeProtobuf(const ExportRequest& request);

// One span as a Span message (without its field key in ScopeSpans), and the
// bytes a ResourceSpans adds around its spans: what batching measures.
std::string EncodeSpanMessage(const Span& span);
std::string EncodeResourceMessage(const ResourceSpans& resource);

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_PROTO_ENCODER_H_
