// The processes most end-to-end tests start: codl-controller, codl-agent(s) and codlctl over
// loopback gRPC (Cluster), a quick shell victim, and a small memcpy experiment around it.
// Shared by cluster_test.cc and control_plane_test.cc.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/test_util.h"

namespace codl::testing {

// A victim that reports 8 steps as JSON lines; fast and deterministic.
constexpr const char* kQuickVictim =
    R"(for i in 1 2 3 4 5 6 7 8; do echo "{\"step\": $i, \"step_time_s\": 0.01$i, \"phases\": {\"compute_s\": 0.01}}"; sleep 0.02; done)";

inline std::string QuickExperiment(const std::string& name, const std::string& antagonist_nodes,
                                   int reps) {
  return "name: " + name + "\n" +
         "victim:\n"
         "  command: [sh, -c, '" +
         std::string(kQuickVictim) +
         "']\n"
         "  progress: {format: jsonl, field: step_time_s}\n"
         "  warmup_steps: 1\n"
         "  timeout: 60s\n"
         "antagonists:\n"
         "  - name: membw\n"
         "    injector: memcpy\n"
         "    options: {threads: 1, buffer_size: 8MiB}\n"
         "    levels: [0.5, 1.0]\n" +
         antagonist_nodes +
         "pairings: singles\n"
         "repetitions: " +
         std::to_string(reps) +
         "\n"
         "order: {randomize: true, seed: 7}\n"
         "settle: 1s\n"
         "calibration: {duration: 1s}\n"
         "lease: 3s\n";
}

class Cluster {
 public:
  explicit Cluster(const std::string& dir) : dir_(dir) {
    port_ = FreeLoopbackPort();
    address_ = "127.0.0.1:" + std::to_string(port_);
  }
  void StartController() {
    controller_ = Process({Bin("codl-controller"), "--listen", address_, "--db", dir_ + "/c.db",
                           "--heartbeat-interval", "200ms", "--insecure"},
                          dir_ + "/controller.log");
  }
  // `env`: variables set for this agent beside the test's own environment.
  void StartAgent(const std::string& id, std::vector<std::string> extra = {},
                  const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {Bin("codl-agent"),
                                     "--controller",
                                     address_,
                                     "--id",
                                     id,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--scratch-root",
                                     dir_,
                                     "--state-dir",
                                     dir_ + "/state-" + id,
                                     "--insecure"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    agents_.emplace_back(Process(argv, dir_ + "/agent-" + id + ".log", "", env));
    ids_.insert(id);
  }
  bool WaitForAgents(size_t n) {
    return WaitUntil(
        [&] {
          auto r = RunCommand({Bin("codlctl"), "--controller", address_, "agents", "--json"}, 10);
          if (r.exit_code != 0) return false;
          size_t alive = 0;
          std::stringstream ss(r.out);
          std::string line;
          while (std::getline(ss, line)) alive += line.find("\"alive\":true") != std::string::npos;
          return alive >= n;
        },
        20);
  }
  CommandResult Ctl(std::vector<std::string> args, double timeout = 180) {
    args.insert(args.begin(), {Bin("codlctl"), "--controller", address_});
    return RunCommand(args, timeout);
  }
  std::string Logs() {
    std::string all;
    std::vector<std::string> files = {"controller.log"};
    for (const auto& id : ids_) files.push_back("agent-" + id + ".log");
    for (const auto& f : files) all += "==== " + f + "\n" + ReadFile(dir_ + "/" + f);
    return all;
  }
  Process& controller() { return controller_; }
  Process& agent(size_t i) { return agents_[i]; }
  const std::string& address() const { return address_; }

 private:
  std::string dir_;
  int port_;
  std::string address_;
  Process controller_;
  std::vector<Process> agents_;
  std::set<std::string> ids_;  // every agent started, for Logs()
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-it"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string dir_;
};

}  // namespace codl::testing
