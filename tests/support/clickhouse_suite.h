// Test helper: the ClickHouse server a whole gtest suite shares, started in
// its SetUpTestSuite (tests/support/clickhouse_server.h runs the server).

#ifndef TICKTRACE_TESTS_SUPPORT_CLICKHOUSE_SUITE_H_
#define TICKTRACE_TESTS_SUPPORT_CLICKHOUSE_SUITE_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/support/clickhouse_server.h"

namespace ticktrace::testing {

// A started server for the suite, owned by the caller (a suite's static,
// deleted in TearDownTestSuite). Null when clickhouse-server is not installed
// (the tests then skip, with ClickHouseServer::SkipReason) or when it did not
// start, which is also a test failure.
inline ClickHouseServer* StartSuiteServer() {
  if (ClickHouseServer::SkipReason()) return nullptr;
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start();
  if (!ch.ok()) {
    ADD_FAILURE() << ch.status();
    return nullptr;
  }
  return std::move(*ch).release();
}

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_SUPPORT_CLICKHOUSE_SUITE_H_
