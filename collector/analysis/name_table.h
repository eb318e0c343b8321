// Interns strings (tag and stage names) to small dense ids, so the per-record
// path compares integers. Ids are stable; names are never removed.
// Not thread-safe: one owner thread.

#ifndef TICKTRACE_COLLECTOR_NAME_TABLE_H_
#define TICKTRACE_COLLECTOR_NAME_TABLE_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace ticktrace::collect {

class NameTable {
 public:
  // The id of `name`, adding it if new.
  uint32_t Intern(std::string_view name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    ids_.emplace(names_.back(), id);
    return id;
  }
  // The id of `name`, or -1 when it was never interned.
  int64_t Find(std::string_view name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? -1 : int64_t{it->second};
  }
  // REQUIRES: id < size().
  const std::string& Name(uint32_t id) const { return names_[id]; }
  uint32_t size() const { return static_cast<uint32_t>(names_.size()); }

 private:
  std::deque<std::string> names_;  // deque: references stay valid as it grows
  absl::flat_hash_map<std::string_view, uint32_t> ids_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_NAME_TABLE_H_
