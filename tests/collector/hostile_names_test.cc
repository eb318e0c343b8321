// Names are data (common/name_text.h): tag, process and thread names with
// bytes that are not UTF-8 and with terminal escape sequences, replayed from
// a hand-built archive by the real collector, then read by the real viewer
// (summary text and --json, export chrome, csv and otlp-json). Nothing
// aborts (the viewer once died of an uncaught JSON type_error.316), every
// output shows the same escaped text, and no raw ESC or CSI byte reaches the
// terminal. The same names put raw into a store by hand come out alike.

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect {
namespace {

using testing::AnnounceProcess;
using testing::ArchiveBuilder;
using testing::ReadFile;
using testing::Spawn;
using testing::Stamp;
using testing::StoreQuery;
using testing::TempDir;
using testing::WaitExit;

// The raw names (string literals split where a hex escape would swallow the
// next letters) and, by hand from the rules in common/name_text.h, what each
// becomes: \xHH (lowercase) for every byte that is not valid UTF-8 and for
// every byte of a control character (C0, DEL, C1); valid UTF-8 kept.
//   ESC [ 3 1 m (set red)                  -> \x1b[31m
const std::string kTag0 = "md\x1b[31mrx";
const std::string kTag0Escaped = "md\\x1b[31mrx";
//   e-acute (C3 A9, valid) kept; FF (never UTF-8) escaped
const std::string kTag1 = "d\xc3\xa9" "cide\xff";
const std::string kTag1Escaped = "d\xc3\xa9" "cide\\xff";
//   ESC ] 0 ; ... BEL (set the window title); C3 then '(' (C3 needs a
//   continuation byte 80-BF): C3 escaped, '(' kept
const std::string kProcess = "evil\x1b]0;pwned\x07" "\xc3(";
const std::string kProcessEscaped = "evil\\x1b]0;pwned\\x07\\xc3(";
//   C2 9B is U+009B, the one-character CSI: a C1 control, both bytes escaped
const std::string kThread = "t\xc2\x9b" "2J";
const std::string kThreadEscaped = "t\\xc2\\x9b2J";
const std::string kStageEscaped = kTag0Escaped + "->" + kTag1Escaped;

constexpr int kOrders = 20;

// No raw control character that a terminal acts on: ESC, BEL, or the C1
// CSI (C2 9B in UTF-8, or a lone 9B).
void ExpectNoRawControls(const std::string& text, const std::string& what) {
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << what << ": raw ESC\n" << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << what << ": raw BEL\n" << text;
  EXPECT_EQ(text.find('\x9b'), std::string::npos) << what << ": raw CSI\n" << text;
}

class HostileNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ArchiveBuilder b;
    std::string chunks;
    ProcessChunk p;
    p.process_id = 1;
    p.pid = 1001;
    p.start_ticks = 42;
    p.segment = "ticktrace.test.1001";
    p.name = kProcess;
    AnnounceProcess(p, {kTag0, kTag1}, &chunks);
    ThreadChunk th;
    th.process_id = 1;
    th.slot = 0;
    th.generation = 1;
    th.tid = 1001;
    th.name = kThread;
    ChunkEncoder::Thread(th, &chunks);
    b.Raw(chunks);
    // kOrders orders, tag 0 then tag 1 100 ns later (1 GHz).
    std::vector<abi::Record> records;
    for (uint64_t i = 1; i <= kOrders; ++i) {
      records.push_back(Stamp(0, i, i * 10000));
      records.push_back(Stamp(1, i, i * 10000 + 100));
    }
    b.Records(1, records);
    raw_ = dir_.File("in.raw");
    b.Write(raw_);
    db_ = dir_.File("store.db");
  }

  // Runs `argv`; returns the exit code; stdout in out_, stderr in err_.
  int Run(const std::vector<std::string>& argv) {
    const std::string out = dir_.File("stdout");
    const std::string err = dir_.File("stderr");
    std::remove(out.c_str());
    std::remove(err.c_str());
    std::string command;
    for (const std::string& a : argv) absl::StrAppend(&command, "'", a, "' ");
    absl::StrAppend(&command, ">'", out, "' 2>'", err, "'");
    const int status = std::system(command.c_str());
    out_ = ReadFile(out);
    err_ = ReadFile(err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int Replay() {
    return Run({TICKTRACE_COLLECTOR_BIN, "--session", absl::StrCat("t_names_", getpid()),
                "--replay", raw_, "--db", db_});
  }
  int View(std::vector<std::string> args) {
    args.insert(args.begin(), TICKTRACE_VIEW_BIN);
    return Run(args);
  }

  // The stage names `summary --json` lists.
  std::set<std::string> SummaryJsonStages() {
    EXPECT_EQ(View({"summary", "--db", db_, "--json"}), 0) << err_;
    std::set<std::string> stages;
    const nlohmann::json j = nlohmann::json::parse(out_, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << out_;
    if (j.is_discarded() || !j.contains("stages")) return stages;
    for (const auto& s : j["stages"]) stages.insert(s.at("stage").get<std::string>());
    return stages;
  }

  TempDir dir_;
  std::string raw_;
  std::string db_;
  std::string out_;
  std::string err_;
};

TEST_F(HostileNamesTest, EveryOutputShowsTheSameEscapedNamesAndNothingAborts) {
  ASSERT_EQ(Replay(), 0) << out_ << err_;
  ExpectNoRawControls(out_ + err_, "collector");
  EXPECT_NE(out_.find(kStageEscaped), std::string::npos) << out_;

  // The store holds the escaped names.
  {
    StoreQuery q(db_);
    EXPECT_EQ(q.Text("SELECT name FROM tags WHERE tag_id = 0"), kTag0Escaped);
    EXPECT_EQ(q.Text("SELECT name FROM tags WHERE tag_id = 1"), kTag1Escaped);
    EXPECT_EQ(q.Text("SELECT name FROM processes"), kProcessEscaped);
    EXPECT_EQ(q.Text("SELECT name FROM threads"), kThreadEscaped);
    EXPECT_EQ(q.Int(absl::StrCat("SELECT count FROM stage_stats WHERE stage = '", kStageEscaped,
                                 "'")),
              kOrders);
  }

  EXPECT_EQ(View({"summary", "--db", db_}), 0) << err_;
  ExpectNoRawControls(out_ + err_, "summary");
  EXPECT_NE(out_.find(kStageEscaped), std::string::npos) << out_;

  EXPECT_EQ(SummaryJsonStages().count(kStageEscaped), 1u) << out_;

  EXPECT_EQ(View({"export", "--db", db_, "--format", "chrome", "--out", "-"}), 0) << err_;
  {
    const nlohmann::json j = nlohmann::json::parse(out_, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << out_;
    std::set<std::string> names;
    for (const auto& e : j.at("traceEvents")) {
      if (e.contains("name") && e["name"].is_string()) names.insert(e["name"].get<std::string>());
      if (e.contains("args") && e["args"].contains("name")) {
        names.insert(e["args"]["name"].get<std::string>());
      }
    }
    EXPECT_EQ(names.count(kTag0Escaped), 1u) << out_;
    EXPECT_EQ(names.count(kTag1Escaped), 1u) << out_;
    // The process's track is named "<name> [<pid>]".
    EXPECT_EQ(names.count(kProcessEscaped + " [1001]"), 1u) << out_;
    EXPECT_EQ(names.count(kThreadEscaped), 1u) << out_;
  }

  EXPECT_EQ(View({"export", "--db", db_, "--format", "csv", "--out", "-"}), 0) << err_;
  ExpectNoRawControls(out_, "csv");
  EXPECT_NE(out_.find(kStageEscaped), std::string::npos) << out_;

  EXPECT_EQ(View({"export", "--db", db_, "--format", "otlp-json", "--out", "-"}), 0) << err_;
  {
    const nlohmann::json j = nlohmann::json::parse(out_, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << out_;
    const std::string dumped = j.dump();
    EXPECT_NE(dumped.find(nlohmann::json(kStageEscaped).dump()), std::string::npos) << out_;
  }
}

TEST_F(HostileNamesTest, RawBytesPutIntoAStoreByHandAreEscapedAlike) {
  ASSERT_EQ(Replay(), 0) << out_ << err_;
  // Another tool writes the raw names into the store: the viewer shows them
  // exactly as the collector would have stored them.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE stage_stats SET stage = ? WHERE stage = ?", -1, &s,
                                 nullptr),
              SQLITE_OK);
    const std::string raw_stage = kTag0 + "->" + kTag1;
    sqlite3_bind_text(s, 1, raw_stage.data(), static_cast<int>(raw_stage.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, kStageEscaped.data(), static_cast<int>(kStageEscaped.size()),
                      SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE processes SET name = ?", -1, &s, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(s, 1, kProcess.data(), static_cast<int>(kProcess.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    // The tables a store keeps outside its schema version are read alike:
    // a note and a stage's clock of raw bytes.
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO run_notes(run_id, kind, text) VALUES(1, ?1, ?2);",
                                 -1, &s, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(s, 1, kThread.data(), static_cast<int>(kThread.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, kProcess.data(), static_cast<int>(kProcess.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    ASSERT_EQ(sqlite3_prepare_v2(
                  db, "INSERT INTO stage_clocks(run_id, stage, side, clock) VALUES(1, ?1, 'begin', ?2)",
                  -1, &s, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(s, 1, raw_stage.data(), static_cast<int>(raw_stage.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, kTag1.data(), static_cast<int>(kTag1.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  EXPECT_EQ(View({"summary", "--db", db_}), 0) << err_;
  ExpectNoRawControls(out_ + err_, "summary");
  EXPECT_NE(out_.find(kProcessEscaped), std::string::npos) << "the note\n" << out_;
  EXPECT_NE(out_.find(kTag0Escaped + " by " + kTag1Escaped), std::string::npos)
      << "the stage's clock\n" << out_;
  EXPECT_EQ(SummaryJsonStages().count(kStageEscaped), 1u) << out_;
  EXPECT_EQ(View({"export", "--db", db_, "--format", "chrome", "--out", "-"}), 0) << err_;
  const nlohmann::json j = nlohmann::json::parse(out_, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out_;
  const std::string quoted = nlohmann::json(kProcessEscaped + " [1001]").dump();
  EXPECT_NE(j.dump().find(quoted), std::string::npos) << out_;
}

}  // namespace
}  // namespace ticktrace::collect
