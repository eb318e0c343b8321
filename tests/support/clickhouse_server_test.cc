// The ClickHouse test fixture itself: a real server starts on free ports,
// answers SQL over HTTP, keeps its data across Stop()/Restart() on the same
// port, and leaves nothing behind.

#include "tests/support/clickhouse_server.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace ticktrace::testing {
namespace {

TEST(ClickHouseServerTest, StartsQueriesRestartsAndCleansUp) {
  if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
  std::string dir;
  {
    absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start();
    ASSERT_TRUE(ch.ok()) << ch.status();
    ClickHouseServer& server = **ch;
    dir = server.dir();
    EXPECT_GT(server.http_port(), 0);
    EXPECT_EQ(server.Uri("tt"), "clickhouse://127.0.0.1:" + std::to_string(server.http_port()) +
                                    "/tt");
    ASSERT_TRUE(server.Query("CREATE DATABASE fixture_test").ok());
    ASSERT_TRUE(server.Query("CREATE TABLE fixture_test.t (x UInt64) ENGINE = MergeTree "
                             "ORDER BY x").ok());
    ASSERT_TRUE(server.Query("INSERT INTO fixture_test.t VALUES (1), (2), (40)").ok());

    const int port = server.http_port();
    ASSERT_TRUE(server.Stop().ok());
    EXPECT_FALSE(server.running());
    EXPECT_FALSE(server.Query("SELECT 1").ok()) << "a stopped server answered";
    ASSERT_TRUE(server.Restart().ok()) << server.LogTail();
    EXPECT_EQ(server.http_port(), port);
    absl::StatusOr<std::string> sum = server.Query("SELECT sum(x) FROM fixture_test.t");
    ASSERT_TRUE(sum.ok()) << sum.status();
    EXPECT_EQ(*sum, "43\n");

    // A killed server comes back too (same data).
    server.Kill();
    ASSERT_TRUE(server.Restart().ok()) << server.LogTail();
    sum = server.Query("SELECT count() FROM fixture_test.t");
    ASSERT_TRUE(sum.ok()) << sum.status();
    EXPECT_EQ(*sum, "3\n");

    // Errors carry the server's message.
    absl::StatusOr<std::string> bad = server.Query("SELECT no_such_column FROM fixture_test.t");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("no_such_column"), std::string::npos)
        << bad.status();
  }
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0) << dir << " was left behind";
}

TEST(ClickHouseServerTest, TwoServersRunSideBySide) {
  if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> a = ClickHouseServer::Start();
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> b = ClickHouseServer::Start();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE((*a)->http_port(), (*b)->http_port());
  ASSERT_TRUE((*a)->Query("CREATE DATABASE only_in_a").ok());
  absl::StatusOr<std::string> in_b =
      (*b)->Query("SELECT count() FROM system.databases WHERE name = 'only_in_a'");
  ASSERT_TRUE(in_b.ok()) << in_b.status();
  EXPECT_EQ(*in_b, "0\n");
}

}  // namespace
}  // namespace ticktrace::testing
