// Placement and CPU accounting end to end (issue 11, items 4 and 5): cpus: from the YAML reach
// the agent, are applied and recorded per trial; cores used show in the results JSON; a
// placement the node cannot honour fails with the YAML location and the node's CPUs; and
// `codlctl agents` names each agent's placement mode.
#include <sched.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

// The CPUs this test may use, lowest and highest.
std::pair<int, int> OwnCpuRange() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  int lo = -1, hi = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    if (lo < 0) lo = c;
    hi = c;
  }
  return {lo, hi};
}

std::string Experiment(const std::string& victim_cpus, const std::string& antagonist_cpus) {
  return "name: placed\n"
         "victim:\n"
         "  command: [sh, -c, 'for i in 1 2 3 4 5 6; do echo \"{\\\"step_time_s\\\": 0.01}\"; "
         "sleep 0.05; done']\n"
         "  progress: {format: jsonl, field: step_time_s}\n"
         "  timeout: 60s\n"
         "  cpus: \"" +
         victim_cpus +
         "\"\n"
         "antagonists:\n"
         "  - name: idle\n"
         "    injector: noop\n"
         "    levels: [0.01]\n"
         "    cpus: \"" +
         antagonist_cpus +
         "\"\n"
         "repetitions: 1\n"
         "settle: 0.5s\n"
         "calibration: {duration: 0.5s}\n"
         "lease: 5s\n"
         "min_antagonist_samples: 1\n";  // a short victim: the test is about placement
}

class PlacementIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-place"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  CommandResult Run(const std::string& yaml) {
    WriteFile(dir_ + "/e.yaml", yaml);
    return RunCommand({Bin("codlctl"), "run", dir_ + "/e.yaml", "--scratch-root", dir_}, 180, dir_);
  }
  std::string dir_;
};

TEST_F(PlacementIntegrationTest, CpusAreAppliedRecordedAndShownWithCoresUsed) {
  const auto [lo, hi] = OwnCpuRange();
  auto r = Run(Experiment(std::to_string(lo), std::to_string(hi)));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto res = RunCommand(
      {Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  ASSERT_EQ(j["pairings"].size(), 2u) << res.out;
  for (const auto& p : j["pairings"]) {
    EXPECT_EQ(p["victim_cpus"], std::to_string(lo)) << res.out;
    EXPECT_TRUE(p["victim_cores"].is_number()) << res.out;
    if (p["baseline"].get<bool>()) continue;
    const auto& a = p["antagonists"][0];
    EXPECT_EQ(a["cpus"], std::to_string(hi)) << res.out;
    ASSERT_TRUE(a["cores"].is_number()) << res.out;
    EXPECT_LT(a["cores"].get<double>(), 0.5) << res.out;  // noop at 1% of its peak
  }
  // The cores column is -o wide's (the default table fits 120 columns).
  auto table = RunCommand(
      {Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db", "-o", "wide"});
  EXPECT_NE(table.out.find("cores"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("victim "), std::string::npos) << table.out;
}

TEST_F(PlacementIntegrationTest, CpusTheNodeLacksFailWithTheYamlLocationAndTheNodesCpus) {
  const auto [lo, hi] = OwnCpuRange();
  auto r = Run(Experiment("1000", std::to_string(lo)));
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("/e.yaml:3:3: victim: cpus 1000: CPU 1000 not available on node"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("(its CPUs: "), std::string::npos) << all;
  (void)hi;
}

TEST_F(PlacementIntegrationTest, AgentsListTheirPlacementMode) {
  const std::string address = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  Process controller({Bin("codl-controller"), "--listen", address, "--db", dir_ + "/c.db",
                      "--heartbeat-interval", "200ms", "--insecure"},
                     dir_ + "/controller.log");
  Process agent({Bin("codl-agent"), "--controller", address, "--id", "a", "--listen", "127.0.0.1:0",
                 "--scratch-root", dir_, "--insecure"},
                dir_ + "/agent.log");
  std::string json;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto r = RunCommand({Bin("codlctl"), "--controller", address, "agents", "--json"}, 10);
        json = r.out;
        return r.exit_code == 0 && json.find("\"alive\":true") != std::string::npos;
      },
      20))
      << json << ReadFile(dir_ + "/agent.log");
  const bool cgroup = json.find("\"placement\":\"cgroup-v2\"") != std::string::npos;
  const bool affinity = json.find("\"placement\":\"affinity\"") != std::string::npos;
  EXPECT_TRUE(cgroup || affinity) << json;
  auto table = RunCommand({Bin("codlctl"), "--controller", address, "agents"}, 10);
  EXPECT_NE(table.out.find("PLACEMENT"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(cgroup ? "cgroup-v2" : "affinity"), std::string::npos) << table.out;
}

}  // namespace
}  // namespace codl::testing
