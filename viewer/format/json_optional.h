// An optional figure as JSON: its value, or null when it is unknown (too few
// samples, a column an older store lacks). Every view's JSON writes an
// unknown figure as null, never as 0 (docs/viewer.md, "JSON contract").
// One definition for every view: the unity build compiles several views as
// one unit, where file-local copies of it would collide.
#ifndef TICKTRACE_VIEW_JSON_OPTIONAL_H_
#define TICKTRACE_VIEW_JSON_OPTIONAL_H_

#include <nlohmann/json.hpp>

#include <optional>

namespace ticktrace::view {

template <typename T>
nlohmann::ordered_json OptionalJson(const std::optional<T>& v) {
  return v.has_value() ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_JSON_OPTIONAL_H_
