// ParseSampleCells (sqlite_expand.h) on its own: it touches no SQLite
// connection, so the loadable extension (sqlite_extension.cc) links it
// without the rest of sqlite_expand.cc.
#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_expand.h"

namespace ticktrace::store {

absl::StatusOr<std::vector<SampleCell>> ParseSampleCells(std::string_view json) {
  std::vector<SampleCell> cells;
  size_t i = 0;
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("orders.samples: not [[stage_id,latency_ns,flags],...] at byte ", i));
  };
  auto expect = [&](char c) {
    if (i < json.size() && json[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  auto number = [&](int64_t* v) {
    const std::from_chars_result r = std::from_chars(json.data() + i, json.data() + json.size(), *v);
    if (r.ec != std::errc()) return false;
    i = static_cast<size_t>(r.ptr - json.data());
    return true;
  };
  if (!expect('[')) return bad();
  if (expect(']')) return i == json.size() ? absl::StatusOr<std::vector<SampleCell>>(cells) : bad();
  do {
    int64_t stage = 0, latency = 0, flags = 0;
    if (!expect('[') || !number(&stage) || !expect(',') || !number(&latency) || !expect(',') ||
        !number(&flags) || !expect(']')) {
      return bad();
    }
    if (stage < 0 || stage > UINT32_MAX || flags < 0 || flags > UINT32_MAX) return bad();
    cells.push_back({static_cast<uint32_t>(stage), latency, static_cast<uint32_t>(flags)});
  } while (expect(','));
  if (!expect(']') || i != json.size()) return bad();
  return cells;
}

}  // namespace ticktrace::store
