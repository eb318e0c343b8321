// Trace and span ids of ticktrace orders: derived, never random, so that
// exporting an order twice gives the same ids (an OTLP back end keeps one
// copy) and the collector's live push and the viewer's export of the same
// order agree.
//
// The hash is FNV-1a (draft-eastlake-fnv: the 64-bit and the 128-bit
// variant, their published offset bases and primes), over the bytes of a
// key text. It is fixed here, for every process and every version: neither
// absl::Hash (seeded per process) nor std::hash (unspecified) would do.
// Changing the key texts below changes every id a back end has seen: don't.
//
//   run key     "ticktrace.v1\n" host "\n" run start (UTC ns) "\n" run id
//               The run's store-local id alone would collide across stores;
//               with the host and the start time it does not.
//   trace key   run key "\n" order id (unsigned decimal) "\n" instance
//   trace id    FNV-1a-128(trace key), big-endian (16 bytes)
//   root span   FNV-1a-64(trace key "\nroot"), big-endian (8 bytes)
//   stage span  FNV-1a-64(trace key "\nspan\n" stage "\n" index), where index
//               counts the order instance's earlier samples of the same stage
//               (0 for the first; samples by start time, then stage)
// An all-zero id is invalid in OTLP: a hash of 0 becomes 1 (never met in
// practice, but defined).

#ifndef TICKTRACE_COMMON_OTLP_TRACE_IDS_H_
#define TICKTRACE_COMMON_OTLP_TRACE_IDS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/otlp/span_model.h"

namespace ticktrace::otlp {

// FNV-1a over `bytes`.
uint64_t Fnv1a64(std::string_view bytes);
// The 128-bit hash as 16 bytes, most significant first.
std::array<uint8_t, 16> Fnv1a128(std::string_view bytes);

// What identifies a run beyond its store: the host, the run's start and id.
struct RunKey {
  std::string host;
  int64_t started_utc_ns = 0;
  int64_t run_id = 0;
};

// The trace key text of one order instance (see above).
std::string TraceKey(const RunKey& run, uint64_t order_id, uint32_t instance);

TraceId TraceIdOf(std::string_view trace_key);
SpanId RootSpanIdOf(std::string_view trace_key);
SpanId StageSpanIdOf(std::string_view trace_key, std::string_view stage, uint32_t index);

// Lower-case hex of an id, as OTLP/JSON writes it.
std::string Hex(const TraceId& id);
std::string Hex(const SpanId& id);

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_TRACE_IDS_H_
