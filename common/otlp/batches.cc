#include "common/otlp/batches.h"

#include "common/otlp/proto_encoder.h"
#include "common/otlp/proto_wire.h"

namespace ticktrace::otlp {
namespace {

// A field key and a length prefix take at most this many bytes each
// (the key: 1 byte for these field numbers; the length: a varint of up to 10).
constexpr size_t kFramingBytes = 11;

class BatchBuilder {
 public:
  BatchBuilder(const ExportRequest& request, size_t max_body_bytes,
               std::vector<EncodedBatch>* out)
      : request_(request), max_(max_body_bytes), out_(out) {
    ExportRequest scope_only;
    scope_only.scope_name = request.scope_name;
    scope_only.scope_version = request.scope_version;
    ResourceSpans empty;
    scope_only.resource_spans.push_back(empty);
    // The scope's bytes are the same in every ResourceSpans: measured once.
    scope_bytes_ = EncodeProtobuf(scope_only).size();
  }

  void Add(size_t resource, std::string span_message) {
    const size_t span_bytes = span_message.size() + kFramingBytes;
    const bool new_resource = resource != current_resource_;
    const size_t resource_bytes =
        new_resource ? EncodeResourceMessage(request_.resource_spans[resource]).size() +
                           scope_bytes_ + 3 * kFramingBytes
                     : 0;
    if (spans_ > 0 && size_ + resource_bytes + span_bytes > max_) Flush();
    if (new_resource || spans_ == 0) StartResource(resource);
    spans_messages_.push_back(std::move(span_message));
    size_ += span_bytes;
    ++spans_;
  }

  void Flush() {
    CloseResource();
    if (spans_ > 0) out_->push_back(EncodedBatch{std::move(body_), spans_});
    body_.clear();
    size_ = 0;
    spans_ = 0;
    current_resource_ = SIZE_MAX;
  }

 private:
  void StartResource(size_t resource) {
    CloseResource();
    current_resource_ = resource;
    size_ += EncodeResourceMessage(request_.resource_spans[resource]).size() + scope_bytes_ +
             3 * kFramingBytes;
  }

  // Writes the open resource's ResourceSpans with the spans gathered for it.
  void CloseResource() {
    if (current_resource_ == SIZE_MAX || spans_messages_.empty()) return;
    std::string scope;
    if (!request_.scope_name.empty()) wire::AppendBytesField(&scope, 1, request_.scope_name);
    if (!request_.scope_version.empty()) wire::AppendBytesField(&scope, 2, request_.scope_version);
    std::string scope_spans;
    wire::AppendBytesField(&scope_spans, 1, scope);  // ScopeSpans.scope
    for (const std::string& m : spans_messages_) wire::AppendBytesField(&scope_spans, 2, m);
    std::string resource_spans;
    wire::AppendBytesField(&resource_spans, 1,
                           EncodeResourceMessage(request_.resource_spans[current_resource_]));
    wire::AppendBytesField(&resource_spans, 2, scope_spans);  // ResourceSpans.scope_spans
    wire::AppendBytesField(&body_, 1, resource_spans);  // ExportTraceServiceRequest.resource_spans
    spans_messages_.clear();
  }

  const ExportRequest& request_;
  const size_t max_;
  std::vector<EncodedBatch>* out_;
  size_t scope_bytes_ = 0;
  size_t current_resource_ = SIZE_MAX;
  std::vector<std::string> spans_messages_;
  std::string body_;
  size_t size_ = 0;
  size_t spans_ = 0;
};

}  // namespace

std::vector<EncodedBatch> EncodeBatches(const ExportRequest& request, size_t max_body_bytes) {
  std::vector<EncodedBatch> out;
  BatchBuilder builder(request, max_body_bytes, &out);
  for (size_t r = 0; r < request.resource_spans.size(); ++r) {
    for (const Span& s : request.resource_spans[r].spans) builder.Add(r, EncodeSpanMessage(s));
  }
  builder.Flush();
  return out;
}

}  // namespace ticktrace::otlp
