// docs/operations.md#pinning-the-collector: `--cpu N` pins every collector thread to core N (checked
// in /proc for each of its threads while it runs), a core outside its allowed
// set is refused with one line and exit 2, and the CPU the collector used is
// reported at exit (the `cpu:` line) and stored (collector_cpu_ms).

#include <sched.h>

#include <dirent.h>

#include <fstream>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using CpuPinTest = RelTestOf<"cpupin">;

// "Cpus_allowed_list:\t3" of /proc/<pid>/task/<tid>/status, per thread.
std::vector<std::string> ThreadsAllowedCpus(pid_t pid) {
  std::vector<std::string> out;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(absl::StrCat(dir, "/", e->d_name, "/status"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        const size_t v = line.find_first_not_of(" \t", 18);
        out.push_back(v == std::string::npos ? "" : line.substr(v));
      }
    }
  }
  closedir(d);
  return out;
}

TEST_F(CpuPinTest, PinsEveryThreadAndReportsTheCpuUsed) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) last = c;
  }
  ASSERT_GE(last, 0);
  const pid_t c = StartCollector({"--cpu", std::to_string(last)});
  // The drain, analysis and store writer threads are up once it drains; a
  // producer makes sure of that.
  const pid_t producer =
      StartProducer({"--mode", "seq", "--orders", "2000", "--hold", "1"}, "producer.log");
  ASSERT_TRUE(WaitCollectorReads(producer)) << ReadFile(log());
  const std::vector<std::string> threads = ThreadsAllowedCpus(c);
  EXPECT_GE(threads.size(), 3u);
  for (const std::string& cpus : threads) EXPECT_EQ(cpus, std::to_string(last));
  kill(producer, SIGTERM);
  EXPECT_EQ(WaitExit(producer, 60s), 0);
  Forget(producer);
  StopCollector(c);
  const std::string text = ReadFile(log());
  EXPECT_NE(text.find("% of one core"), std::string::npos) << text;
  StoreQuery q(db());
  EXPECT_GE(Counter(q, "collector_cpu_ms"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM counters WHERE name='collector_cpu_ms'"), 1);
}

TEST_F(CpuPinTest, RefusesACoreOutsideTheAllowedSet) {
  const std::string out = dir_.File("refused.log");
  const pid_t c = Spawn(CollectorArgv({"--cpu", std::to_string(CPU_SETSIZE - 1)}), out);
  children_.Add(c);
  EXPECT_EQ(WaitExit(c, 30s), 2);
  Forget(c);
  const std::string text = ReadFile(out);
  EXPECT_NE(text.find("--cpu"), std::string::npos) << text;
  EXPECT_NE(text.find("not a core this collector may run on"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_FALSE(FileExists(db())) << "a refused start created the store";
}

}  // namespace
}  // namespace ticktrace::reliability
