// GPU pairings as a user runs them, on gpusim (docs/gpu.md#gpusim-the-gpu-code-without-a-gpu):
// `codlctl run` and a controller with two agents drive codl-victim --device cuda against
// cuda_memcpy, mps_cotenant and nccl at 0.25, 0.5 and max, and the slowdowns the results report
// are checked against what the model says from the node's config alone (gpusim/node.h's rule).
//
// The truth, for a victim whose step is made of one resource (its duty on it near 1) and an
// antagonist that holds a level L of the peak it calibrated alone:
//   * a bandwidth (PCIe H2D, NVLink): both users weigh 1, so the antagonist moves L x B by being
//     active 2L of the time at B/2, and the victim gets B/2 then and B otherwise: 1 / (1 - L)
//     while L <= 1/2; at max the antagonist is always there: 2;
//   * the SMs under MPS: a co-tenant at active-thread fraction p calibrates at p of the SMs
//     alone and gets p / (1 + p) beside the victim (w = 1), so holding L of its peak it is active
//     L (1 + p) of the time and the victim keeps 1 - L p on average: 1 / (1 - L p); at max 1 + p;
//   * HBM copies and SM time are separate resources: a d2d flood costs a GEMM nothing: 1.
// Whatever the rate controller delivers is what the victim sees, so these also check that the
// antagonists hold their levels inside a real experiment.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

using nlohmann::json;

constexpr double kPcieGbps = 1.0;  // the node below; the truths need only the ratios
constexpr double kMpsShare = 0.5;  // mps_cotenant's sm_percent / 100

class GpusimExperiment : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("codl-gpusim-exp");
    chmod(dir_.c_str(), 0755);
    node_ = "exp-" + std::to_string(getpid());
    // A slow node (as GpusimGroundTruth's) so the host work behind the model stays well inside
    // modeled time on a busy 2-core box.
    WriteFile(dir_ + "/node.yaml",
              "count: 2\ndevice: {sms: 16, pcie_h2d_gbps: " + std::to_string(kPcieGbps) +
                  ", pcie_d2h_gbps: 1, fp32_gflops: 1, nvlink_gbps: 0.02}\n");
    setenv("CODL_GPUSIM_CONFIG", (dir_ + "/node.yaml").c_str(), 1);
    setenv("CODL_GPUSIM_NODE", node_.c_str(), 1);
  }
  void TearDown() override {
    // Nothing of the experiments outlives them: no injector, no MPS daemon, no shared memory.
    EXPECT_TRUE(WaitUntil([&] { return ProcessesMatching(dir_).empty(); }, 20))
        << "still running: " << ProcessesMatching(dir_).size() << " processes naming " << dir_;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
      const std::string name = e.path().filename();
      EXPECT_EQ(name.find("codl-gpusim-nccl-"), std::string::npos) << "left behind: " << name;
      EXPECT_EQ(name.find(node_), std::string::npos) << "left behind: " << name;
    }
    unsetenv("CODL_GPUSIM_CONFIG");
    unsetenv("CODL_GPUSIM_NODE");
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }

  // codl-victim on the simulated GPU; `shape` makes its step one resource. 20 steps last over a
  // second: an antagonist needs 5 telemetry samples (200 ms apart) in the run to be judged.
  std::string Victim(const std::string& name, const std::string& shape,
                     const std::string& more = "", const std::string& steps = "20") {
    return "name: " + name + "\nvictim:\n" + more + "  command: [" + Bin("codl-victim") +
           ", run, --dir, " + dir_ + "/data-" + name + ", --device, cuda, --steps, '" + steps +
           "', --warmup-steps, '2', --decode-work, '0', "
           "--samples, '64', --sample-size, 64KiB, " +
           shape +
           "]\n  timeout: 120s\nrepetitions: 3\norder: {seed: 11}\nsettle: 1s\n"
           "calibration: {duration: 2s}\nlease: 10s\n";
  }

  // The results of the latest experiment in `db`, by pairing name.
  static std::map<std::string, json> Pairings(const std::vector<std::string>& where) {
    std::vector<std::string> argv = {Bin("codlctl")};
    argv.insert(argv.end(), where.begin(), where.end());
    argv.insert(argv.end(), {"latest", "-o", "json"});
    const auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, json> by_name;
    if (r.exit_code != 0) return by_name;
    const json j = json::parse(r.out);
    for (const auto& p : j["pairings"]) by_name[p["pairing"].get<std::string>()] = p;
    EXPECT_EQ(j.value("gpu_device", ""), "simulated (gpusim)") << r.out;
    return by_name;
  }

  // Checks `pairing`'s slowdown of `phase` against the model's `truth` (+-3 %).
  // `checked` false: printed only (a figure not yet steady enough to assert; docs/gpu.md).
  static void ExpectPhase(const std::map<std::string, json>& by_name, const std::string& pairing,
                          const std::string& phase, double truth, bool checked = true) {
    SCOPED_TRACE(pairing + " " + phase);
    const auto it = by_name.find(pairing);
    ASSERT_NE(it, by_name.end()) << "no pairing " << pairing;
    const json& p = it->second;
    if (checked) {
      EXPECT_GE(p["n"].get<int>(), 2) << p.dump();
    }
    double slowdown = 0;
    for (const auto& ph : p["phases"]) {
      if (ph["phase"] == phase && ph["slowdown"].is_number()) slowdown = ph["slowdown"];
    }
    std::printf("gpusim experiment: %-14s %-10s slowdown %.4f, model %.4f, error %+.2f %%\n",
                pairing.c_str(), phase.c_str(), slowdown, truth, 100 * (slowdown / truth - 1));
    if (checked) {
      EXPECT_NEAR(slowdown, truth, 0.03 * truth) << p.dump();
    }
  }

  std::string Run(const std::string& name, const std::string& yaml) {
    WriteFile(dir_ + "/" + name + ".yaml", yaml);
    const std::string db = dir_ + "/" + name + ".db";
    const auto r = RunCommand(
        {Bin("codlctl"), "run", dir_ + "/" + name + ".yaml", "--db", db, "--scratch-root", dir_},
        600, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::printf("%s\n", r.out.c_str());
    return db;
  }

  std::string dir_, node_;
};

TEST_F(GpusimExperiment, H2dCopiesBesideCudaMemcpyAtEachLevel) {
  const std::string db = Run(
      "h2d", Victim("h2d", "--gemm-count, '0', --h2d-size, 48MiB") +
                 "antagonists:\n"
                 "  - {name: h2d, injector: cuda_memcpy, options: {direction: h2d, size: 4MiB}, "
                 "levels: [0.25, 0.5, max]}\n");
  const auto p = Pairings({"results", "--db", db});
  ExpectPhase(p, "h2d@0.25", "h2d_s", 1 / (1 - 0.25));
  ExpectPhase(p, "h2d@0.5", "h2d_s", 1 / (1 - 0.5));
  ExpectPhase(p, "h2d@max", "h2d_s", 2.0);
}

TEST_F(GpusimExperiment, GemmBesideD2dCopiesAndAnMpsCotenant) {
  const std::string db =
      Run("sm", Victim("sm", "--gemm-count, '2', --gemm-dim, '256', --h2d-size, 4KiB") +
                    "antagonists:\n"
                    "  - {name: d2d, injector: cuda_memcpy, options: {direction: d2d, size: 4MiB}, "
                    "levels: [0.5, max]}\n"
                    "  - {name: mps, injector: mps_cotenant, options: {sm_percent: 50}, "
                    "levels: [0.25, 0.5, max]}\n"
                    "pairings: singles\n");
  const auto p = Pairings({"results", "--db", db});
  ExpectPhase(p, "d2d@0.5", "compute_s", 1.0);
  ExpectPhase(p, "d2d@max", "compute_s", 1.0);
  ExpectPhase(p, "mps@0.25", "compute_s", 1 / (1 - 0.25 * kMpsShare));
  ExpectPhase(p, "mps@0.5", "compute_s", 1 / (1 - 0.5 * kMpsShare));
  ExpectPhase(p, "mps@max", "compute_s", 1 + kMpsShare);
}

// Two agents, each with a simulated node of its own, and the nccl antagonist's two ranks across
// them (rank 0 on n1's cuda:0, rank 1 on n2's cuda:1). The victim's two ranks run on n1 (cuda:0
// and cuda:1): its allreduce waits for the rank on cuda:0, whose NVLink it shares.
TEST_F(GpusimExperiment, AllreduceBesideNcclAcrossTwoNodes) {
  Cluster c(dir_);
  c.StartController();
  for (const std::string id : {"n1", "n2"}) {
    // A root agent runs victims as nobody with a clean environment; gpusim's node is per user
    // and named by the environment, so the victim must be the agent's user and keep it.
    std::vector<std::string> extra = {"--victim-env", "inherit"};
    if (geteuid() == 0) extra.insert(extra.end(), {"--victim-user", "root"});
    c.StartAgent(id, extra, {{"CODL_GPUSIM_NODE", node_ + "-" + id}});
  }
  ASSERT_TRUE(c.WaitForAgents(2)) << c.Logs();
  WriteFile(
      dir_ + "/nccl.yaml",
      Victim("nccl", "--ranks, '2', --gemm-count, '0', --h2d-size, 4KiB, --allreduce-size, 1MiB",
             "  nodes: {hosts: [n1]}\n", /*steps=*/"40") +  // 2 s: a steadier median
          "antagonists:\n"
          "  - {name: ar, injector: nccl, options: {op: allreduce, size: 1MiB}, "
          "nodes: {hosts: [n1, n2]}, levels: [0.25, 0.5, max]}\n");
  const auto sub = c.Ctl({"submit", dir_ + "/nccl.yaml", "--watch"}, 600);
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err << c.Logs();
  const auto p = Pairings({"--controller", c.address(), "results"});
  // Not yet asserted: over 5 runs +1.6, -1.6, -0.4, +2.4 and -7.0 %, once all 3 flagged (the
  // antagonist's 1 MiB collectives take 52-105 ms on this link, longer than the 50 ms control
  // window; docs/gpu.md, "found, not yet fixed").
  ExpectPhase(p, "ar@0.25", "comm_s", 1 / (1 - 0.25), /*checked=*/false);
  ExpectPhase(p, "ar@0.5", "comm_s", 1 / (1 - 0.5));
  ExpectPhase(p, "ar@max", "comm_s", 2.0);

  // Lease loss: the controller dies mid-trial; within the lease (3 s) and a stop, both agents
  // stop their GPU injectors (cuda_memcpy, both nccl ranks) and the victim on their own.
  WriteFile(dir_ + "/lease.yaml",
            "name: lease\nvictim:\n  nodes: {hosts: [n1]}\n  command: [" + Bin("codl-victim") +
                ", run, --dir, " + dir_ +
                "/data-nccl, --device, cuda, --steps, '40', "
                "--decode-work, '0', --samples, '64', --sample-size, 64KiB, --gemm-count, '0', "
                "--h2d-size, 16MiB]\n  timeout: 120s\n"
                "antagonists:\n"
                "  - {name: h2d, injector: cuda_memcpy, options: {direction: h2d, size: 4MiB}, "
                "levels: [max]}\n"
                "  - {name: ar, injector: nccl, options: {op: allreduce, size: 1MiB}, "
                "nodes: {hosts: [n1, n2]}, levels: [max]}\n"
                "pairings: [[h2d, ar]]\nrepetitions: 1\nsettle: 1s\nlease: 3s\n");
  ASSERT_EQ(c.Ctl({"submit", dir_ + "/lease.yaml"}, 60).exit_code, 0) << c.Logs();
  auto injectors = [&] {
    size_t n = 0;
    for (size_t i : {0, 1}) n += DescendantsMatching(c.agent(i).pid(), "codl-inject").size();
    return n;
  };
  ASSERT_TRUE(WaitUntil([&] { return injectors() == 3; }, 180))
      << "never saw cuda_memcpy and both nccl ranks running\n"
      << c.Logs();
  c.controller().Signal(SIGKILL);
  c.controller().Wait(10);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return injectors() == 0 && DescendantsMatching(c.agent(0).pid(), "codl-victim").empty();
      },
      3 + 15))
      << injectors() << " injectors still running 18 s after the controller died\n"
      << c.Logs();
  for (size_t i : {0, 1}) c.agent(i).Signal(SIGTERM);
  for (size_t i : {0, 1}) EXPECT_EQ(c.agent(i).Wait(30), 0) << c.Logs();
}

}  // namespace
}  // namespace codl::testing
