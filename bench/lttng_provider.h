// LTTng-UST tracepoint provider for bench/peers_bench.cc: the same fields as a
// ticktrace stamp (a 16-bit tag id and a 64-bit order id). LTTng adds its own
// timestamp (its clock: CLOCK_MONOTONIC via the vDSO) and event header.
//
//   ticktrace_bench:stamp           enabled by run_all.sh's session (the peer measured)
//   ticktrace_bench:stamp_disabled  never enabled: the cost of a compiled-in, idle tracepoint
//
// Built only when pkg-config finds lttng-ust (bench/CMakeLists.txt). The probes
// are instantiated once, in lttng_provider.cc, linked statically into the bench.

#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ticktrace_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_provider.h"

#if !defined(TICKTRACE_BENCH_LTTNG_PROVIDER_H_) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TICKTRACE_BENCH_LTTNG_PROVIDER_H_

#include <lttng/tracepoint.h>
#include <stdint.h>

// Both events carry one payload, so they are two instances of one class.
LTTNG_UST_TRACEPOINT_EVENT_CLASS(
    ticktrace_bench, stamp_fields,
    LTTNG_UST_TP_ARGS(uint16_t, tag_id, uint64_t, order_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint16_t, tag_id, tag_id)
        lttng_ust_field_integer(uint64_t, order_id, order_id)))

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ticktrace_bench, stamp_fields, ticktrace_bench, stamp,
                                    LTTNG_UST_TP_ARGS(uint16_t, tag_id, uint64_t, order_id))

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ticktrace_bench, stamp_fields, ticktrace_bench,
                                    stamp_disabled,
                                    LTTNG_UST_TP_ARGS(uint16_t, tag_id, uint64_t, order_id))

#endif  // TICKTRACE_BENCH_LTTNG_PROVIDER_H_

#include <lttng/tracepoint-event.h>
