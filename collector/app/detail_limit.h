// --retain-detail: how much order detail the store keeps, and the limit it
// has when the flag is not given (docs/operations.md#retention-and-disk).
//
//   (not given)   the default size limit (below)
//   none          keep every order's detail
//   8h            detail older than 8 h goes; the default size limit holds too
//   2GB, 512MiB   detail beyond this store size goes (oldest first)
//   5%            ... beyond 5% of the space the store may use
//   8h,2GB        both
//
// The default: 10% of the space the store may use, at most 10 GB. "The
// space the store may use" is its filesystem's free space at start (for an
// unprivileged user: statvfs's f_bavail) plus what the store's files take
// already, so that a store that holds yesterday's detail is not judged as
// if that space were gone. A share alone would give a store on a large disk
// hundreds of GB of detail that no one asked for and no viewer query wants
// to scan; a fixed size alone could fill a small disk. At --detail tail
// (about 0.4 B per record) 10 GB holds an 8 h day at 500 000 records/s; at
// --detail all, minutes of the same rate: the collector says how long
// (store_projection.h).
//
// A store whose size is not ours to measure (ClickHouse: the server's disk)
// has no default size limit; an explicit SIZE is handed to it as before.

#ifndef TICKTRACE_COLLECTOR_APP_DETAIL_LIMIT_H_
#define TICKTRACE_COLLECTOR_APP_DETAIL_LIMIT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ticktrace::collect {

// --retain-detail as typed, parsed.
struct DetailLimitSpec {
  enum class Size { kDefault, kNone, kBytes, kShare };
  Size size = Size::kDefault;
  uint64_t bytes = 0;             // kBytes
  double share = 0;               // kShare: 0.05 for "5%"
  std::optional<int64_t> age_ns;  // detail older than this goes
  std::string text;               // as typed ("" : not given)
};

// InvalidArgument, one line naming --retain-detail, for anything but the
// forms above (an age up to 3650d, a size up to 1 PiB, a share in (0, 100]%;
// at most one age and one size; "none" alone).
absl::StatusOr<DetailLimitSpec> ParseDetailLimit(absl::string_view text);

inline constexpr double kDefaultDetailShare = 0.10;
inline constexpr uint64_t kDefaultDetailCapBytes = 10'000'000'000;

// The default limit for a store that may use `usable_bytes` (free space
// plus the store's own files): kDefaultDetailShare of it, at most
// kDefaultDetailCapBytes.
uint64_t DefaultDetailLimitBytes(uint64_t usable_bytes);

// The limit a run works under, and where it comes from.
struct DetailLimit {
  uint64_t bytes = 0;  // 0: no size limit
  // For the start and projection lines: "default: 10% of /var/lib/ticktrace's
  // free space, at most 10 GB", "--retain-detail 2GB", "--retain-detail none".
  std::string origin;
};

// `spec` for a store whose files are in `directory` ("" : not a local store,
// see above) and take `store_bytes` now, on a filesystem with `free_bytes`
// available. InvalidArgument for a share on a store that is not local.
absl::StatusOr<DetailLimit> ResolveDetailLimit(const DetailLimitSpec& spec,
                                               const std::string& directory,
                                               uint64_t store_bytes, uint64_t free_bytes);

// Bytes available to an unprivileged user on the filesystem of `directory`
// (statvfs: f_bavail x f_frsize); nullopt when it cannot be read.
std::optional<uint64_t> FreeBytes(const std::string& directory);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_APP_DETAIL_LIMIT_H_
