// The flags every pipeline program shares (--session, --work-ns, --pin,
// --tsc-hz, --queue-timeout-ms), registered on the one flag parser
// (common/flags.h), and the examples' comma-separated list values.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_
#define TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "stages.h"

namespace ticktrace::examples {

// A pipeline program's flags: usage "[flags]" and `summary` as its synopsis.
CommandSpec StageCommand(std::string summary);

// Registers the shared flags writing into `*options`, whose current values are
// the defaults. `options` must outlive parsing.
void AddStageFlags(BoundFlags* flags, StageOptions* options);

// Parses "a,b,c" into exactly `count` unsigned integers; InvalidArgument in
// the one wording (BadFlagValue) naming `flag` otherwise.
absl::Status ParseUint64List(absl::string_view flag, absl::string_view text, size_t count,
                             std::vector<uint64_t>* out);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_
