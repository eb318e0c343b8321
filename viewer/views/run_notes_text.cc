#include "viewer/views/run_notes_text.h"

#include "absl/strings/str_cat.h"

namespace ticktrace::view {

std::string RunNotesText(const std::vector<store::RunNote>& notes, const std::string& prefix) {
  std::string out;
  for (const store::RunNote& n : notes) absl::StrAppend(&out, prefix, "note: ", n.text, "\n");
  return out;
}

nlohmann::ordered_json RunNotesJson(const std::vector<store::RunNote>& notes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const store::RunNote& n : notes) out.push_back({{"kind", n.kind}, {"text", n.text}});
  return out;
}

}  // namespace ticktrace::view
