#include "collector/app/run_plan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "collector/stream/archive.h"
#include "collector/stream/journal.h"
#include "collector/stream/private_file.h"
#include "ticktrace/store/open.h"
#include "collector/time/time_base.h"

namespace ticktrace::collect {
namespace {

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<std::optional<RunInfo>> ReadLeadingRunInfo(const std::string& path, bool own) {
  absl::StatusOr<int> opened = own ? OpenOwnFileForReading(path) : OpenRegularFileForReading(path);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  std::string head(kArchiveHeaderBytes + kChunkHeaderBytes, '\0');
  const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  std::optional<RunInfo> result;
  absl::Status status;
  if (n < static_cast<ssize_t>(kArchiveHeaderBytes)) {
    status = absl::InvalidArgumentError(absl::StrCat(path, ": too short for a ticktrace archive"));
  } else if (absl::StatusOr<ArchiveHeader> h = DecodeArchiveHeader(head); !h.ok()) {
    status = absl::InvalidArgumentError(absl::StrCat(path, ": ", h.status().message()));
  } else if (n == static_cast<ssize_t>(head.size())) {
    uint32_t type, size;
    std::memcpy(&type, head.data() + kArchiveHeaderBytes, 4);
    std::memcpy(&size, head.data() + kArchiveHeaderBytes + 4, 4);
    if (type == static_cast<uint32_t>(ChunkType::kRunInfo) && size <= (1u << 20)) {
      std::string chunk(kChunkHeaderBytes + size, '\0');
      if (::pread(fd, chunk.data(), chunk.size(), kArchiveHeaderBytes) ==
          static_cast<ssize_t>(chunk.size())) {
        absl::StatusOr<ChunkFrame> f =
            ParseChunkFrame(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size());
        if (f.ok()) {
          absl::StatusOr<RunInfo> info = RunInfo::FromJson(
              std::string_view(reinterpret_cast<const char*>(f->payload), f->payload_bytes));
          if (info.ok()) {
            result = *std::move(info);
          } else {
            status = absl::InvalidArgumentError(absl::StrCat(path, ": ", info.status().message()));
          }
        }
      }
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<RunPlan> PlanLiveRun(const CollectorOptions& o, std::ostream& out) {
  if (o.store_uri.has_value()) {
    absl::Status s = store::CheckExistingStore(*o.store_uri, o.group_writable_store);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  // A planted symlink is named as such (private_file.h), not as "exists".
  if (!o.raw_path.empty()) {
    if (absl::Status s = CheckNotSymlink(o.raw_path); !s.ok()) return s;
  }
  if (!o.raw_path.empty() && PathExists(o.raw_path)) {
    return absl::AlreadyExistsError(
        absl::StrCat("--raw ", o.raw_path, ": exists; refusing to overwrite it"));
  }
  if (!o.raw_path.empty()) {
    // It is created after the store and the journal: make sure it can be.
    const size_t slash = o.raw_path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : o.raw_path.substr(0, slash);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--raw ", o.raw_path, ": cannot create a file in ", dir, ": ", std::strerror(errno)));
    }
  }
  RunPlan plan;
  if (o.store_uri.has_value()) plan.local_state = store::LocalStatePath(*o.store_uri, o.session);
  if (!o.store_uri.has_value() || !o.use_journal) return plan;
  plan.journal_path = JournalPath(plan.local_state);
  const std::string& journal_path = plan.journal_path;
  if (absl::Status s = CheckNotSymlink(journal_path); !s.ok()) return s;
  if (!PathExists(journal_path)) return plan;
  absl::StatusOr<std::optional<RunInfo>> lead = ReadLeadingRunInfo(journal_path, /*own=*/true);
  // Not opened again when it was refused (not ours, not a regular file).
  absl::StatusOr<ArchiveReader> jr =
      lead.ok() ? ArchiveReader::Open(journal_path) : absl::StatusOr<ArchiveReader>(lead.status());
  struct stat st;
  if (lead.ok() && !lead->has_value() && jr.ok() && jr->header().kind == ArchiveKind::kJournal &&
      ::stat(journal_path.c_str(), &st) == 0 &&
      st.st_size < static_cast<off_t>(kArchiveHeaderBytes + kChunkHeaderBytes + (1 << 20))) {
    // Killed while creating it, before its first chunk was durable: it holds
    // no record (records follow the run info), so a new run can start.
    out << "warning: " << journal_path << " holds no run info (a collector died starting); "
        << "removed\n";
    ::unlink(journal_path.c_str());
  } else if (!lead.ok() || !jr.ok() || !lead->has_value() ||
             jr->header().kind != ArchiveKind::kJournal) {
    return absl::FailedPreconditionError(absl::StrCat(journal_path, ": unreadable journal (",
                                                      !lead.ok() ? lead.status().message()
                                                      : !jr.ok() ? jr.status().message()
                                                                 : "no run info",
                                                      "); move it away to start a new run"));
  } else if ((*lead)->session != o.session) {
    return absl::FailedPreconditionError(
        absl::StrCat(journal_path, " holds an unfinished run of session '", (*lead)->session,
                     "'; run with --session ", (*lead)->session, " to finish it first"));
  } else {
    plan.resume_info = **lead;
    plan.resume_run = static_cast<int64_t>(jr->header().run_id);
  }
  return plan;
}

absl::Status SettlePlanWithStore(store::Writer* store, RunPlan* plan, store::RunState* state,
                                 std::ostream& out) {
  if (!plan->resuming() || store == nullptr) return absl::OkStatus();
  absl::StatusOr<store::RunState> looked = store->LookupRun(plan->resume_run);
  if (!looked.ok()) return looked.status();
  *state = *looked;
  if (state->exists && state->ended) {
    // The run ended cleanly but its journal was not removed yet: stale.
    ::unlink(plan->journal_path.c_str());
    plan->resume_info.reset();
  } else if (!state->exists) {
    const std::string aside = absl::StrCat(plan->journal_path, ".orphaned.", RealtimeNowNs());
    if (::rename(plan->journal_path.c_str(), aside.c_str()) != 0) {
      return absl::InternalError(absl::StrCat(plan->journal_path, ": cannot move aside"));
    }
    out << "warning: " << plan->journal_path << " belongs to run " << plan->resume_run
        << ", which the store does not have; moved to " << aside << "\n";
    plan->resume_info.reset();
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::collect
