// victim.distributed end to end: a real codl-controller and two real codl-agents (two "hosts"
// on loopback; the bench in bench/multinode/ uses network namespaces) run codl-victim --comm tcp
// as one rank per agent;
// the trial's phases (comm_s included) are rank 0's, and a rank that cannot run fails the
// trial naming it while the other rank is stopped.
#include <filesystem>
#include <set>
#include <sstream>

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
  // codl-victim's arguments after `run`, as a list of words; `gemms` GEMMs per step.
  std::vector<std::string> VictimArgs(const std::string& gemms) const {
    return {"--dir",
            dir_ + "/data",
            "--comm",
            "tcp",
            "--steps",
            "6",
            "--warmup-steps",
            "1",
            "--samples",
            "32",
            "--sample-size",
            "16KiB",
            "--batch-size",
            "2",
            "--gemm-count",
            gemms,
            "--io-mode",
            "buffered",
            "--allreduce-size",
            "4MiB"};
  }
  std::string Experiment(const std::string& extra_args) const {
    std::string command = "[" + Bin("codl-victim") + ", run";
    for (const auto& a : VictimArgs("0")) command += ", '" + a + "'";
    return ExperimentWith(command + extra_args + "]");
  }
  // `command`: the victim.command YAML flow sequence.
  std::string ExperimentWith(const std::string& command) const {
    return "name: dist\n"
           "victim:\n"
           "  command: " +
           command +
           "\n"
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

// Every rank is recorded, and a rank slowed on purpose (GEMMs on rank 1 only: rank 0 then waits
// for it in comm_s) is named as the slowest: by construction its busy time is the larger.
TEST_F(DistributedVictimIt, EveryRankIsStoredAndARankSlowedOnPurposeIsNamedTheSlowest) {
  TwoHosts c(dir_);
  ASSERT_TRUE(c.Ready()) << c.Logs();
  // The same command for both ranks, through sh: rank 1 adds 6 GEMMs of 384^3 per step.
  std::string line = "exec " + Bin("codl-victim") + " run";
  for (const auto& a : VictimArgs("$gemms")) line += " " + a;
  const std::string yaml = ExperimentWith(
      "[/bin/sh, -c, 'if [ \"$RANK\" = 1 ]; then gemms=6; else gemms=0; fi; " + line + "']");
  WriteFile(dir_ + "/exp.yaml", yaml);
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << yaml << sub.out << sub.err << c.Logs();

  auto res = c.Ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  for (const auto& p : j["pairings"]) {
    ASSERT_TRUE(p["ranks"].is_object()) << res.out;
    ASSERT_EQ(p["ranks"]["ranks"].size(), 2u) << res.out;
    EXPECT_EQ(p["ranks"]["ranks"][1]["node"], "b");
    EXPECT_EQ(p["ranks"]["slowest_rank"], 1) << "rank 1 runs the GEMMs:\n" << res.out;
    EXPECT_GT(p["ranks"]["ranks"][1]["busy_median_s"].get<double>(),
              p["ranks"]["ranks"][0]["busy_median_s"].get<double>());
  }
  auto table = c.Ctl({"results", "latest"});
  EXPECT_NE(table.out.find("slowest: rank 1 (b)"), std::string::npos) << table.out;

  // Both ranks' rows in the long exports, from the controller.
  auto ranks = c.Ctl({"results", "latest", "--ranks", "-o", "json"});
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  std::set<std::pair<int, std::string>> seen;
  std::stringstream lines(ranks.out);
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    seen.insert({row["rank"].get<int>(), row["node"].get<std::string>()});
    EXPECT_TRUE(row["busy_median_s"].is_number()) << line;
  }
  EXPECT_EQ(seen, (std::set<std::pair<int, std::string>>{{0, "a"}, {1, "b"}})) << ranks.out;
  auto phases = c.Ctl({"results", "latest", "--phases", "-o", "json"});
  ASSERT_EQ(phases.exit_code, 0) << phases.err;
  bool rank1_comm = false;
  std::stringstream plines(phases.out);
  for (std::string line; std::getline(plines, line);) {
    const auto row = nlohmann::json::parse(line);
    rank1_comm |= row["rank"] == 1 && row["phase"] == "comm_s";
  }
  EXPECT_TRUE(rank1_comm) << "rank 1's comm_s is stored: " << phases.out;
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
