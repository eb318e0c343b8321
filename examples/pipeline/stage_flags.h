// The flags every pipeline program shares (--session, --work-ns, --pin,
// --tsc-hz, --queue-timeout-ms), registered on a FlagParser.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_
#define TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_

#include "flag_parser.h"
#include "stages.h"

namespace ticktrace::examples {

// Registers the shared flags writing into `*options`, whose current values are
// the defaults. `options` must outlive parsing.
void AddStageFlags(FlagParser* parser, StageOptions* options);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_STAGE_FLAGS_H_
