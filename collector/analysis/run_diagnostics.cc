#include "collector/analysis/run_diagnostics.h"

#include <dirent.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/name_text.h"
#include "ticktrace/segment_reader.h"

namespace ticktrace::collect {

std::map<std::string, size_t> SessionsInShm() {
  std::map<std::string, size_t> out;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return out;
  while (const dirent* e = ::readdir(dir)) {
    absl::StatusOr<SegmentId> id = ParseSegmentName(e->d_name);
    // Anyone may create a file in /dev/shm: its name is printed escaped.
    if (id.ok()) ++out[EscapeName(id->session)];
  }
  ::closedir(dir);
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

RunDiagnostics::RunDiagnostics(std::string session, std::vector<std::string> pipeline,
                               SessionLister shm_sessions)
    : session_(std::move(session)),
      pipeline_(std::move(pipeline)),
      shm_sessions_(std::move(shm_sessions)) {}

std::vector<store::RunNote> RunDiagnostics::Check(const RunObservation& seen) {
  CheckEmpty(seen);
  CheckTags(seen);
  CheckOrder(seen);
  std::vector<store::RunNote> fresh(notes_.begin() + static_cast<ptrdiff_t>(returned_),
                                    notes_.end());
  returned_ = notes_.size();
  return fresh;
}

void RunDiagnostics::Say(std::string kind, std::string text) {
  for (const store::RunNote& n : notes_) {
    if (n.kind == kind) return;
  }
  notes_.push_back(store::RunNote{std::move(kind), std::move(text)});
}

// No process of the session after kNoSegmentAfterMs (or in a whole shorter
// run): the sessions that do have segments are the likely typo.
void RunDiagnostics::CheckEmpty(const RunObservation& seen) {
  if (!seen.live || seen.processes_seen > 0) return;
  if (seen.elapsed_ms < kNoSegmentAfterMs && !seen.end_of_run) return;
  std::map<std::string, size_t> shm = shm_sessions_ ? shm_sessions_() : SessionsInShm();
  shm.erase(session_);
  std::string others;
  if (shm.empty()) {
    others = "no other session has segments in /dev/shm either";
  } else {
    std::vector<std::string> parts;
    for (const auto& [name, n] : shm) {
      parts.push_back(absl::StrCat(name, " (", n, n == 1 ? " segment)" : " segments)"));
    }
    others = absl::StrCat("sessions with segments in /dev/shm: ", absl::StrJoin(parts, ", "));
  }
  const int64_t seconds = std::min(seen.elapsed_ms, kNoSegmentAfterMs) / 1000;
  Say("empty_session", absl::StrCat("no segment of session ", session_, " after ", seconds, " s; ",
                                    others, " (a producer's session is its TICKTRACE_SESSION)"));
}

// Declared tags no process registered, while records of undeclared tags
// arrive: named with the closest undeclared tag of each.
void RunDiagnostics::CheckTags(const RunObservation& seen) {
  if (pipeline_.empty() || seen.outside_pipeline == 0) return;
  if (outside_since_ms_ < 0) outside_since_ms_ = seen.elapsed_ms;
  if (seen.elapsed_ms - outside_since_ms_ < kTagGraceMs && !seen.end_of_run) return;
  const std::set<std::string> registered(seen.tags_seen.begin(), seen.tags_seen.end());
  const std::set<std::string> declared(pipeline_.begin(), pipeline_.end());
  std::vector<std::string> unseen, undeclared;
  for (const std::string& t : pipeline_) {
    if (!registered.contains(t)) unseen.push_back(t);
  }
  for (const std::string& t : registered) {
    if (!declared.contains(t)) undeclared.push_back(t);
  }
  if (unseen.empty() || undeclared.empty()) return;
  std::vector<std::string> closest;
  for (const std::string& t : unseen) {
    const std::string* best = &undeclared.front();
    for (const std::string& u : undeclared) {
      if (EditDistance(t, u) < EditDistance(t, *best)) best = &u;
    }
    closest.push_back(absl::StrCat(t, " -> ", *best));
  }
  Say("unseen_tags",
      absl::StrCat("--pipeline tag", unseen.size() == 1 ? " " : "s ", absl::StrJoin(unseen, ", "),
                   " never seen while undeclared tags arrive (", absl::StrJoin(undeclared, ", "),
                   "; outside_pipeline ", seen.outside_pipeline,
                   "); closest match: ", absl::StrJoin(closest, ", ")));
}

// Most samples of the declared hops read backwards (out_of_order, negative
// or skew): the data's order is told by which hops run backwards.
void RunDiagnostics::CheckOrder(const RunObservation& seen) {
  if (pipeline_.size() < 2) return;
  uint64_t all = 0, backwards = 0;
  std::vector<bool> reversed(pipeline_.size() - 1, false);
  for (size_t i = 0; i + 1 < pipeline_.size(); ++i) {
    const std::string name = absl::StrCat(pipeline_[i], "->", pipeline_[i + 1]);
    for (const StageSummary& s : seen.stages) {
      if (s.stage != name || s.kind != StageKind::kTransition) continue;
      const uint64_t back = s.out_of_order + s.negative + s.skew;
      all += s.samples_all;
      backwards += back;
      reversed[i] = 2 * back > s.samples_all;
    }
  }
  if (all == 0 || 2 * backwards <= all) return;
  if (all < kOrderJudgedAfterSamples && !seen.end_of_run) return;
  // Each tag's place: one step forward per hop, one back per reversed hop.
  std::vector<std::pair<int, size_t>> place(pipeline_.size());
  int at = 0;
  for (size_t i = 0; i < pipeline_.size(); ++i) {
    place[i] = {at, i};
    if (i < reversed.size()) at += reversed[i] ? -1 : 1;
  }
  std::sort(place.begin(), place.end());
  std::vector<std::string> shown;
  for (const auto& [p, i] : place) shown.push_back(pipeline_[i]);
  Say("pipeline_order",
      absl::StrCat("--pipeline ", absl::StrJoin(pipeline_, ","),
                   " looks reversed or wrong: ", backwards, " of ", all,
                   " hop samples run backwards (out_of_order, negative or skew); the data shows ",
                   absl::StrJoin(shown, ",")));
}

}  // namespace ticktrace::collect
