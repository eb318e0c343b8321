// docs/store.md documents every flag bit and every counter the schema owner
// defines (store/include/ticktrace/store/flags.h, names.h), with the same values.

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

std::string Doc() {
  std::ifstream in(std::string(TICKTRACE_SOURCE_DIR) + "/docs/store.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(StoreDocs, ListsEveryFlagWithItsBit) {
  const std::string doc = Doc();
  ASSERT_FALSE(doc.empty());
  for (const FlagName& f : kFlagNames) {
    const std::string row = absl::StrCat("| `", f.bit, "` | ", std::string(f.name), " |");
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/store.md lacks the row " << row;
  }
}

TEST(StoreDocs, ListsEveryCounter) {
  const std::string doc = Doc();
  for (const CounterInfo& c : kCounters) {
    const std::string row = absl::StrCat("| `", std::string(c.name), "` |");
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/store.md lacks the counter " << c.name;
  }
}

TEST(StoreDocs, SaysTheSchemaVersion) {
  EXPECT_NE(Doc().find("`meta.schema_version` is `4`"), std::string::npos);
}

}  // namespace
}  // namespace ticktrace::store
