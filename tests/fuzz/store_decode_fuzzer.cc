// The store's decoders never crash, hang or allocate without bound on
// arbitrary bytes, and what they accept re-encodes to itself.
// The first byte picks the decoder; the rest is its input.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/common/detail.h"
#include "ticktrace/store/histogram.h"
#include "store/sqlite/sqlite_expand.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace ticktrace::store;
  switch (data[0] % 3) {
    case 0: {
      absl::StatusOr<PackedDetail> d = UnpackDetail(bytes);
      if (d.ok()) {
        std::string again;
        PackDetail(*d, &again);
        absl::StatusOr<PackedDetail> d2 = UnpackDetail(again);
        if (!d2.ok() || d2->stamps.size() != d->stamps.size() ||
            d2->samples.size() != d->samples.size()) {
          std::abort();
        }
      }
      break;
    }
    case 1: {
      absl::StatusOr<Histogram> h = Histogram::Decode(bytes);
      if (h.ok()) {
        absl::StatusOr<Histogram> h2 = Histogram::Decode(h->Encode());
        if (!h2.ok() || h2->count() != h->count()) std::abort();
        (void)h->Quantile(0.99);
        Histogram sum;
        if (!sum.MergeEncoded(bytes).ok() || sum.count() != h->count()) std::abort();
      }
      break;
    }
    default:
      (void)ParseSampleCells(bytes);
      break;
  }
  return 0;
}
