// What the collector said about a run (its diagnostics: an empty session,
// unseen tags, a reversed pipeline; store::RunNote), as the viewer repeats
// them in `summary`, `runs` and the report.
#ifndef TICKTRACE_VIEW_RUN_NOTES_TEXT_H_
#define TICKTRACE_VIEW_RUN_NOTES_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ticktrace/store/rows.h"

namespace ticktrace::view {

// One line per note, "<prefix>note: <text>\n"; "" when there is none.
std::string RunNotesText(const std::vector<store::RunNote>& notes, const std::string& prefix = "");

// [{"kind": ..., "text": ...}, ...] (docs/viewer.md, "summary --json").
nlohmann::ordered_json RunNotesJson(const std::vector<store::RunNote>& notes);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_RUN_NOTES_TEXT_H_
