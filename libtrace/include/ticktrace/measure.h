// START_MEASURE / END_MEASURE / TTT_MEASURE, as trading codebases write them,
// but recording into this thread's ring instead of formatting a log line.
//
//   ticktrace::Tag kDecode{"decode"};
//   ticktrace::Tag kOrderOut{"order_out"};
//
//   TICKTRACE_START_MEASURE(decode_begin);          // const uint64_t decode_begin = rdtsc
//   Decode(msg);
//   TICKTRACE_END_MEASURE(decode_begin, kDecode);   // one kMeasure record: begin, duration
//   ...
//   TICKTRACE_TTT_MEASURE(kOrderOut, order_id);     // one kStamp record for this order
//
// Nothing here formats, converts to ns, allocates or calls the kernel once
// the thread is attached (AttachThisThread(); see trace.h). The
// collector turns ticks into ns and joins TTT stamps by order ID.
//
// Differences from the usual logging START_MEASURE/END_MEASURE macros, on
// purpose:
//   - END_MEASURE takes a ticktrace::Tag (the stage's name), not a logger.
//   - TTT_MEASURE records a TSC stamp keyed by an order ID, not wall-clock
//     nanoseconds; the collector maps ticks to UTC through its anchor.
//
// The unprefixed names START_MEASURE, END_MEASURE and TTT_MEASURE collide
// easily, so they exist only if you ask:
//
//   #define TICKTRACE_SHORT_MACROS
//   #include "ticktrace/measure.h"
//
// Any thread may use these; a START/END pair must run on one thread.

#ifndef TICKTRACE_MEASURE_H_
#define TICKTRACE_MEASURE_H_

#include <cstdint>

#include "ticktrace/trace.h"
#include "ticktrace/tsc.h"

// Declares `const uint64_t VAR` holding the TSC now (plain rdtsc).
#define TICKTRACE_START_MEASURE(VAR) const uint64_t VAR = ::ticktrace::ReadTsc()

// Reads the TSC and records the interval since VAR (from TICKTRACE_START_MEASURE)
// under TAG (a ticktrace::Tag) as one kMeasure record. A statement; needs a ';'.
#define TICKTRACE_END_MEASURE(VAR, TAG)                                  \
  do {                                                                   \
    const uint64_t ticktrace_measure_end_tsc_ = ::ticktrace::ReadTsc();  \
    ::ticktrace::record_interval((TAG), (VAR), ticktrace_measure_end_tsc_); \
  } while (false)

// Records that order ORDER (a uint64_t order ID) reached stage TAG now: one
// kStamp record, exactly ticktrace::stamp(TAG, ORDER). A statement.
#define TICKTRACE_TTT_MEASURE(TAG, ORDER)       \
  do {                                          \
    ::ticktrace::stamp((TAG), (ORDER));         \
  } while (false)

#ifdef TICKTRACE_SHORT_MACROS
#if defined(START_MEASURE) || defined(END_MEASURE) || defined(TTT_MEASURE)
#error "TICKTRACE_SHORT_MACROS: START_MEASURE/END_MEASURE/TTT_MEASURE are already defined; use the TICKTRACE_ names"
#endif
// Short names for the three macros above; same arguments, same behaviour.
#define START_MEASURE(VAR) TICKTRACE_START_MEASURE(VAR)
#define END_MEASURE(VAR, TAG) TICKTRACE_END_MEASURE(VAR, TAG)
#define TTT_MEASURE(TAG, ORDER) TICKTRACE_TTT_MEASURE(TAG, ORDER)
#endif  // TICKTRACE_SHORT_MACROS

#endif  // TICKTRACE_MEASURE_H_
