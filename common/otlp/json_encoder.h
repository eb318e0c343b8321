// ExportTraceServiceRequest as OTLP/JSON (opentelemetry.io/docs/specs/otlp,
// "JSON Protobuf Encoding"): the proto3 JSON mapping with OTLP's
// exceptions. Field names in lowerCamelCase; trace and span ids as hex
// strings (not base64); 64-bit integers (the times, intValue) as decimal
// strings; enums (kind, status code) as their integers. Keys come out in
// one fixed order, so the same request gives the same bytes.

#ifndef TICKTRACE_COMMON_OTLP_JSON_ENCODER_H_
#define TICKTRACE_COMMON_OTLP_JSON_ENCODER_H_

#include <string>

#include "common/otlp/span_model.h"

namespace ticktrace::otlp {

// One JSON object, without a trailing newline.
std::string EncodeJson(const ExportRequest& request);

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_JSON_ENCODER_H_
