// victim.distributed end to end: a real codl-controller and two real codl-agents (two "hosts"
// on loopback; the bench in bench/multinode/ uses network namespaces) run codl-victim --comm tcp
// as one rank per agent;
// the trial's phases (comm_s included) are rank 0's, and a rank that cannot run fails the
// trial naming it while the other rank is stopped.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

class TwoHosts {
 public:
  explicit TwoHosts(const std::string& dir) : dir_(dir) {
    address_ = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
    controller_ = Process({Bin("codl-controller"), "--listen", address_, "--db", dir_ + "/c.db",
                           "--heartbeat-interval", "200ms", "--insecure"},
                          dir_ + "/controller.log");
    // Both agents listen on 127.0.0.1: with --insecure an agent serves gRPC's local (loopback)
    // credentials, which closed the controller's connection to one listening on 127.0.0.2
    // ("UNAVAILABLE: Socket closed"). MASTER_ADDR is still the host agent a registered, and
    // the ranks are separate processes under separate agents.
    for (const auto& [id, ip] :
         {std::pair<std::string, std::string>{"a", "127.0.0.1"}, {"b", "127.0.0.1"}}) {
      agents_.emplace_back(
          Process({Bin("codl-agent"), "--controller", address_, "--id", id, "--listen", ip + ":0",
                   "--scratch-root", dir_, "--state-dir", dir_ + "/state-" + id, "--insecure"},
                  dir_ + "/agent-" + id + ".log"));
    }
  }
  bool Ready() {
    return WaitUntil(
        [&] {
          auto r = Ctl({"agents", "--json"}, 10);
          size_t alive = 0;
          std::stringstream ss(r.out);
          for (std::string line; std::getline(ss, line);)
            alive += line.find("\"alive\":true") != std::string::npos;
          return r.exit_code == 0 && alive >= 2;
        },
        20);
  }
  CommandResult Ctl(std::vector<std::string> args, double timeout = 180) {
    args.insert(args.begin(), {Bin("codlctl"), "--controller", address_});
    return RunCommand(args, timeout);
  }
  std::string Logs() const {
    std::string all;
    for (const char* f : {"controller.log", "agent-a.log", "agent-b.log"})
      all += std::string("==== ") + f + "\n" + ReadFile(dir_ + "/" + f);
    return all;
  }

 private:
  std::string dir_;
  std::string address_;
  Process controller_;
  std::vector<Process> agents_;
};

class DistributedVictimIt : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("codl-dist");
    // One dataset both ranks read (each its own shard): generated once, before the agents race.
    auto gen = RunCommand({Bin("codl-victim"), "gen-data", "--dir", dir_ + "/data", "--samples",
                           "32", "--sample-size", "16KiB"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    // An agent running as root runs victims as nobody: they must reach and read the dataset.
    namespace fs = std::filesystem;
    const auto readable = fs::perms::others_read | fs::perms::group_read;
    const auto traversable = readable | fs::perms::others_exec | fs::perms::group_exec;
    fs::permissions(dir_, traversable, fs::perm_options::add);
    for (const auto& e : fs::recursive_directory_iterator(dir_ + "/data")) {
      fs::permissions(e.path(), e.is_directory() ? traversable : readable, fs::perm_options::add);
    }
    fs::permissions(dir_ + "/data", traversable, fs::perm_options::add);
  }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string Experiment(const std::string& extra_args) const {
    return "name: dist\n"
           "victim:\n"
           "  command: [" +
           Bin("codl-victim") + ", run, --dir, " + dir_ +
           "/data, --comm, tcp, --steps, '6', --warmup-steps, '1',\n"
           "            --samples, '32', --sample-size, 16KiB, --batch-size, '2', --gemm-count,\n"
           "            '0', --io-mode, buffered, --allreduce-size, 4MiB" +
           extra_args +
           "]\n"
           "  warmup_steps: 1\n"
           "  timeout: 60s\n"
           "  distributed: true\n"
           "  master_port: " +
           std::to_string(FreeLoopbackPort()) +
           "\n"
           "  nodes: [a, b]\n"
           "repetitions: 2\nsettle: 0s\nwarmup_trials: 1\n";
  }
  std::string dir_;
};

TEST_F(DistributedVictimIt, TwoAgentsRunOneRankEachAndReportRankZerosCommPhase) {
  TwoHosts c(dir_);
  ASSERT_TRUE(c.Ready()) << c.Logs();
  WriteFile(dir_ + "/exp.yaml", Experiment(""));
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err << c.Logs();
  auto res = c.Ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  bool comm = false;
  for (const auto& p : j["pairings"]) {
    EXPECT_EQ(p["n_failed"].get<int>(), 0) << res.out << c.Logs();
    for (const auto& ph : p["phases"]) comm |= ph["phase"] == "comm_s";
  }
  EXPECT_TRUE(comm) << "comm_s missing: " << res.out;
  EXPECT_NE(ReadFile(dir_ + "/controller.log").find("victim distributed on a, b"),
            std::string::npos)
      << c.Logs();
}

TEST_F(DistributedVictimIt, ARankThatFailsFailsTheTrialNamingItAndStopsTheOther) {
  TwoHosts c(dir_);
  ASSERT_TRUE(c.Ready()) << c.Logs();
  // --world-size 3 on both ranks: rank 0 waits for a rank 2 that never comes, rank 1 is
  // refused by rank 0. Short timeouts keep it bounded.
  WriteFile(dir_ + "/exp.yaml", Experiment(", --world-size, '3', --connect-timeout, 2s"));
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"}, 120);
  EXPECT_NE(sub.exit_code, 0);
  const std::string all = sub.out + sub.err + c.Logs();
  EXPECT_NE(all.find("victim rank"), std::string::npos) << all;
  EXPECT_NE(all.find("failed"), std::string::npos) << all;
  EXPECT_TRUE(ProcessesMatching(dir_ + "/data").empty()) << "a rank outlived the run";
}

}  // namespace
}  // namespace codl::testing
