// An ExportRequest cut into protobuf bodies of at most a given size, for
// OTLP/HTTP. Receivers refuse large bodies (the default limit of the
// OpenTelemetry Collector's gRPC receiver, and of many proxies in front of
// HTTP ones, is 4 MiB), so the exporter keeps each POST under its limit
// (http_exporter.h). Spans are kept in order; a resource's attributes are
// repeated in every body that holds spans of it.

#ifndef TICKTRACE_COMMON_OTLP_BATCHES_H_
#define TICKTRACE_COMMON_OTLP_BATCHES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "common/otlp/span_model.h"

namespace ticktrace::otlp {

inline constexpr size_t kDefaultMaxBodyBytes = size_t{4} << 20;

struct EncodedBatch {
  std::string body;  // an ExportTraceServiceRequest
  size_t spans = 0;
};

// Bodies of at most `max_body_bytes` each (a single span larger than that
// goes alone); none for a request without spans.
std::vector<EncodedBatch> EncodeBatches(const ExportRequest& request, size_t max_body_bytes);

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_BATCHES_H_
