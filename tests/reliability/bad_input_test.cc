// docs/reliability.md#the-table, "bad flags, bad files, wrong store version": the collector and
// viewer binaries given a bad value or a bad file print one line on stderr
// (prefixed with the program's name), nothing on stdout, exit 2 (usage) or 1
// (runtime), and create or change no file: every file of the data directory
// keeps its bytes and its mtime, and no file appears.
//
// Covers what tests/collector/cli_test.cc and tests/viewer/cli_test.cc do not:
// out-of-range and non-finite numbers, overlong names, bool flags with a value,
// a store that is a directory, empty, truncated or in a missing directory,
// archives that are empty, a directory, cut inside the header, or of a newer
// format, output paths that cannot be written, files the program may not read.
//
// Unreadable files: root reads a file whatever its mode, and CI runs as root,
// so as root the binary runs in a child that drops to `nobody` before exec
// (setgroups, setgid, setuid); the file is root's with mode 0600 in a
// directory that belongs to `nobody` (so that a file the binary wrongly
// created would show). The child checks, before exec, that it cannot open the
// file: the case fails if the privilege drop did not take. As non-root the
// file is simply made mode 0000.
//
// The good store and archive every case refers to are made once per suite
// (one collector replay), in a directory the cases never change.

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

namespace fs = std::filesystem;

struct FileState {
  std::string bytes;
  int64_t mtime_ns = 0;
  bool is_dir = false;
  bool operator==(const FileState&) const = default;
};

// Every file and directory under `root`: bytes, mtime, kind.
std::map<std::string, FileState> SnapshotTree(const std::string& root) {
  std::map<std::string, FileState> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root)) {
    struct stat st;
    if (lstat(e.path().c_str(), &st) != 0) continue;
    FileState f;
    f.is_dir = S_ISDIR(st.st_mode);
    f.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    if (!f.is_dir) f.bytes = ReadFile(e.path());
    out[e.path().string()] = std::move(f);
  }
  return out;
}

struct Result {
  int code = -1;
  std::string out, err;
};

// The account unreadable-file cases run as when the test runs as root:
// `nobody` (65534 when the name is unknown).
struct Account {
  uid_t uid = 65534;
  gid_t gid = 65534;
};
Account Nobody() {
  Account a;
  if (const passwd* pw = getpwnam("nobody"); pw != nullptr) {
    a.uid = pw->pw_uid;
    a.gid = pw->pw_gid;
  }
  return a;
}

// Whether a child of this process can switch to `a` (setgroups, setgid, setuid).
bool CanBecome(const Account& a) {
  const pid_t pid = fork();
  if (pid == 0) {
    const bool ok = setgroups(0, nullptr) == 0 && setgid(a.gid) == 0 && setuid(a.uid) == 0 &&
                    geteuid() == a.uid;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// Who runs a case, and the file it must not be able to read.
struct RunAs {
  std::optional<Account> account;  // empty: this process's own user
  std::string unreadable;          // checked unreadable before exec, when set
  // When set, the program runs from a copy in this directory: the build tree
  // may sit where `account` cannot reach it (the binaries need no library
  // from the build tree).
  std::string exec_dir;
};

// Writes `msg` and errno's text to fd 2 and exits 125; between fork and exec.
[[noreturn]] void ChildFail(const char* msg) {
  const char* e = std::strerror(errno);
  (void)!write(2, msg, std::strlen(msg));
  (void)!write(2, ": ", 2);
  (void)!write(2, e, std::strlen(e));
  (void)!write(2, "\n", 1);
  _exit(125);
}

// Runs `program` with `args` in `cwd`, stdout and stderr to `logs`/out and
// `logs`/err; as `as.account` when set.
Result RunProgram(const std::string& program_path, const std::vector<std::string>& args,
                  const std::string& logs, const RunAs& as = {}) {
  const std::string out_path = logs + "/out", err_path = logs + "/err";
  std::string program = program_path;
  if (!as.exec_dir.empty()) {
    program = as.exec_dir + "/" + fs::path(program_path).filename().string();
    std::error_code ec;
    if (!fs::exists(program)) fs::copy_file(program_path, program, ec);
    chmod(program.c_str(), 0755);
  }
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    collect::testing::BecomeTestChild(parent);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    // Run in the logs dir: a relative file created by mistake would not hide in data/.
    if (chdir(logs.c_str()) != 0) ChildFail("chdir");
    if (as.account.has_value()) {
      if (setgroups(0, nullptr) != 0) ChildFail("setgroups");
      if (setgid(as.account->gid) != 0) ChildFail("setgid");
      if (setuid(as.account->uid) != 0) ChildFail("setuid");
    }
    if (!as.unreadable.empty()) {
      const int fd = open(as.unreadable.c_str(), O_RDONLY);
      if (fd >= 0) {
        errno = 0;
        ChildFail("test setup: the file meant to be unreadable can be read");
      }
      if (errno != EACCES) ChildFail("test setup: the unreadable file cannot be reached");
    }
    execv(program.c_str(), argv.data());
    ChildFail("execv");
  }
  if (pid > 0) setpgid(pid, pid);
  Result r;
  r.code = WaitExit(pid, 60s);
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

// The files every case refers to, made once for the suite: a real store and a
// real raw archive (written by the collector itself) and broken variants.
struct SuiteData {
  TempDir dir;
  std::string data, archive, store, truncated_store, empty, subdir, short_archive, newer_archive,
      missing_dir_file;
  std::string error;  // why the data could not be made, or ""
};

class BadInputTest : public RelTest {
 protected:
  BadInputTest() : RelTest("badin") {}

  static void SetUpTestSuite() {
    suite_ = new SuiteData;
    SuiteData& d = *suite_;
    d.data = d.dir.File("data");
    const std::string logs = d.dir.File("logs");
    fs::create_directory(d.data);
    fs::create_directory(logs);
    collect::testing::ArchiveBuilder b;
    b.Process(1, {"a", "b"});
    for (uint64_t id = 1; id <= 50; ++id) {
      b.Records(1, {collect::testing::Stamp(0, id, id * 1000),
                    collect::testing::Stamp(1, id, id * 1000 + 250)});
    }
    d.archive = d.data + "/good.raw";
    b.Write(d.archive);
    d.store = d.data + "/good.db";
    const Result r =
        RunProgram(kCollector, {"--replay", d.archive, "--db", d.store, "--pipeline", "a,b"}, logs);
    fs::remove_all(logs);
    const std::string store_bytes = ReadFile(d.store);
    if (r.code != 0 || store_bytes.size() <= 8192) {
      d.error = absl::StrCat("the collector could not make the good store (exit ", r.code,
                             ", ", store_bytes.size(), " bytes): ", r.err);
      return;
    }
    d.truncated_store = d.data + "/truncated.db";
    std::ofstream(d.truncated_store, std::ios::binary)
        << store_bytes.substr(0, store_bytes.size() / 2);
    d.empty = d.data + "/empty";
    std::ofstream(d.empty, std::ios::binary).flush();
    d.subdir = d.data + "/adir";
    fs::create_directory(d.subdir);
    const std::string archive_bytes = ReadFile(d.archive);
    d.short_archive = d.data + "/short.raw";
    std::ofstream(d.short_archive, std::ios::binary) << archive_bytes.substr(0, 20);
    d.newer_archive = d.data + "/newer.raw";
    std::string newer = archive_bytes;
    newer[8] = 3;  // format version 3: newer than this collector reads
    std::ofstream(d.newer_archive, std::ios::binary) << newer;
    d.missing_dir_file = d.data + "/no/such/dir/x";
  }
  static void TearDownTestSuite() {
    delete suite_;
    suite_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(suite_, nullptr);
    ASSERT_EQ(suite_->error, "");
    data_ = suite_->data;
    archive_ = suite_->archive;
    store_ = suite_->store;
    truncated_store_ = suite_->truncated_store;
    empty_ = suite_->empty;
    subdir_ = suite_->subdir;
    short_archive_ = suite_->short_archive;
    newer_archive_ = suite_->newer_archive;
    missing_dir_file_ = suite_->missing_dir_file;
    logs_ = dir_.File("logs");
    fs::create_directory(logs_);
  }

  Result Run(const std::string& program, const std::vector<std::string>& args,
             const RunAs& as = {}) {
    return RunProgram(program, args, logs_, as);
  }

  // `args` fails with `code`, one stderr line starting with `prefix`, empty
  // stdout, and `watched` (default data/) exactly as before (bytes, mtimes,
  // no new file).
  void ExpectRefused(const std::string& program, const std::string& prefix,
                     const std::vector<std::string>& args, int code, const RunAs& as = {},
                     const std::string& watched = "") {
    const std::string root = watched.empty() ? data_ : watched;
    std::string what;
    for (const std::string& a : args) what += " '" + a + "'";
    const auto before = SnapshotTree(root);
    const Result r = Run(program, args, as);
    ++cases_;
    if (!as.unreadable.empty()) {
      EXPECT_NE(r.err.find(as.unreadable), std::string::npos)
          << what << ": the error does not name the unreadable file\n"
          << r.err;
      // And says why: the system's word for EACCES, not a guess at the content.
      EXPECT_NE(r.err.find("Permission denied"), std::string::npos)
          << what << ": the error does not say permission was denied\n"
          << r.err;
      absl::PrintF("unreadable %s, run as uid %d: exit %d, %s", as.unreadable,
                   as.account.has_value() ? int(as.account->uid) : int(geteuid()), r.code, r.err);
    }
    EXPECT_EQ(r.code, code) << what << "\n" << r.err;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << what << "\n" << r.err;
    const auto after = SnapshotTree(root);
    EXPECT_TRUE(before == after) << "files created or changed by" << what;
    if (before != after) {
      for (const auto& [path, st] : after) {
        auto it = before.find(path);
        if (it == before.end()) ADD_FAILURE() << "  created " << path;
        else if (!(it->second == st)) ADD_FAILURE() << "  changed " << path;
      }
    }
    // Nothing beside the binary's cwd either (logs/ holds only out and err).
    EXPECT_EQ(std::distance(fs::directory_iterator(logs_), fs::directory_iterator()), 2) << what;
  }

  void Collector(const std::vector<std::string>& args, int code, const RunAs& as = {},
                 const std::string& watched = "") {
    ExpectRefused(kCollector, "ticktrace-collector: ", args, code, as, watched);
  }
  void Viewer(const std::vector<std::string>& args, int code, const RunAs& as = {},
              const std::string& watched = "") {
    ExpectRefused(TICKTRACE_VIEW_BIN, "ticktrace-view: ", args, code, as, watched);
  }
  // A live collector run of 0.1 s on this test's session, storing into `db`.
  std::vector<std::string> Live(const std::string& db) {
    return {"--session", session_, "--tsc-hz", "2e9", "--duration-s", "0.1", "--db", db};
  }

  // A directory the binary may write to, holding a copy of `source` that it
  // may not read: as root, the directory is nobody's (mode 0755) and the copy
  // root's with mode 0600, and the binary runs as nobody; otherwise the copy
  // has mode 0000. The test's temp dir is opened for traversal (0711).
  struct Unreadable {
    std::string dir, file;
    RunAs as;
  };
  Unreadable MakeUnreadable(const std::string& source, const std::string& subdir,
                            const std::string& name) {
    Unreadable u;
    u.dir = dir_.File(subdir);
    u.file = u.dir + "/" + name;
    fs::create_directory(u.dir);
    fs::copy_file(source, u.file);
    EXPECT_EQ(chmod(dir_.path().c_str(), 0711), 0);
    if (geteuid() == 0) {
      const Account nobody = Nobody();
      EXPECT_EQ(chown(u.dir.c_str(), nobody.uid, nobody.gid), 0) << std::strerror(errno);
      EXPECT_EQ(chmod(u.dir.c_str(), 0755), 0);
      EXPECT_EQ(chmod(u.file.c_str(), 0600), 0);
      u.as.account = nobody;
    } else {
      EXPECT_EQ(chmod(u.file.c_str(), 0), 0);
    }
    u.as.unreadable = u.file;
    u.as.exec_dir = dir_.File("bin");
    fs::create_directories(u.as.exec_dir);
    EXPECT_EQ(chmod(u.as.exec_dir.c_str(), 0755), 0);
    return u;
  }

  static inline SuiteData* suite_ = nullptr;
  std::string data_, logs_, archive_, store_, truncated_store_, empty_, subdir_, short_archive_,
      newer_archive_, missing_dir_file_;
  int cases_ = 0;
};

TEST_F(BadInputTest, CollectorBadFlagValuesAreUsageErrors) {
  const std::string db = data_ + "/new.db";
  const std::vector<std::vector<std::string>> cases = {
      {"--session", std::string(65, 's')},
      {"--session", "two words"},
      {"--session", "dots.are.separators"},
      {"--pipeline", std::string(48, 'x')},
      {"--pipeline", "a,b,"},
      {"--pipeline", ","},
      {"--order-timeout-ms", "0"},
      {"--order-timeout-ms", "86400001"},
      {"--order-timeout-ms", "99999999999999999999"},
      {"--order-timeout-ms", "1.5"},
      {"--order-timeout-ms", ""},
      {"--duration-s", "abc"},
      {"--duration-s", "nan"},
      {"--duration-s", "inf"},
      {"--duration-s", "1e400"},
      {"--tsc-hz", "-2e9"},
      {"--tsc-hz", "nan"},
      {"--tsc-hz", "inf"},
      {"--tsc-hz", "1e12"},
      {"--tsc-hz", "0"},
      {"--raw", db},
      {"--replay", db},
      {"-x"},
      {"--order_timeout_ms=5x"},
      {"--db"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--db", db};
    args.insert(args.end(), c.begin(), c.end());
    Collector(args, 2);
  }
  absl::PrintF("FIGURE bad_input collector flags: %d cases\n", cases_);
}

// Found by this suite (Abseil reported these itself: "ERROR: ...", exit 1);
// fixed in collector/app/main.cc (48956f0).
TEST_F(BadInputTest, CollectorBadBoolAndFlagfileAreUsageErrors) {
  const std::string db = data_ + "/new.db";
  Collector({"--db", db, "--include-flagged=maybe"}, 2);
  Collector({"--db", db, "--flagfile=" + missing_dir_file_}, 2);
}

TEST_F(BadInputTest, CollectorBadStoreFilesAreRuntimeErrors) {
  for (const std::string& db : {subdir_, truncated_store_, missing_dir_file_}) {
    Collector(Live(db), 1);
  }
  // Replay into them too: the store is checked before anything is written.
  for (const std::string& db : {subdir_, truncated_store_, missing_dir_file_}) {
    Collector({"--replay", archive_, "--db", db}, 1);
  }
  // A store it may not read: UnreadableFilesAreRuntimeErrors.
  absl::PrintF("FIGURE bad_input collector store files: %d cases\n", cases_);
}

// docs/reliability.md#the-table: "nothing written over"; docs/collector.md: "any other existing
// file ... is refused untouched". An empty file is an existing file that is
// not a ticktrace store.
TEST_F(BadInputTest, CollectorRefusesAnEmptyExistingFileAsStore) {
  Collector(Live(empty_), 1);
}

TEST_F(BadInputTest, CollectorBadArchivesAreRuntimeErrors) {
  const std::string db = data_ + "/replayed.db";
  for (const std::string& archive :
       {empty_, subdir_, short_archive_, newer_archive_, store_, missing_dir_file_}) {
    Collector({"--replay", archive, "--db", db}, 1);
  }
  // An archive it may not read: UnreadableFilesAreRuntimeErrors.
  // A raw archive that cannot be created: the store is not created either.
  // (A --raw in a missing directory: CollectorRawInAMissingDirectoryCreatesNoStore.)
  Collector({"--raw", subdir_, "--db", db, "--session", session_, "--tsc-hz", "2e9",
             "--duration-s", "0.1"},
            1);
  Collector({"--raw", archive_, "--db", db, "--session", session_, "--tsc-hz", "2e9",
             "--duration-s", "0.1"},
            1);
  absl::PrintF("FIGURE bad_input collector archives: %d cases\n", cases_);
}

// Found by this suite: the raw archive was created only after the store (with
// an open run) and its journal, so a --raw in a missing directory failed with
// both left behind (the next start "resumed" a run that never ran). Fixed in
// collector/app/collector.cc (48956f0): --raw's directory is checked first.
TEST_F(BadInputTest, CollectorRawInAMissingDirectoryCreatesNoStore) {
  Collector({"--raw", missing_dir_file_, "--db", data_ + "/replayed.db", "--session", session_,
             "--tsc-hz", "2e9", "--duration-s", "0.1"},
            1);
}

TEST_F(BadInputTest, ViewerBadFilesAreRuntimeErrors) {
  for (const std::string& db : {subdir_, empty_, truncated_store_, archive_, missing_dir_file_}) {
    Viewer({"summary", "--db", db}, 1);
    Viewer({"runs", "--db", db}, 1);
  }
  // A store it may not read: UnreadableFilesAreRuntimeErrors.
  // Well-formed values naming nothing in the store.
  Viewer({"summary", "--db", store_, "--run", "0"}, 1);
  // Export targets that cannot be written.
  Viewer({"export", "--db", store_, "--format", "csv", "--out", missing_dir_file_}, 1);
  Viewer({"export", "--db", store_, "--format", "chrome", "--out", subdir_}, 1);
  absl::PrintF("FIGURE bad_input viewer files: %d cases\n", cases_);
}

// Files the program may not read: exit 1, one line that names the file,
// nothing created beside them. As root (CI) the program runs as nobody (see
// the top of this file); as another user the files are mode 0000.
TEST_F(BadInputTest, UnreadableFilesAreRuntimeErrors) {
  if (geteuid() == 0 && !CanBecome(Nobody())) {
    GTEST_SKIP() << "root here may not setuid to nobody (a restricted container?): no "
                    "unreadable file can be made for the programs";
  }
  // A store: for a live run, and for a replay from an archive it may read.
  const Unreadable store = MakeUnreadable(store_, "store", "locked.db");
  Collector(Live(store.file), 1, store.as, store.dir);
  const std::string readable_archive = store.dir + "/good.raw";
  fs::copy_file(archive_, readable_archive);
  ASSERT_EQ(chmod(readable_archive.c_str(), 0644), 0);
  Collector({"--replay", readable_archive, "--db", store.file}, 1, store.as, store.dir);
  // An archive to replay; the store would go beside it and must not appear.
  const Unreadable archive = MakeUnreadable(archive_, "archive", "locked.raw");
  Collector({"--replay", archive.file, "--db", archive.dir + "/replayed.db"}, 1, archive.as,
            archive.dir);
  // A store for the viewer.
  const Unreadable view = MakeUnreadable(store_, "view", "locked.db");
  Viewer({"summary", "--db", view.file}, 1, view.as, view.dir);
  Viewer({"runs", "--db", view.file}, 1, view.as, view.dir);
  absl::PrintF("FIGURE bad_input unreadable files: %d cases, run as uid %d\n", cases_,
               geteuid() == 0 ? int(Nobody().uid) : int(geteuid()));
}

TEST_F(BadInputTest, ViewerBadFlagValuesAreUsageErrors) {
  const std::vector<std::vector<std::string>> cases = {
      {"summary", "--db", ""},
      {"summary", "--db", store_, "--db", store_},
      {"summary", "--db", store_, "--run", "-1"},
      {"summary", "--db", store_, "--run", "99999999999999999999"},
      {"summary", "--db", store_, "--since", ""},
      {"summary", "--db", store_, "--until", "2026-13-01T00:00:00Z"},
      {"summary", "--db", store_, "--json=yes"},
      {"summary", "--db"},
      {"orders", "--db", store_, "--slowest", "abc"},
      {"orders", "--db", store_, "--slowest", "-3"},
      {"order", "--db", store_, "18446744073709551616"},
      {"order", "--db", store_, "1", "2"},
      {"percentiles", "--db", store_, "--stage"},
      {"export", "--db", store_, "--format", "csv", "--out", ""},
      {"export", "--db", store_, "--format", "csv"},
      {"export", "--db", store_, "--format", "csv", "--out", "-", "--limit", "abc"},
      {"export", "--db", store_, "--format", "csv", "--out", "-", "--limit", "-1"},
      {"export", "--db", store_, "--format", "", "--out", "-"},
      {"top", "--db", store_, "--interval-ms", "abc"},
      {"top", "--db", store_, "--interval-ms", "0"},
  };
  for (const auto& c : cases) Viewer(c, 2);
  absl::PrintF("FIGURE bad_input viewer flags: %d cases\n", cases_);
}

}  // namespace
}  // namespace ticktrace::reliability
