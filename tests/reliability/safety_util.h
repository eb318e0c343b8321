// Helpers of the safety tests (docs/security.md#tests): another local
// user, played by `nobody` in a forked child (setgroups, setgid, setuid), and
// segments crafted by hand from the layout in ticktrace/abi.h, so that a test
// knows every record an intruder's segment holds without running libtrace.
//
// The tests run as root in CI; where root may not become nobody (some
// containers), NobodyOrSkip() says why and the test is skipped.

#ifndef TICKTRACE_TESTS_RELIABILITY_SAFETY_UTIL_H_
#define TICKTRACE_TESTS_RELIABILITY_SAFETY_UTIL_H_

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "ticktrace/abi.h"

namespace ticktrace::reliability {

// A local account.
struct Account {
  uid_t uid = 65534;
  gid_t gid = 65534;
};

// `nobody` (65534 when the name is unknown).
inline Account Nobody() {
  Account a;
  if (const passwd* pw = getpwnam("nobody"); pw != nullptr) {
    a.uid = pw->pw_uid;
    a.gid = pw->pw_gid;
  }
  return a;
}

// Runs `fn` in a forked child as `who` (or as ourselves when empty); true when
// the child could switch user and `fn` returned true.
inline bool RunAsChild(const std::optional<Account>& who, const std::function<bool()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (who.has_value() &&
        (setgroups(0, nullptr) != 0 || setgid(who->gid) != 0 || setuid(who->uid) != 0 ||
         geteuid() != who->uid)) {
      _exit(2);
    }
    _exit(fn() ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// Why the safety tests cannot play another user here, or "" when they can.
inline std::string CannotPlayNobody() {
  if (geteuid() != 0) return "not root: cannot act as another local user (run as root, as CI does)";
  if (!RunAsChild(Nobody(), [] { return true; })) {
    return "root here may not setuid to nobody (a restricted container?)";
  }
  return "";
}

// A local user and its own group, created for one test (groupadd, useradd:
// no home, no login) and removed again (userdel, groupdel) when destroyed.
// why() says why it could not be made ("" when it was): not root, no
// useradd, or root here may not switch to it.
class ThrowawayAccount {
 public:
  explicit ThrowawayAccount(const std::string& tag) {
    group_ = absl::StrCat("ttg", tag, getpid());
    user_ = absl::StrCat("ttu", tag, getpid());
    if (geteuid() != 0) {
      why_ = "not root: cannot create a throwaway user (run as root, as CI does)";
      return;
    }
    if (access("/usr/sbin/useradd", X_OK) != 0 || access("/usr/sbin/groupadd", X_OK) != 0) {
      why_ = "no /usr/sbin/useradd or groupadd (Debian package 'passwd')";
      return;
    }
    if (std::system(absl::StrCat("/usr/sbin/groupadd ", group_, " >/dev/null 2>&1").c_str()) != 0) {
      why_ = absl::StrCat("groupadd ", group_, " failed");
      return;
    }
    made_group_ = true;
    if (std::system(absl::StrCat("/usr/sbin/useradd -M -N -g ", group_,
                                 " -s /usr/sbin/nologin ", user_, " >/dev/null 2>&1")
                        .c_str()) != 0) {
      why_ = absl::StrCat("useradd ", user_, " failed");
      return;
    }
    made_user_ = true;
    const passwd* pw = getpwnam(user_.c_str());
    if (pw == nullptr) {
      why_ = absl::StrCat("getpwnam ", user_, " found nothing after useradd");
      return;
    }
    account_.uid = pw->pw_uid;
    account_.gid = pw->pw_gid;
    if (!RunAsChild(account_, [] { return true; })) {
      why_ = "root here may not setuid to a new user (a restricted container?)";
    }
  }
  ~ThrowawayAccount() {
    if (made_user_) {
      [[maybe_unused]] int r =
          std::system(absl::StrCat("/usr/sbin/userdel ", user_, " >/dev/null 2>&1").c_str());
    }
    if (made_group_) {
      [[maybe_unused]] int r =
          std::system(absl::StrCat("/usr/sbin/groupdel ", group_, " >/dev/null 2>&1").c_str());
    }
  }
  ThrowawayAccount(const ThrowawayAccount&) = delete;
  ThrowawayAccount& operator=(const ThrowawayAccount&) = delete;

  const std::string& why() const { return why_; }
  const Account& account() const { return account_; }
  const std::string& user() const { return user_; }
  const std::string& group() const { return group_; }

 private:
  std::string user_, group_, why_;
  Account account_;
  bool made_user_ = false, made_group_ = false;
};

// The order ids an intruder's crafted segment uses: far above any the
// tests' producers use, so that the store can be searched for them.
inline constexpr uint64_t kIntruderOrderBase = uint64_t{0xbad} << 40;

// A complete, valid segment (abi.h) for `pid` with one owned slot that holds
// `orders` orders of two stamps each (tags "a" then "b"; order ids
// kIntruderOrderBase + 1..orders), published and not consumed, process name
// `process_name`. `slot_count` slots of `ring_capacity` records.
// REQUIRES: 2 * orders <= ring_capacity, a power of two.
inline std::string CraftSegment(uint32_t pid, uint32_t orders, const std::string& process_name,
                                uint32_t slot_count = 2, uint32_t ring_capacity = 256) {
  constexpr uint32_t kTags = 2;
  const uint64_t size = abi::SegmentSize(kTags, slot_count, ring_capacity);
  // Built in cache-line-aligned memory (the layout's alignment), then copied out.
  struct AlignedFree {
    void operator()(uint8_t* p) const {
      ::operator delete[](p, std::align_val_t(abi::kCacheLineSize));
    }
  };
  std::unique_ptr<uint8_t[], AlignedFree> buf(
      static_cast<uint8_t*>(::operator new[](size, std::align_val_t(abi::kCacheLineSize))));
  std::memset(buf.get(), 0, size);
  uint8_t* base = buf.get();
  auto* h = new (base) abi::SegmentHeader();
  h->abi_version = abi::kAbiVersion;
  h->header_size = sizeof(abi::SegmentHeader);
  h->record_size = sizeof(abi::Record);
  h->ring_capacity = ring_capacity;
  h->slot_count = slot_count;
  h->tag_capacity = kTags;
  h->tag_table_offset = abi::TagTableOffset();
  h->slots_offset = abi::SlotsOffset(kTags);
  h->slot_stride = abi::SlotStride(ring_capacity);
  h->segment_size = size;
  h->pid = pid;
  h->process_start_ticks = 0;  // unknown: alive while the pid exists
  std::memcpy(h->process_name, process_name.data(),
              std::min<size_t>(process_name.size(), abi::kProcessNameMax));
  auto* tags = reinterpret_cast<abi::TagEntry*>(base + h->tag_table_offset);
  std::strcpy(tags[0].name, "a");
  std::strcpy(tags[1].name, "b");
  h->tag_count.store(kTags, std::memory_order_relaxed);
  auto* slot = new (base + h->slots_offset) abi::SlotControl();
  slot->state.store(abi::kSlotOwned, std::memory_order_relaxed);
  slot->tid = pid;
  slot->generation.store(1, std::memory_order_relaxed);
  std::strcpy(slot->thread_name, "intruder");
  auto* records = reinterpret_cast<abi::Record*>(reinterpret_cast<uint8_t*>(slot) +
                                                 sizeof(abi::SlotControl));
  for (uint32_t i = 0; i < orders; ++i) {
    for (uint32_t stage = 0; stage < 2; ++stage) {
      abi::Record& r = records[2 * i + stage];
      r.tsc = 1'000'000 + uint64_t{i} * 10'000 + stage * 2'500;
      r.order_id = kIntruderOrderBase + i + 1;
      r.aux = abi::kAuxUnknown;
      r.tag_id = static_cast<uint16_t>(stage);
      r.kind = abi::kStamp;
    }
  }
  slot->write_index.store(2 * uint64_t{orders}, std::memory_order_relaxed);
  h->magic.store(abi::kMagic, std::memory_order_relaxed);
  return std::string(reinterpret_cast<const char*>(base), size);
}

// Creates /dev/shm/<name> (O_EXCL) as `who` with `mode` holding `bytes`,
// then sized to `file_bytes` when that is larger (a sparse tail).
inline bool PlantShmFile(const std::optional<Account>& who, const std::string& name,
                         const std::string& bytes, mode_t mode, uint64_t file_bytes = 0) {
  return RunAsChild(who, [&] {
    const std::string path = absl::StrCat("/dev/shm/", name);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return false;
    bool ok = fchmod(fd, mode) == 0 &&
              write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    if (ok && file_bytes > bytes.size()) ok = ftruncate(fd, static_cast<off_t>(file_bytes)) == 0;
    close(fd);
    return ok;
  });
}

// The permission bits of `path` (lstat), or -1.
inline int ModeOf(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

}  // namespace ticktrace::reliability

#endif  // TICKTRACE_TESTS_RELIABILITY_SAFETY_UTIL_H_
