// The control plane with real processes (codl-controller, codl-agent, codlctl over loopback
// gRPC): a restarted controller keeps what was committed, queues again what was queued and
// resumes what was interrupted; a second agent process cannot take a live agent's id.
#include <signal.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

TEST_F(ClusterTest, RestartedControllerServesCompletedTrials) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml", QuickExperiment("durable", "", 4));
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  // Let a few trials complete, then kill -9 the controller mid-experiment.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = c.Ctl({"status", id});
        return st.out.find(" 3/") != std::string::npos || st.out.find(" 4/") != std::string::npos;
      },
      120))
      << c.Logs();
  c.controller().Signal(SIGKILL);
  c.controller().Wait(5);
  // Every trial the database holds now must still be served after the restart.
  auto before = RunCommand({Bin("codlctl"), "results", id, "--db", dir_ + "/c.db", "-o", "json"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  auto count = [](const std::string& json) {
    int n = 0;
    const auto results = nlohmann::json::parse(json);
    for (const auto& p : results["pairings"]) {
      n += p["n"].get<int>() + p["n_flagged"].get<int>() + p["n_failed"].get<int>();
    }
    return n;
  };
  int completed = count(before.out);
  EXPECT_GE(completed, 3);
  c.StartController();
  ASSERT_TRUE(WaitUntil([&] { return c.Ctl({"status", id}, 5).exit_code == 0; }, 20)) << c.Logs();
  auto st = c.Ctl({"status", id});
  EXPECT_NE(st.out.find("interrupted"), std::string::npos) << st.out;
  auto after = c.Ctl({"results", id, "-o", "json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(count(after.out), completed);
}

// The durable queue and resume: kill -9 of the controller mid-experiment with two more queued.
// After the restart the queued ones run (in order), the interrupted one waits; `codlctl resume`
// then finishes it with exactly its planned trials, none run twice, the same pairings.
TEST_F(ClusterTest, QueuedExperimentsSurviveAControllerKillAndTheInterruptedOneResumes) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/long.yaml", QuickExperiment("long", "", 3));
  WriteFile(dir_ + "/short.yaml", QuickExperiment("short", "", 1));
  auto submit = [&](const std::string& file) {
    auto sub = c.Ctl({"submit", file});
    EXPECT_EQ(sub.exit_code, 0) << sub.err;
    return sub.out.substr(0, sub.out.find('\n'));
  };
  const std::string first = submit(dir_ + "/long.yaml");
  const std::string second = submit(dir_ + "/short.yaml");
  const std::string third = submit(dir_ + "/short.yaml");
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = c.Ctl({"status", first});
        return st.out.find(" 2/") != std::string::npos || st.out.find(" 3/") != std::string::npos;
      },
      120))
      << c.Logs();
  c.controller().Signal(SIGKILL);
  c.controller().Wait(5);

  c.StartController();
  auto state_of = [&](const std::string& id) {
    auto st = c.Ctl({"status", id, "-o", "json"}, 10);
    if (st.exit_code != 0) return std::string();
    return nlohmann::json::parse(st.out)["state"].get<std::string>();
  };
  ASSERT_TRUE(WaitUntil([&] { return state_of(third) == "done"; }, 120)) << c.Logs();
  EXPECT_EQ(state_of(second), "done");
  EXPECT_EQ(state_of(first), "interrupted");
  // In their order: the second ended before the third started.
  auto results = [&](const std::string& id) {
    auto r = c.Ctl({"results", id, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  EXPECT_LE(results(second)["finished_unix_ms"].get<int64_t>(),
            results(third)["provenance"]["started_unix_ms"].get<int64_t>());

  auto resumed = c.Ctl({"resume", first, "-q", "-o", "json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err << c.Logs();
  auto r = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(r["state"], "done");
  EXPECT_EQ(r["trials_planned"].get<int>(), 9);  // 3 baselines + 2 levels x 3
  EXPECT_EQ(r["trials_committed"].get<int>(), 9);
  EXPECT_EQ(r["resumptions"].get<int>(), 1);
  EXPECT_EQ(r["provenance"]["resumptions"][0]["previous_state"], "interrupted");
  EXPECT_GE(r["provenance"]["resumptions"][0]["trials_kept"].get<int>(), 2);
  std::set<std::string> pairings;
  for (const auto& p : r["pairings"]) pairings.insert(p["pairing"].get<std::string>());
  EXPECT_EQ(pairings, (std::set<std::string>{"baseline", "membw@0.5", "membw@1"}));
  auto trials = c.Ctl({"results", first, "--trials", "-o", "json"});
  ASSERT_EQ(trials.exit_code, 0) << trials.err;
  std::set<int> indexes;
  int rows = 0;
  std::stringstream lines(trials.out);
  for (std::string line; std::getline(lines, line);) {
    ++rows;
    indexes.insert(nlohmann::json::parse(line)["trial"].get<int>());
  }
  EXPECT_EQ(rows, 9);
  EXPECT_EQ(indexes.size(), 9u) << "no trial index twice";

  auto again = c.Ctl({"resume", first});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("nothing to resume"), std::string::npos) << again.err;
}

// Cloned hosts sharing a hostname: a second agent process with a live agent's id (plaintext
// loopback, no tokens: no identity tells them apart) is refused and the first keeps its id.
TEST_F(ClusterTest, ASecondAgentWithALiveAgentsIdIsRefused) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  const auto first = c.Ctl({"agents", "--json"}).out;
  std::vector<std::string> argv = {
      Bin("codl-agent"),  "--controller", c.address(),      "--id", "a",
      "--listen",         "127.0.0.1:0",  "--scratch-root", dir_,   "--state-dir",
      dir_ + "/state-a2", "--insecure"};
  Process second(argv, dir_ + "/agent-a2.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFile(dir_ + "/agent-a2.log").find("is taken by a live agent at") !=
               std::string::npos;
      },
      20))
      << ReadFile(dir_ + "/agent-a2.log");
  EXPECT_NE(ReadFile(dir_ + "/agent-a2.log").find("codl-agent --id NAME"), std::string::npos);
  const auto now = c.Ctl({"agents", "--json"}).out;
  auto address = [](const std::string& json) {
    return nlohmann::json::parse(json.substr(0, json.find('\n')))["address"].get<std::string>();
  };
  EXPECT_EQ(address(now), address(first)) << "the live agent keeps its id and address";
  // Who runs the victims there: a root agent's default victim_user.
  if (geteuid() == 0) {
    EXPECT_EQ(nlohmann::json::parse(first.substr(0, first.find('\n')))["labels"]["victim_user"],
              "nobody")
        << first;
  }
}

}  // namespace
}  // namespace codl::testing
