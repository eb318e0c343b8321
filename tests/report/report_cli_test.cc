// `ticktrace-view report` on bad input, through RunViewer (the binary's
// whole main): one line on stderr, a non-zero exit, no --out left behind,
// an existing --out kept unless --force, and the store never written.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "store_fixture.h"
#include "viewer/cli/commands.h"

namespace ticktrace::view {
namespace {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Result Report(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  std::ostringstream out;
  std::ostringstream err;
  Result r;
  r.exit_code = RunViewer(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool OneLine(const std::string& text) {
  return !text.empty() && text.back() == '\n' && text.find('\n') == text.size() - 1;
}

class ReportCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.File("known.db");
    testing::WriteKnownStore(db_);
    out_ = dir_.File("report.html");
  }
  testing::TempDir dir_;
  std::string db_;
  std::string out_;
};

TEST_F(ReportCliTest, WritesTheReportAndSaysWhere) {
  const testing::FileSnapshot before = testing::Snapshot(db_);
  const Result r = Report({"--db", db_, "--out", out_});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("-> " + out_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data lost"), std::string::npos) << r.out;  // dropped 3, malformed 1
  const std::string html = testing::ReadFile(out_);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("id=\"loss-banner\""), std::string::npos);
  EXPECT_TRUE(testing::Snapshot(db_) == before) << "the store was written";
  // Nothing but the store (and its WAL files, if any) and the report.
  for (const std::string& name : dir_.List()) {
    EXPECT_TRUE(name.rfind("known.db", 0) == 0 || name == "report.html") << name;
  }
}

TEST_F(ReportCliTest, ExistingOutIsKeptWithoutForceAndReplacedWithIt) {
  { std::ofstream(out_) << "precious"; }
  Result r = Report({"--db", db_, "--out", out_});
  EXPECT_EQ(r.exit_code, kExitRuntimeError);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadFile(out_), "precious");

  r = Report({"--db", db_, "--out", out_, "--force", "--run", "1", "--slowest", "1"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  EXPECT_NE(testing::ReadFile(out_).find("ticktrace report: run 1"), std::string::npos);
}

TEST_F(ReportCliTest, BadInputIsOneLineAndNoFile) {
  const testing::FileSnapshot before = testing::Snapshot(db_);
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--db", dir_.File("missing.db"), "--out", out_}, kExitRuntimeError, "missing.db"},
      {{"--db", db_, "--out", out_, "--run", "99"}, kExitRuntimeError, "99"},
      {{"--db", db_, "--out", out_, "--slowest", "0"}, kExitUsageError, "--slowest"},
      {{"--db", db_, "--out", out_, "--run", "x"}, kExitUsageError, "--run"},
      {{"--db", db_}, kExitUsageError, "--out"},
      {{"--db", db_, "--out", db_}, kExitUsageError, "store itself"},
      {{"--db", db_, "--out", db_, "--force"}, kExitUsageError, "store itself"},
      {{"--db", db_, "--out", dir_.File("no/such/dir/r.html")}, kExitRuntimeError, "r.html"},
  };
  for (const Case& c : cases) {
    const Result r = Report(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_TRUE(OneLine(r.err)) << r.err;
    EXPECT_EQ(r.err.rfind("ticktrace-view: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out_)) << r.err;
  }
  EXPECT_TRUE(testing::Snapshot(db_) == before) << "the store was written";
  EXPECT_FALSE(std::filesystem::exists(dir_.File("missing.db")));
}

TEST_F(ReportCliTest, DashWritesToStdout) {
  // WriteOutput sends "-" to std::cout, not to RunViewer's stream: capture it.
  ::testing::internal::CaptureStdout();
  const Result r = Report({"--db", db_, "--out", "-"});
  const std::string stdout_text = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  EXPECT_NE(stdout_text.find("</html>"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out_));
}

}  // namespace
}  // namespace ticktrace::view
