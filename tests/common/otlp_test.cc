// common/otlp's building blocks against values computed by hand or
// published: the protobuf wire framing (protobuf.dev's encoding guide), the
// FNV-1a test vectors (draft-eastlake-fnv), the id keys docs/viewer.md
// documents, OTLP/JSON's shape, the endpoint URL rules and batching.
#include <string>
#include <vector>

#include "common/otlp/batches.h"
#include "common/otlp/http_exporter.h"
#include "common/otlp/json_encoder.h"
#include "common/otlp/proto_encoder.h"
#include "common/otlp/proto_wire.h"
#include "common/otlp/trace_ids.h"
#include "gtest/gtest.h"

namespace ticktrace::otlp {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(OtlpWire, Varints) {
  auto varint = [](uint64_t v) {
    std::string s;
    wire::AppendVarint(&s, v);
    return s;
  };
  EXPECT_EQ(varint(0), Bytes({0x00}));
  EXPECT_EQ(varint(1), Bytes({0x01}));
  EXPECT_EQ(varint(127), Bytes({0x7f}));
  EXPECT_EQ(varint(128), Bytes({0x80, 0x01}));
  EXPECT_EQ(varint(300), Bytes({0xac, 0x02}));  // the encoding guide's example
  EXPECT_EQ(varint(UINT64_MAX), Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST(OtlpWire, FieldFraming) {
  std::string s;
  wire::AppendVarintField(&s, 6, 1);        // (6 << 3) | 0 = 0x30
  wire::AppendBytesField(&s, 2, "hi");      // (2 << 3) | 2 = 0x12, length 2
  wire::AppendFixed64Field(&s, 7, 0x0102);  // (7 << 3) | 1 = 0x39, little-endian
  EXPECT_EQ(s, Bytes({0x30, 0x01, 0x12, 0x02, 'h', 'i', 0x39, 0x02, 0x01, 0, 0, 0, 0, 0, 0}));
  std::string d;
  wire::AppendDoubleField(&d, 4, 1.0);  // IEEE 754 1.0 = 0x3ff0000000000000
  EXPECT_EQ(d, Bytes({0x21, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  std::string big;
  wire::AppendBytesField(&big, 1, std::string(200, 'x'));  // a two-byte length: 200 = 0xc8 0x01
  EXPECT_EQ(big.substr(0, 3), Bytes({0x0a, 0xc8, 0x01}));
  EXPECT_EQ(big.size(), 203u);
}

TEST(OtlpWire, SpanMessage) {
  Span span;
  for (int i = 0; i < 16; ++i) span.trace_id[i] = static_cast<uint8_t>(i + 1);
  for (int i = 0; i < 8; ++i) span.span_id[i] = static_cast<uint8_t>(0x11 + i);
  span.name = "s";
  span.start_unix_ns = 2;
  span.end_unix_ns = 3;
  span.attributes.push_back(IntAttribute("k", -1));
  span.status_code = StatusCode::kError;
  std::string expected = Bytes({0x0a, 0x10});  // trace_id = 1, 16 bytes
  for (int i = 0; i < 16; ++i) expected.push_back(static_cast<char>(i + 1));
  expected += Bytes({0x12, 0x08});  // span_id = 2
  for (int i = 0; i < 8; ++i) expected.push_back(static_cast<char>(0x11 + i));
  expected += Bytes({0x2a, 0x01, 's'});                          // name = 5
  expected += Bytes({0x30, 0x01});                               // kind = 6: INTERNAL
  expected += Bytes({0x39, 0x02, 0, 0, 0, 0, 0, 0, 0});          // start_time_unix_nano = 7
  expected += Bytes({0x41, 0x03, 0, 0, 0, 0, 0, 0, 0});          // end_time_unix_nano = 8
  // attributes = 9: KeyValue{key = 1 "k", value = 2 AnyValue{int_value = 3: -1 as 10 bytes}}:
  // AnyValue 1 + 10 = 11 bytes, KeyValue 3 + 2 + 11 = 16.
  expected += Bytes({0x4a, 0x10, 0x0a, 0x01, 'k', 0x12, 0x0b, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff,
                     0xff, 0xff, 0xff, 0xff, 0x01});
  expected += Bytes({0x7a, 0x02, 0x18, 0x02});  // status = 15: Status{code = 3: ERROR}
  EXPECT_EQ(EncodeSpanMessage(span), expected);
}

TEST(OtlpIds, FnvTestVectors) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
  const std::array<uint8_t, 16> a = Fnv1a128("a");
  TraceId id;
  std::copy(a.begin(), a.end(), id.begin());
  EXPECT_EQ(Hex(id), "d228cb696f1a8caf78912b704e4a8964");
  const std::array<uint8_t, 16> empty = Fnv1a128("");
  std::copy(empty.begin(), empty.end(), id.begin());
  EXPECT_EQ(Hex(id), "6c62272e07bb014262b821756295c58d");  // the offset basis
}

TEST(OtlpIds, DocumentedKeys) {
  const std::string key = TraceKey(RunKey{"h", 5, 2}, 7, 0);
  EXPECT_EQ(key, "ticktrace.v1\nh\n5\n2\n7\n0");
  // FNV-1a-128 and -64 of the key texts, computed outside this code.
  EXPECT_EQ(Hex(TraceIdOf(key)), "ef8d3e5c641d3d445dcfca5aec139fb6");
  EXPECT_EQ(Hex(RootSpanIdOf(key)), "766aa57c586eff8c");
  EXPECT_EQ(Hex(StageSpanIdOf(key, "md->strategy", 0)), "bb3d1c946f8338c3");
  // Order ids are unsigned: 2^64 - 1 is written as such.
  EXPECT_EQ(TraceKey(RunKey{"h", 5, 2}, UINT64_MAX, 1),
            "ticktrace.v1\nh\n5\n2\n18446744073709551615\n1");
}

TEST(OtlpJson, SpecShape) {
  ExportRequest r;
  r.scope_version = "1";
  ResourceSpans rs;
  rs.resource.push_back(StringAttribute("service.name", "md"));
  Span s;
  s.trace_id.fill(0xab);
  s.span_id.fill(0x01);
  s.parent_span_id = SpanId{};
  s.parent_span_id->fill(0x02);
  s.name = "n";
  s.start_unix_ns = 1796420533750923504ull;
  s.end_unix_ns = 1796420533750935031ull;
  s.attributes.push_back(IntAttribute("i", 5));
  s.attributes.push_back(BoolAttribute("b", true));
  s.attributes.push_back(DoubleAttribute("d", 1.5));
  SpanLink l;
  l.trace_id.fill(0xcd);
  l.span_id.fill(0xef);
  s.links.push_back(l);
  s.status_code = StatusCode::kError;
  s.status_message = "migrated";
  rs.spans.push_back(s);
  r.resource_spans.push_back(rs);
  EXPECT_EQ(EncodeJson(r),
            R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"md"}}]},)"
            R"("scopeSpans":[{"scope":{"name":"ticktrace","version":"1"},"spans":[{)"
            R"("traceId":"abababababababababababababababab","spanId":"0101010101010101",)"
            R"("parentSpanId":"0202020202020202","name":"n","kind":1,)"
            R"("startTimeUnixNano":"1796420533750923504","endTimeUnixNano":"1796420533750935031",)"
            R"("attributes":[{"key":"i","value":{"intValue":"5"}},{"key":"b","value":{"boolValue":true}},)"
            R"({"key":"d","value":{"doubleValue":1.5}}],)"
            R"("links":[{"traceId":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd","spanId":"efefefefefefefef","attributes":[]}],)"
            R"("status":{"code":2,"message":"migrated"}}]}]}]})");
}

TEST(OtlpHttp, TracesUrl) {
  EXPECT_EQ(*TracesUrl("http://127.0.0.1:4318"), "http://127.0.0.1:4318/v1/traces");
  EXPECT_EQ(*TracesUrl("http://collector:4318/"), "http://collector:4318/v1/traces");
  EXPECT_EQ(*TracesUrl("https://otlp.example/otlp/v1/traces"), "https://otlp.example/otlp/v1/traces");
  for (const char* bad : {"", "127.0.0.1:4318", "ftp://h", "http://", "http://:4318",
                          "http://h:0", "http://h:99999", "http://h:x", "http://h/a b",
                          "http://user:pw@h:4318"}) {
    const absl::StatusOr<std::string> u = TracesUrl(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(u.status())) << bad;
    if (!u.ok()) {
      EXPECT_EQ(u.status().message().find('\n'), absl::string_view::npos);
    }
  }
}

TEST(OtlpBatches, StayUnderTheLimit) {
  ExportRequest r;
  for (int p = 0; p < 3; ++p) {
    ResourceSpans rs;
    rs.resource.push_back(StringAttribute("service.name", "process " + std::to_string(p)));
    for (int i = 0; i < 400; ++i) {
      Span s;
      s.trace_id.fill(static_cast<uint8_t>(i));
      s.span_id.fill(static_cast<uint8_t>(p));
      s.name = std::string(50, 'a' + static_cast<char>(p));
      rs.spans.push_back(s);
    }
    r.resource_spans.push_back(rs);
  }
  const size_t limit = 10'000;
  const std::vector<EncodedBatch> batches = EncodeBatches(r, limit);
  size_t spans = 0;
  for (const EncodedBatch& b : batches) {
    EXPECT_LE(b.body.size(), limit);
    spans += b.spans;
  }
  EXPECT_EQ(spans, 1200u);
  EXPECT_GT(batches.size(), 10u);
  // One body when the limit allows: the same bytes as the whole request.
  const std::vector<EncodedBatch> one = EncodeBatches(r, kDefaultMaxBodyBytes);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].body, EncodeProtobuf(r));
  EXPECT_TRUE(EncodeBatches(ExportRequest{}, limit).empty());
}

}  // namespace
}  // namespace ticktrace::otlp
