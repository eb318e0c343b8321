// OpenWriter picks the backend by URI; LocalStatePath says where the
// collector keeps a store's journal and checkpoint. (ClickHouse itself:
// clickhouse_writer_test.cc, with a real server.)

#include "ticktrace/store/open.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

TEST(LocalStatePathTest, SqliteStoresKeepTheirPathClickHouseGetsOnePerSessionAndStore) {
  EXPECT_EQ(LocalStatePath("/var/lib/tt/x.db", "s1"), "/var/lib/tt/x.db");
  EXPECT_EQ(LocalStatePath("ticktrace.db", "s1"), "ticktrace.db");
  EXPECT_EQ(LocalStatePath("clickhouse://127.0.0.1:8123/tt", "s1"),
            "ticktrace-s1@127.0.0.1_8123_tt");
  EXPECT_EQ(LocalStatePath("clickhouse://10.1.0.1:9/tt", "s1"), "ticktrace-s1@10.1.0.1_9_tt");
  // A session name cannot make it leave the current directory.
  EXPECT_EQ(LocalStatePath("clickhouse://[::1]:8123/tt", "../x/y"),
            "ticktrace-.._x_y@___1__8123_tt");
}

TEST(OpenWriterTest, RefusesABadUriAndOpensSqlite) {
  absl::StatusOr<std::unique_ptr<Writer>> bad = OpenWriter("mysql://x");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  char dir[] = "/tmp/ticktrace_open_writer_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.db";
  absl::StatusOr<std::unique_ptr<Writer>> w = OpenWriter("sqlite:" + path);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->location(), path);
  w->reset();
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(OpenWriterTest, AClickHouseServerThatDoesNotAnswerFailsWithinTheOpenTimeout) {
  OpenWriterOptions o;
  o.open_timeout_ms = 300;
  o.on_notice = [](const std::string&) {};
  // Port 1 on loopback: nothing listens there.
  absl::StatusOr<std::unique_ptr<Writer>> w = OpenWriter("clickhouse://127.0.0.1:1/tt", o);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(absl::IsUnavailable(w.status())) << w.status();
  EXPECT_NE(w.status().message().find("clickhouse://127.0.0.1:1/tt"), std::string::npos)
      << w.status();
}

}  // namespace
}  // namespace ticktrace::store
