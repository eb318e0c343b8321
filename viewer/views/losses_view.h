// The records-lost figure (ticktrace/store/losses.h) as the viewer shows it:
// first in every view, a line of its own, and the same object in JSON.

#ifndef TICKTRACE_VIEW_LOSSES_VIEW_H_
#define TICKTRACE_VIEW_LOSSES_VIEW_H_

#include <nlohmann/json.hpp>
#include <string>

#include "ticktrace/store/losses.h"

namespace ticktrace::view {

// "records lost: 0 of 400000\n", or when not zero "records lost: 1000 of
// 1000 (100%): refused_segment 1000; not in any figure below\n".
std::string RecordsLostLine(const store::RecordLoss& loss);

// {"lost": N, "written": W, "share": x, "by_cause": {"ring_full": n, ...}}
// with every cause, zero or not (docs/viewer.md, "summary --json").
nlohmann::ordered_json RecordsLostJson(const store::RecordLoss& loss);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_LOSSES_VIEW_H_
