// The command-line conventions (docs/viewer.md#exit-status-and-errors), one table over every installed program
// (cmake/TicktraceInstall.cmake: the collector, the viewer, the demo and the
// example pipeline's programs) and every viewer subcommand:
//   --help       exits 0 and prints our own usage (no Abseil wording),
//                flags spelled with dashes;
//   --version    exits 0 and prints "<program> <version> (<commit>)";
//   --json       on every viewer subcommand prints JSON that parses, on a
//                small store the test writes (store_fixture's known store);
// and a flag the collector and the viewer share has one spelling.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "store_fixture.h"
#include "ticktrace/version.h"

namespace ticktrace::view {
namespace {

struct Result {
  int exit_code = -1;
  std::string out, err;
};

// Runs `program` (a path) with `args`; stdout and stderr through files in `dir`.
Result RunProgram(const std::string& program, const std::vector<std::string>& args,
                  const testing::TempDir& dir) {
  const std::string out_path = dir.File(".stdout"), err_path = dir.File(".stderr");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(126);
    const int null_in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(null_in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<std::string> copy = args;
    std::string path = program;
    std::vector<char*> argv{path.data()};
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  Result r;
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::ReadFile(out_path);
  r.err = testing::ReadFile(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

// Every installed program this build made (tests/viewer/CMakeLists.txt).
std::vector<std::string> Programs() {
  std::vector<std::string> programs =
      absl::StrSplit(TICKTRACE_CONVENTION_PROGRAMS, ',', absl::SkipEmpty());
  programs.insert(programs.begin(), "ticktrace-view");
  return programs;
}

std::string PathOf(const std::string& program) {
  return absl::StrCat(TICKTRACE_BINARY_DIR, "/bin/", program);
}

const char* const kSubcommands[] = {"summary", "orders", "order",     "percentiles", "runs",
                                    "export",  "top",    "report",    "intervals",   "diff"};

// What no user-facing text may say: Abseil's flag library leaking through.
void ExpectNoAbseilWording(const std::string& text, const std::string& what) {
  for (const char* word : {"Flags from", "absl", "Abseil", "--helpfull", "ERROR: Unknown command"}) {
    EXPECT_FALSE(absl::StrContains(text, word)) << what << " says '" << word << "':\n" << text;
  }
}

// Flags in help text are spelled with dashes: no "--word_word".
void ExpectDashedFlags(const std::string& text, const std::string& what) {
  static const std::regex underscore_flag("--[a-z0-9]+_[a-z0-9_]*");
  std::smatch m;
  EXPECT_FALSE(std::regex_search(text, m, underscore_flag))
      << what << " spells a flag with '_': " << m.str(0);
}

TEST(CliConventionsTest, HelpExitsZeroWithOurUsage) {
  testing::TempDir dir;
  std::vector<std::pair<std::string, std::vector<std::string>>> table;
  for (const std::string& p : Programs()) table.push_back({p, {"--help"}});
  for (const char* sub : kSubcommands) table.push_back({"ticktrace-view", {sub, "--help"}});
  for (const auto& [program, args] : table) {
    const std::string what = absl::StrCat(program, " ", absl::StrJoin(args, " "));
    const Result r = RunProgram(PathOf(program), args, dir);
    EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.err;
    EXPECT_TRUE(absl::StrContains(absl::AsciiStrToLower(r.out), "usage")) << what << ":\n" << r.out;
    if (args.size() == 2) {
      EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("usage: ticktrace-view ", args[0])))
          << what << ":\n" << r.out;
    }
    ExpectNoAbseilWording(r.out + r.err, what);
    ExpectDashedFlags(r.out, what);
  }
}

TEST(CliConventionsTest, VersionPrintsVersionAndCommit) {
  testing::TempDir dir;
  // The commit is the one the program was built from: hex, or "unknown"
  // outside a git checkout (cmake/TicktraceVersion.cmake).
  for (const std::string& program : Programs()) {
    std::vector<std::vector<std::string>> calls = {{"--version"}};
    if (program == "ticktrace-view") {
      for (const char* sub : kSubcommands) calls.push_back({sub, "--version"});
    }
    for (const std::vector<std::string>& args : calls) {
      const std::string what = absl::StrCat(program, " ", absl::StrJoin(args, " "));
      const Result r = RunProgram(PathOf(program), args, dir);
      EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.err;
      const std::regex line(absl::StrCat("^", program, " ", std::string(kVersion),
                                         " \\(([0-9a-f]{7,40}|unknown)\\)\n$"));
      EXPECT_TRUE(std::regex_match(r.out, line)) << what << " printed:\n" << r.out;
      ExpectNoAbseilWording(r.out + r.err, what);
    }
  }
}

TEST(CliConventionsTest, SharedFlagsHaveOneSpelling) {
  testing::TempDir dir;
  const Result collector = RunProgram(PathOf("ticktrace-collector"), {"--help"}, dir);
  const Result summary = RunProgram(PathOf("ticktrace-view"), {"summary", "--help"}, dir);
  for (const char* flag : {"--include-flagged", "--store"}) {
    EXPECT_TRUE(absl::StrContains(collector.out, flag)) << flag << "\n" << collector.out;
    EXPECT_TRUE(absl::StrContains(summary.out, flag)) << flag << "\n" << summary.out;
  }
}

TEST(CliConventionsTest, UsageErrorsAreOneLineOfOurOwn) {
  testing::TempDir dir;
  for (const std::string& program : Programs()) {
    const Result r = RunProgram(PathOf(program), {"--no-such-flag"}, dir);
    EXPECT_NE(r.exit_code, 0) << program;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << program << ":\n" << r.err;
    ExpectNoAbseilWording(r.out + r.err, program + " --no-such-flag");
  }
}

TEST(CliConventionsTest, JsonOnEverySubcommandParses) {
  testing::TempDir dir;
  const std::string db = dir.File("known.db");
  testing::WriteKnownStore(db);
  const std::vector<std::vector<std::string>> table = {
      {"summary", "--json"},
      {"orders", "--slowest", "3", "--json"},
      {"order", "50", "--json"},
      {"percentiles", "--stage", "total", "--json"},
      {"runs", "--json"},
      {"export", "--format", "csv", "--out", dir.File("x.csv"), "--json"},
      {"export", "--format", "chrome", "--out", dir.File("x.json"), "--json"},
      {"export", "--format", "hlog", "--out", dir.File("x.hlog"), "--json"},
      {"top", "--iterations", "2", "--interval-ms", "10", "--json"},
      {"report", "--out", dir.File("x.html"), "--json"},
      {"intervals", "--every", "10ms", "--json"},
      {"diff", "--run", "2", "--against", "1", "--json"},
      // The cross-host views (--hosts), on this one-host store.
      {"summary", "--hosts", "all", "--json"},
      {"orders", "--slowest", "3", "--hosts", "all", "--json"},
      {"order", "50", "--hosts", "all", "--json"},
      {"report", "--out", dir.File("hosts.html"), "--hosts", "all", "--json"},
  };
  std::set<std::string> covered;
  for (std::vector<std::string> args : table) {
    covered.insert(args.front());
    args.insert(args.begin() + 1, {"--db", db});
    const std::string what = absl::StrCat("ticktrace-view ", absl::StrJoin(args, " "));
    const Result r = RunProgram(PathOf("ticktrace-view"), args, dir);
    ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.err;
    // top: one object per frame and line; the others one document.
    const std::vector<std::string> documents =
        args.front() == "top" ? std::vector<std::string>(absl::StrSplit(r.out, '\n',
                                                                        absl::SkipEmpty()))
                              : std::vector<std::string>{r.out};
    EXPECT_EQ(documents.size(), args.front() == "top" ? 2u : 1u) << what << ":\n" << r.out;
    for (const std::string& doc : documents) {
      const nlohmann::json j = nlohmann::json::parse(doc, nullptr, /*allow_exceptions=*/false);
      EXPECT_FALSE(j.is_discarded()) << what << " printed no JSON:\n" << doc;
      EXPECT_TRUE(j.is_object()) << what;
    }
  }
  for (const char* sub : kSubcommands) {
    EXPECT_EQ(covered.count(sub), 1u) << sub << " has no --json row in the table";
  }
}

}  // namespace
}  // namespace ticktrace::view
