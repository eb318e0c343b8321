// OpenWriter picks the backend by the parsed URI; LocalStatePath says where
// the collector keeps a store's journal and checkpoint; StoreUri's accessors
// answer what callers outside store/ used to read off the scheme.
// (ClickHouse itself: clickhouse_writer_test.cc, with a real server.)

#include "ticktrace/store/open.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

// `text` parsed; the test fails on a URI that does not parse.
StoreUri Uri(const std::string& text) {
  absl::StatusOr<StoreUri> uri = ParseStoreUri(text);
  EXPECT_TRUE(uri.ok()) << uri.status();
  return uri.value_or(StoreUri{});
}

TEST(StoreUriTest, LocalFileIsThePathOfAFileStoreAndUnsetForAServer) {
  EXPECT_EQ(Uri("x.db").local_file(), "x.db");
  EXPECT_EQ(Uri("sqlite:/var/lib/tt/x.db").local_file(), "/var/lib/tt/x.db");
  EXPECT_EQ(StoreUri::LocalFile("a/b.db").local_file(), "a/b.db");
  EXPECT_EQ(Uri("clickhouse://127.0.0.1:8123/tt").local_file(), std::nullopt);
}

TEST(StoreUriTest, ToStringParsesBackToTheSameStore) {
  for (const std::string text : {"x.db", "sqlite:/a/b.db", "sqlite:////srv/x.db",
                                 "clickhouse://h:9000/db", "clickhouse://[::1]:8123/tt"}) {
    const StoreUri uri = Uri(text);
    const StoreUri again = Uri(uri.ToString());
    EXPECT_EQ(again.local_file(), uri.local_file()) << text;
    EXPECT_EQ(again.ToString(), uri.ToString()) << text;
  }
  EXPECT_EQ(StoreUri::LocalFile("//srv/x.db").ToString(), "sqlite:////srv/x.db");
  EXPECT_EQ(Uri("//srv/x.db").local_file(), "//srv/x.db");
}

TEST(LocalStatePathTest, SqliteStoresKeepTheirPathClickHouseGetsOnePerSessionAndStore) {
  EXPECT_EQ(LocalStatePath(Uri("/var/lib/tt/x.db"), "s1"), "/var/lib/tt/x.db");
  EXPECT_EQ(LocalStatePath(Uri("sqlite:ticktrace.db"), "s1"), "ticktrace.db");
  EXPECT_EQ(LocalStatePath(Uri("clickhouse://127.0.0.1:8123/tt"), "s1"),
            "ticktrace-s1@127.0.0.1_8123_tt");
  EXPECT_EQ(LocalStatePath(Uri("clickhouse://10.1.0.1:9/tt"), "s1"), "ticktrace-s1@10.1.0.1_9_tt");
  // A session name cannot make it leave the current directory.
  EXPECT_EQ(LocalStatePath(Uri("clickhouse://[::1]:8123/tt"), "../x/y"),
            "ticktrace-.._x_y@___1__8123_tt");
}

TEST(OpenWriterTest, RefusesABadUriAndOpensSqlite) {
  absl::StatusOr<StoreUri> bad = ParseStoreUri("mysql://x");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  char dir[] = "/tmp/ticktrace_open_writer_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.db";
  EXPECT_TRUE(absl::IsNotFound(CheckExistingStore(StoreUri::LocalFile(path))));
  absl::StatusOr<std::unique_ptr<Writer>> w = OpenWriter(Uri("sqlite:" + path));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->location(), path);
  // SQLite has no preference and nothing to stop.
  EXPECT_EQ((*w)->preferred_batch_orders(), 0u);
  (*w)->RequestStop();
  w->reset();
  EXPECT_TRUE(CheckExistingStore(StoreUri::LocalFile(path)).ok());
  absl::StatusOr<std::unique_ptr<StoreReader>> r = OpenReader(StoreUri::LocalFile(path));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->path(), path);
  r->reset();
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(OpenWriterTest, AServerStoreIsCheckedWhenItIsOpened) {
  EXPECT_TRUE(CheckExistingStore(Uri("clickhouse://127.0.0.1:1/tt")).ok());
}

TEST(OpenWriterTest, AClickHouseServerThatDoesNotAnswerFailsWithinTheOpenTimeout) {
  OpenWriterOptions o;
  o.open_timeout_ms = 300;
  o.on_notice = [](const std::string&) {};
  // Port 1 on loopback: nothing listens there.
  absl::StatusOr<std::unique_ptr<Writer>> w = OpenWriter(Uri("clickhouse://127.0.0.1:1/tt"), o);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(absl::IsUnavailable(w.status())) << w.status();
  EXPECT_NE(w.status().message().find("clickhouse://127.0.0.1:1/tt"), std::string::npos)
      << w.status();
}

}  // namespace
}  // namespace ticktrace::store
