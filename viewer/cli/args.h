// The viewer's own flags and values: the store flags (--store, --db) and
// order IDs. The command-line grammar and help layout are every program's
// (common/flags.h); the subcommand table is viewer/cli/commands.cc.
#ifndef TICKTRACE_VIEW_ARGS_H_
#define TICKTRACE_VIEW_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::view {

// The flags that name the store a subcommand reads: --store URI (sqlite:PATH,
// a plain path, or clickhouse://HOST:PORT/DB) and --db PATH, its short form.
FlagSpec StoreFlag();
FlagSpec DbFlag();

// The store `args` names, parsed (store::ParseStoreUri), as store::OpenReader
// takes it: --store URI, or --db PATH (a SQLite file). InvalidArgument when
// neither or both are given, or when the URI does not parse. The flags are
// --`store_flag` and --`db_flag` (diff's baseline: against-store, against-db).
absl::StatusOr<store::StoreUri> StoreUriFromArgs(const ParsedArgs& args,
                                                 absl::string_view store_flag = "store",
                                                 absl::string_view db_flag = "db");

// Parses a decimal integer that may be a 64-bit order ID: a signed value,
// or an unsigned one above INT64_MAX, kept as its two's-complement bits
// (the store keeps order IDs in SQLite's signed INTEGER).
std::optional<int64_t> ParseOrderId(absl::string_view text);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_ARGS_H_
