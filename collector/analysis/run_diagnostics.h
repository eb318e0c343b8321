// Says aloud when a run is empty or mis-declared, instead of leaving a user
// to infer it from zero counts: no segment of the session while other
// sessions have some, a declared tag never seen while undeclared tags arrive,
// a declared order that most samples contradict. Each is said once, as one
// line (the collector prints it on stderr and keeps it in the store's
// run_notes, so that the viewer repeats it; docs/collector.md#diagnostics).
//
// Thread model: the analysis thread (Check, from the collector's analysis
// loop about once a second and once more at the end of the run).

#ifndef TICKTRACE_COLLECTOR_ANALYSIS_RUN_DIAGNOSTICS_H_
#define TICKTRACE_COLLECTOR_ANALYSIS_RUN_DIAGNOSTICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collector/sinks/stage_stats.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {

// What the analysis has seen so far, as the checks need it.
struct RunObservation {
  int64_t elapsed_ms = 0;   // since the collector began draining
  bool end_of_run = false;  // the last check: every piece of evidence is in
  bool live = true;         // draining segments (not a replay)
  size_t processes_seen = 0;
  uint64_t outside_pipeline = 0;       // records of tags not in the pipeline
  std::vector<std::string> tags_seen;  // registered by any process
  std::vector<StageSummary> stages;
};

class RunDiagnostics {
 public:
  // No segment of the session after this long: a producer makes its segment
  // at its first trace call and the collector looks for new segments every
  // 100 ms, so a producer started beside the collector shows up well within
  // it; any longer and a user waits for figures that will never come.
  static constexpr int64_t kNoSegmentAfterMs = 3000;
  // Tags register as a process first uses them, and a pipeline's later
  // stages may start a little after its first ones: a declared tag is
  // judged missing this long after the first record outside the pipeline
  // (or at the end of the run).
  static constexpr int64_t kTagGraceMs = 2000;
  // A declared order is judged once this many samples of its hops exist (or
  // at the end of the run): the first orders of a run, and hops across
  // cores, can read negative on their own; a majority of 100 cannot.
  static constexpr uint64_t kOrderJudgedAfterSamples = 100;

  // `pipeline`: the declared stage tags in order; empty when learned.
  // `shm_sessions`: the sessions that have segments in /dev/shm and how many
  // each (SessionsInShm); called only when the session has none.
  using SessionLister = std::function<std::map<std::string, size_t>()>;
  RunDiagnostics(std::string session, std::vector<std::string> pipeline,
                 SessionLister shm_sessions);

  // Runs the checks not yet said; returns the lines said by this call.
  std::vector<store::RunNote> Check(const RunObservation& seen);
  // Everything said so far, oldest first (the store's copy).
  const std::vector<store::RunNote>& notes() const { return notes_; }

 private:
  void CheckEmpty(const RunObservation& seen);
  void CheckTags(const RunObservation& seen);
  void CheckOrder(const RunObservation& seen);
  void Say(std::string kind, std::string text);

  std::string session_;
  std::vector<std::string> pipeline_;
  SessionLister shm_sessions_;
  int64_t outside_since_ms_ = -1;  // elapsed_ms when outside_pipeline was first > 0
  std::vector<store::RunNote> notes_;
  size_t returned_ = 0;  // notes_ already returned by Check
};

// The sessions that have ticktrace segments in /dev/shm now, with how many.
std::map<std::string, size_t> SessionsInShm();

// Levenshtein distance (insertions, deletions, substitutions of bytes).
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_ANALYSIS_RUN_DIAGNOSTICS_H_
