// The control plane with real processes (codl-controller, codl-agent, codlctl over loopback
// gRPC): a restarted controller keeps what was committed, queues again what was queued and
// resumes what was interrupted; a second agent process cannot take a live agent's id;
// experiments on disjoint agents run at once.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
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

// Node reservations: experiments on disjoint agents run at the same time, two on one agent
// never do, and the one that waits says for which experiment; it starts when that one ends,
// while the other still runs.
TEST_F(ClusterTest, ExperimentsOnDisjointAgentsRunAtOnceAndOnOneAgentInTurn) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  c.StartAgent("b");
  ASSERT_TRUE(c.WaitForAgents(2)) << c.Logs();
  auto submit = [&](const std::string& name, const std::string& host, int reps) {
    const std::string file = dir_ + "/" + name + ".yaml";
    WriteFile(file, "nodes: {hosts: [" + host + "]}\n" + QuickExperiment(name, "", reps));
    auto sub = c.Ctl({"submit", file});
    EXPECT_EQ(sub.exit_code, 0) << sub.err;
    return sub.out.substr(0, sub.out.find('\n'));
  };
  const std::string a1 = submit("a1", "a", 1);  // 3 trials
  const std::string b = submit("b", "b", 3);    // 9 trials
  const std::string a2 = submit("a2", "a", 1);
  bool said = WaitUntil(
      [&] {
        auto st = c.Ctl({"status", a2}, 10);
        return st.out.find("queued: waits for node a held by " + a1) != std::string::npos;
      },
      60);
  EXPECT_TRUE(said) << c.Ctl({"status", a2}, 10).out;
  auto state_of = [&](const std::string& id) {
    auto st = c.Ctl({"status", id, "-o", "json"}, 10);
    if (st.exit_code != 0) return std::string();
    return nlohmann::json::parse(st.out)["state"].get<std::string>();
  };
  ASSERT_TRUE(WaitUntil(
      [&] { return state_of(a1) == "done" && state_of(b) == "done" && state_of(a2) == "done"; },
      240))
      << c.Logs();
  struct Span {
    int64_t first_start = INT64_MAX, last_end = 0;
    std::set<std::string> nodes;
    int trials = 0;
  };
  auto span = [&](const std::string& id) {
    Span s;
    auto r = c.Ctl({"results", id, "--trials", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::stringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      auto t = nlohmann::json::parse(line);
      s.first_start = std::min(s.first_start, t["started_unix_ms"].get<int64_t>());
      s.last_end = std::max(s.last_end, t["finished_unix_ms"].get<int64_t>());
      s.nodes.insert(t["victim_node"].get<std::string>());
      ++s.trials;
    }
    return s;
  };
  const Span sa1 = span(a1), sb = span(b), sa2 = span(a2);
  EXPECT_EQ(sa1.trials, 3);
  EXPECT_EQ(sb.trials, 9);
  EXPECT_EQ(sa2.trials, 3);
  EXPECT_EQ(sa1.nodes, std::set<std::string>{"a"});
  EXPECT_EQ(sb.nodes, std::set<std::string>{"b"});
  EXPECT_EQ(sa2.nodes, std::set<std::string>{"a"});
  // Disjoint agents: their trial time ranges overlap.
  EXPECT_LT(sb.first_start, sa1.last_end) << "b did not run beside a1";
  EXPECT_LT(sa1.first_start, sb.last_end) << "b did not run beside a1";
  // One agent: in turn, the second after the first.
  EXPECT_GE(sa2.first_start, sa1.last_end) << "a2 ran beside a1 on agent a";
  // It waited for a1, not for every experiment: it started while b still ran.
  EXPECT_LT(sa2.first_start, sb.last_end) << "a2 waited for b too";
}

// agent_grace: an agent killed mid-trial and restarted within the grace period gets the trial
// run again, recorded as retried; one that does not come back ends the experiment interrupted,
// naming it, and `resume` finishes it once the agent is back.
TEST_F(ClusterTest, AnAgentLostMidTrialIsWaitedForThenTheTrialRunsAgain) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  auto experiment = [&](const std::string& name, const std::string& grace) {
    const std::string file = dir_ + "/" + name + ".yaml";
    WriteFile(file,
              "name: " + name +
                  "\nvictim: {command: [sleep, '3'], progress: {format: wall}, timeout: 30s}\n"
                  "antagonists:\n  - {name: tick, injector: noop, rates: ['10']}\n"
                  "repetitions: 1\nsettle: 0s\nwarmup_trials: 0\nagent_grace: " +
                  grace + "\n");
    auto sub = c.Ctl({"submit", file});
    EXPECT_EQ(sub.exit_code, 0) << sub.err;
    return sub.out.substr(0, sub.out.find('\n'));
  };
  auto status = [&](const std::string& id) {
    auto st = c.Ctl({"status", id, "-o", "json"}, 10);
    return st.exit_code == 0 ? nlohmann::json::parse(st.out) : nlohmann::json::object();
  };
  auto in_trial = [&](const std::string& id) {
    return WaitUntil([&] { return !status(id).value("current_pairing", "").empty(); }, 60);
  };

  const std::string back = experiment("back", "30s");
  ASSERT_TRUE(in_trial(back)) << c.Logs();
  usleep(500'000);  // inside the victim's 3 s
  c.agent(0).Signal(SIGKILL);
  c.agent(0).Wait(5);
  c.StartAgent("a");  // the same id, a new process: it takes the id over once the old is silent
  ASSERT_TRUE(WaitUntil([&] { return status(back).value("state", "") == "done"; }, 120))
      << status(back).dump() << c.Logs();
  auto r = nlohmann::json::parse(c.Ctl({"results", back, "-o", "json"}).out);
  EXPECT_EQ(r["trials_committed"].get<int>(), 2);
  ASSERT_EQ(r["provenance"]["retries"].size(), 1u) << r["provenance"].dump();
  EXPECT_EQ(r["provenance"]["retries"][0]["agents"], nlohmann::json::array({"a"}));
  EXPECT_FALSE(r["provenance"]["retries"][0]["error"].get<std::string>().empty());
  EXPECT_LE(r["provenance"]["retries"][0]["back_after_s"].get<double>(), 30.0);

  const std::string gone = experiment("gone", "1s");
  ASSERT_TRUE(in_trial(gone)) << c.Logs();
  usleep(500'000);
  c.agent(1).Signal(SIGKILL);
  c.agent(1).Wait(5);
  ASSERT_TRUE(WaitUntil([&] { return status(gone).value("state", "") == "interrupted"; }, 60))
      << status(gone).dump() << c.Logs();
  EXPECT_NE(status(gone).value("error", "").find("lost agent(s) a at trial"), std::string::npos)
      << status(gone).dump();
  c.StartAgent("a");
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto agents = c.Ctl({"agents", "--json"}, 10).out;
        return agents.find("\"alive\":true") != std::string::npos;
      },
      30));
  auto resumed = c.Ctl({"resume", gone, "-q", "-o", "json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err << c.Logs();
  auto rr = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(rr["state"], "done");
  EXPECT_EQ(rr["trials_committed"].get<int>(), 2);
}

// `codlctl resume` issued as soon as the restarted controller answers, before its agent is back,
// waits for the agent (agent_rejoin_grace) instead of failing the study with "node selector
// matched no live agent (0 registered)".
TEST_F(ClusterTest, AResumeBeforeTheAgentsAreBackWaitsForThem) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/long.yaml", QuickExperiment("long", "", 3));
  auto sub = c.Ctl({"submit", dir_ + "/long.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return c.Ctl({"status", id}, 10).out.find(" 2/") != std::string::npos;
      },
      120))
      << c.Logs();
  c.controller().Signal(SIGKILL);
  c.controller().Wait(5);
  c.agent(0).Signal(SIGTERM);
  ASSERT_EQ(c.agent(0).Wait(30), 0) << c.Logs();
  c.StartController();
  ASSERT_TRUE(WaitUntil([&] { return c.Ctl({"status", id}, 5).exit_code == 0; }, 20)) << c.Logs();
  Process resume({Bin("codlctl"), "--controller", c.address(), "resume", id, "-q"},
                 dir_ + "/resume.log");
  sleep(2);  // the resume is queued meanwhile, not failed
  EXPECT_TRUE(resume.Running()) << ReadFile(dir_ + "/resume.log");
  c.StartAgent("a");
  ASSERT_EQ(resume.Wait(180), 0) << ReadFile(dir_ + "/resume.log") << c.Logs();
  auto st = c.Ctl({"status", id, "-o", "json"}, 10);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  const auto j = nlohmann::json::parse(st.out);
  EXPECT_EQ(j["state"], "done") << st.out;
  EXPECT_NE(c.Logs().find("waits for its agents to register"), std::string::npos) << c.Logs();
}

// Watching survives the controller: with the controller killed mid-experiment, `watch` (which
// reconnects by default) says the study is kept and keeps trying; once a controller is back it
// carries on and ends with what that controller says (interrupted: it does not resume it).
// `submit --watch` without --reconnect ends at once, exit 3, naming `codlctl watch ID`.
TEST_F(ClusterTest, WatchSurvivesAControllerRestartAndSubmitWatchSaysHowToReattach) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/long.yaml", QuickExperiment("long", "", 3));
  WriteFile(dir_ + "/short.yaml", QuickExperiment("short", "", 1));
  auto sub = c.Ctl({"submit", dir_ + "/long.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));
  Process watch({Bin("codlctl"), "--controller", c.address(), "watch", id}, dir_ + "/watch.log");
  Process submit_watch({Bin("codlctl"), "--controller", c.address(), "submit", dir_ + "/short.yaml",
                        "--watch", "-q"},
                       dir_ + "/submit-watch.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return c.Ctl({"status", id}, 10).out.find(" 1/") != std::string::npos;
      },
      120))
      << c.Logs();
  c.controller().Signal(SIGKILL);
  c.controller().Wait(5);

  EXPECT_EQ(submit_watch.Wait(30), 3) << ReadFile(dir_ + "/submit-watch.log");
  const std::string said = ReadFile(dir_ + "/submit-watch.log");
  EXPECT_NE(said.find("is kept in its database"), std::string::npos) << said;
  EXPECT_NE(said.find("re-attach with `codlctl watch "), std::string::npos) << said;
  sleep(2);
  EXPECT_TRUE(watch.Running()) << ReadFile(dir_ + "/watch.log");
  EXPECT_NE(ReadFile(dir_ + "/watch.log").find("reconnecting until it is back"), std::string::npos)
      << ReadFile(dir_ + "/watch.log");

  c.StartController();
  const int rc = watch.Wait(60);
  const std::string watched = ReadFile(dir_ + "/watch.log");
  EXPECT_NE(rc, -1000) << "watch did not end after the controller came back\n" << watched;
  EXPECT_NE(watched.find("is back; watching " + id + " again"), std::string::npos) << watched;
  EXPECT_NE(watched.find("interrupted"), std::string::npos) << watched;
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
