#include "common/otlp/trace_ids.h"

#include "absl/strings/str_cat.h"

namespace ticktrace::otlp {
namespace {

// GCC and Clang's 128-bit integer (__extension__: not ISO C++).
__extension__ typedef unsigned __int128 Uint128;

constexpr uint64_t kFnv64Offset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnv64Prime = 0x100000001b3ull;
// 2^88 + 2^8 + 0x3b, and the 128-bit offset basis.
constexpr Uint128 kFnv128Prime =
    (static_cast<Uint128>(1) << 88) | static_cast<Uint128>(0x13b);
constexpr Uint128 kFnv128Offset =
    (static_cast<Uint128>(0x6c62272e07bb0142ull) << 64) | 0x62b821756295c58dull;

SpanId SpanIdFromHash(uint64_t h) {
  if (h == 0) h = 1;
  SpanId id{};
  for (int i = 7; i >= 0; --i) {
    id[static_cast<size_t>(i)] = static_cast<uint8_t>(h & 0xff);
    h >>= 8;
  }
  return id;
}

template <size_t N>
std::string HexOf(const std::array<uint8_t, N>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = kFnv64Offset;
  for (const char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= kFnv64Prime;
  }
  return h;
}

std::array<uint8_t, 16> Fnv1a128(std::string_view bytes) {
  Uint128 h = kFnv128Offset;
  for (const char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= kFnv128Prime;
  }
  std::array<uint8_t, 16> out{};
  for (int i = 15; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(h & 0xff);
    h >>= 8;
  }
  return out;
}

std::string TraceKey(const RunKey& run, uint64_t order_id, uint32_t instance) {
  return absl::StrCat("ticktrace.v1\n", run.host, "\n", run.started_utc_ns, "\n", run.run_id,
                      "\n", order_id, "\n", instance);
}

TraceId TraceIdOf(std::string_view trace_key) {
  TraceId id = Fnv1a128(trace_key);
  if (id == TraceId{}) id[15] = 1;
  return id;
}

SpanId RootSpanIdOf(std::string_view trace_key) {
  return SpanIdFromHash(Fnv1a64(std::string(trace_key).append("\nroot")));
}

SpanId StageSpanIdOf(std::string_view trace_key, std::string_view stage, uint32_t index) {
  return SpanIdFromHash(Fnv1a64(std::string(trace_key).append("\nspan\n").append(stage).append("\n").append(std::to_string(index))));
}

std::string Hex(const TraceId& id) { return HexOf(id); }
std::string Hex(const SpanId& id) { return HexOf(id); }

}  // namespace ticktrace::otlp
