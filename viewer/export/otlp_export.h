// export --format otlp-json | otlp: the selected orders of a run as
// OpenTelemetry traces (common/otlp/order_spans.h: a trace per order
// instance, a root span and a span per stage sample), either as one OTLP/JSON
// ExportTraceServiceRequest written to a file, or POSTed as protobuf to an
// OTLP/HTTP receiver (ENDPOINT/v1/traces) in bodies under 4 MiB.
// The ids are those the collector's --otlp-endpoint gives the same orders.
#ifndef TICKTRACE_VIEW_OTLP_EXPORT_H_
#define TICKTRACE_VIEW_OTLP_EXPORT_H_

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "ticktrace/store/reader.h"
#include "viewer/export/export_common.h"

namespace ticktrace::view {

// Writes the JSON request (one line) to `out`.
absl::StatusOr<ExportResult> ExportOtlpJson(store::StoreReader& store, const ExportOptions& options,
                                            std::ostream& out);

// POSTs the orders to `endpoint`. Errors are one line naming the endpoint
// (http_exporter.h): InvalidArgument for a malformed URL or a refused body,
// Unavailable when the receiver cannot be reached or keeps saying busy.
absl::StatusOr<ExportResult> ExportOtlpHttp(store::StoreReader& store, const ExportOptions& options,
                                            const std::string& endpoint);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_OTLP_EXPORT_H_
