#include "common/otlp/span_model.h"

namespace ticktrace::otlp {

KeyValue StringAttribute(std::string_view key, std::string_view value) {
  KeyValue kv{std::string(key), {}};
  kv.value.kind = AnyValue::Kind::kString;
  kv.value.string_value = std::string(value);
  return kv;
}

KeyValue BoolAttribute(std::string_view key, bool value) {
  KeyValue kv{std::string(key), {}};
  kv.value.kind = AnyValue::Kind::kBool;
  kv.value.bool_value = value;
  return kv;
}

KeyValue IntAttribute(std::string_view key, int64_t value) {
  KeyValue kv{std::string(key), {}};
  kv.value.kind = AnyValue::Kind::kInt;
  kv.value.int_value = value;
  return kv;
}

KeyValue DoubleAttribute(std::string_view key, double value) {
  KeyValue kv{std::string(key), {}};
  kv.value.kind = AnyValue::Kind::kDouble;
  kv.value.double_value = value;
  return kv;
}

}  // namespace ticktrace::otlp
