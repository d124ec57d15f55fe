// End-to-end tests with real processes: codl-controller, codl-agent(s), codl-inject children and
// codlctl, over loopback gRPC.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

// A victim that reports 8 steps as JSON lines; fast and deterministic.
constexpr const char* kQuickVictim =
    R"(for i in 1 2 3 4 5 6 7 8; do echo "{\"step\": $i, \"step_time_s\": 0.01$i, \"phases\": {\"compute_s\": 0.01}}"; sleep 0.02; done)";

std::string QuickExperiment(const std::string& name, const std::string& antagonist_nodes,
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
  void StartAgent(const std::string& id, std::vector<std::string> extra = {}) {
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
    agents_.emplace_back(Process(argv, dir_ + "/agent-" + id + ".log"));
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
    for (const char* f : {"controller.log", "agent-a.log", "agent-b.log"}) {
      all += std::string("==== ") + f + "\n" + ReadFile(dir_ + "/" + f);
    }
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
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-it"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string dir_;
};

TEST_F(ClusterTest, TwoAgentsRunAnExperimentEndToEnd) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  c.StartAgent("b");
  ASSERT_TRUE(c.WaitForAgents(2)) << c.Logs();
  // The antagonist runs on agent b, the victim on agent a (the first by id).
  WriteFile(dir_ + "/exp.yaml", QuickExperiment("e2e", "    nodes: {hosts: [b]}\n", 2));
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err << c.Logs();
  auto res = c.Ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  auto j = nlohmann::json::parse(res.out);
  ASSERT_TRUE(j.contains("pairings")) << res.out;
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& p : j["pairings"]) by_key[p["pairing"].get<std::string>()] = p;
  ASSERT_EQ(by_key.size(), 3u) << res.out;
  ASSERT_TRUE(by_key.count("baseline"));
  ASSERT_TRUE(by_key.count("membw@0.5"));
  ASSERT_TRUE(by_key.count("membw@1"));
  for (const auto& [k, p] : by_key) {
    EXPECT_GE(p["n"].get<int>() + p["n_flagged"].get<int>(), 2) << k;
    // All of a pairing's trials may be flagged on a loaded machine (its figures are then null).
    if (!p["median_metric_s"].is_null()) {
      EXPECT_GT(p["median_metric_s"].get<double>(), 0.01) << k;
    }
  }
  auto& full = by_key["membw@1"]["antagonists"][0];
  EXPECT_GT(full["achieved_rate"].get<double>(), 0) << res.out;
  EXPECT_GT(full["target_rate"].get<double>(), full["achieved_rate"].get<double>() * 0.5)
      << res.out;
  EXPECT_EQ(full["unit"], "bytes/s");
  // Status through the controller names the final state.
  auto st = c.Ctl({"status", "latest"});
  EXPECT_NE(st.out.find("done"), std::string::npos) << st.out;
  // No antagonist outlives its experiment.
  EXPECT_TRUE(ProcessesMatching(dir_ + " --json").empty());
}

TEST_F(ClusterTest, ControllerKilledAntagonistsStopWithinLease) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  std::string yaml =
      "name: deadman\n"
      "victim: {command: [sleep, '30'], progress: {format: wall}, timeout: 60s}\n"
      "antagonists:\n"
      "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, rates: "
      "[200MiB/s]}\n"
      "repetitions: 1\n"
      "settle: 1s\n"
      "lease: 2s\n"
      // No warm-up run and a fixed order: the victim with its antagonist must start within
      // the wait below, not after a 30 s warm-up and a 30 s baseline.
      "warmup_trials: 0\n"
      "order: {seed: 1}\n";
  WriteFile(dir_ + "/exp.yaml", yaml);
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  pid_t agent = c.agent(0).pid();
  // The interference trial: an antagonist and the victim are running.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !DescendantsMatching(agent, "codl-inject memcpy").empty() &&
               !DescendantsMatching(agent, "sleep 30").empty();
      },
      60))
      << c.Logs();
  c.controller().Signal(SIGKILL);
  c.controller().Wait(5);
  auto t0 = std::chrono::steady_clock::now();
  bool gone =
      WaitUntil([&] { return DescendantsMatching(agent, "codl-inject").empty(); }, 2 + 2 + 1);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(gone) << "antagonist still running " << took << " s after the controller died\n"
                    << c.Logs();
  EXPECT_LE(took, 2.0 + 2.0) << "lease 2 s + 2 s";
  EXPECT_TRUE(c.agent(0).Running()) << "the agent itself keeps running";
}

// Cancel must not wait for the victim to end by itself: the victim (a 60 s sleep) and the
// antagonist are stopped, and the experiment is over, within seconds.
TEST_F(ClusterTest, CancelStopsARunningVictimPromptly) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            "name: cancelme\n"
            "victim: {command: [sleep, '61'], progress: {format: wall}, timeout: 120s}\n"
            "antagonists:\n"
            "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, rates: "
            "[200MiB/s]}\n"
            "repetitions: 1\nsettle: 1s\nwarmup_trials: 0\n");
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  pid_t agent = c.agent(0).pid();
  ASSERT_TRUE(WaitUntil([&] { return !DescendantsMatching(agent, "sleep 61").empty(); }, 60))
      << c.Logs();
  auto t0 = std::chrono::steady_clock::now();
  auto cancel = c.Ctl({"cancel", "latest"}, 30);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  bool over = WaitUntil(
      [&] {
        return c.Ctl({"status", "latest"}, 10).out.find("cancelled") != std::string::npos &&
               DescendantsMatching(agent, "sleep 61").empty() &&
               DescendantsMatching(agent, "codl-inject").empty();
      },
      15);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(over) << "after " << took << " s:\n" << c.Ctl({"status", "latest"}).out << c.Logs();
  EXPECT_LT(took, 10.0) << "cancel waited for the victim";
  EXPECT_TRUE(c.agent(0).Running());
}

TEST_F(ClusterTest, AgentKilledItsChildrenDie) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            "name: agentkill\n"
            "victim: {command: [sleep, '31'], progress: {format: wall}, timeout: 60s}\n"
            "antagonists:\n"
            "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, rates: "
            "[200MiB/s]}\n"
            "repetitions: 1\nsettle: 1s\nlease: 30s\nwarmup_trials: 0\n");
  ASSERT_EQ(c.Ctl({"submit", dir_ + "/exp.yaml"}).exit_code, 0);
  pid_t agent = c.agent(0).pid();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !DescendantsMatching(agent, "codl-inject memcpy").empty() &&
               !DescendantsMatching(agent, "sleep 31").empty();
      },
      60))
      << c.Logs();
  auto children = DescendantsMatching(agent, "codl-inject memcpy");
  auto victims = DescendantsMatching(agent, "sleep 31");
  c.agent(0).Signal(SIGKILL);
  c.agent(0).Wait(5);
  auto alive = [](pid_t p) {
    std::string s = ReadFile("/proc/" + std::to_string(p) + "/stat");
    auto rp = s.rfind(')');
    return !s.empty() && rp != std::string::npos && s[rp + 2] != 'Z';
  };
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (pid_t p : children)
          if (alive(p)) return false;
        for (pid_t p : victims)
          if (alive(p)) return false;
        return true;
      },
      2.0))
      << "children of a SIGKILLed agent must die with it (PR_SET_PDEATHSIG)";
}

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

TEST_F(ClusterTest, EmbeddedRunWritesResultsDatabase) {
  WriteFile(dir_ + "/exp.yaml", QuickExperiment("embedded", "", 1));
  auto r =
      RunCommand({Bin("codlctl"), "run", dir_ + "/exp.yaml", "--scratch-root", dir_}, 180, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("membw@0.5"), std::string::npos) << r.out;
  auto res = RunCommand(
      {Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db", "-o", "csv"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_NE(res.out.find("membw@1"), std::string::npos) << res.out;
  EXPECT_TRUE(ProcessesMatching(dir_ + " --json").empty())
      << "an antagonist outlived `codlctl run`";
}

TEST_F(ClusterTest, EveryHostInjectorRunsThroughTheAgentAndCalibrationIsCached) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  // `codlctl calibrate` measures and caches a peak that experiments then reuse.
  auto cal = c.Ctl({"calibrate", "memcpy", "--set", "threads=1", "--set", "buffer_size=8MiB",
                    "--duration", "1s"});
  ASSERT_EQ(cal.exit_code, 0) << cal.out << cal.err << c.Logs();
  EXPECT_NE(cal.out.find("peak"), std::string::npos) << cal.out;
  WriteFile(dir_ + "/exp.yaml",
            "name: injectors\n"
            "victim: {command: [sleep, '1'], progress: {format: wall}, timeout: 30s}\n"
            "antagonists:\n"
            "  - {name: nothing, injector: noop, rates: ['1000']}\n"
            "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, levels: "
            "[0.3]}\n"
            "  - {name: disk, injector: io_uring, options: {dir: " +
                dir_ +
                ", mode: randread, block_size: 4KiB,\n"
                "     queue_depth: 8, nr_files: 1, file_size: 8MiB}, rates: [20MiB/s]}\n"
                "repetitions: 1\nsettle: 2s\n");
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err << c.Logs();
  EXPECT_EQ(sub.err.find("calibrating membw"), std::string::npos)
      << "the cached peak must be reused";
  auto res = c.Ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  std::set<std::string> seen;
  const auto results = nlohmann::json::parse(res.out);
  for (const auto& p : results["pairings"]) {
    for (const auto& a : p["antagonists"]) {
      seen.insert(a["name"].get<std::string>());
      EXPECT_GT(a["achieved_rate"].get<double>(), 0) << a.dump();
      EXPECT_GT(a["target_rate"].get<double>(), 0) << a.dump();
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"nothing", "membw", "disk"})) << res.out;
  // io_uring removed its file set when stopped.
  EXPECT_TRUE(ProcessesMatching("dir=" + dir_).empty()) << "this test's io_uring flood still runs";
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind("codl-inject.", 0), std::string::npos) << e.path();
  }
}

TEST_F(ClusterTest, RestartedAgentRemovesFilesOfAKilledInjector) {
  // A codl-inject killed with SIGKILL cannot clean up its scratch directory...
  Process inject({Bin("codl-inject"), "io_uring", "--set", "dir=" + dir_, "--set", "nr_files=1",
                  "--set", "file_size=4MiB", "--set", "block_size=4KiB", "--rate", "10MiB/s",
                  "--scratch-root", dir_, "--json"},
                 dir_ + "/inject.log");
  auto leftovers = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      n += e.path().filename().string().rfind("codl-inject.", 0) == 0;
    }
    return n;
  };
  ASSERT_TRUE(WaitUntil(
      [&] { return ReadFile(dir_ + "/inject.log").find("achieved") != std::string::npos; }, 30))
      << ReadFile(dir_ + "/inject.log");
  inject.Signal(SIGKILL);
  inject.Wait(5);
  ASSERT_EQ(leftovers(), 1);
  // ...the agent removes it when it (re)starts.
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  EXPECT_EQ(leftovers(), 0) << c.Logs();
}

// The NCCL rendezvous without MPI: rank 0's codl-inject prints its 128-byte ncclUniqueId, its
// agent publishes it to the controller, and the agent of rank 1 fetches it and passes it on.
// No GPU is needed to test the relay: a stand-in codl-inject speaks the same stdout protocol.
TEST_F(ClusterTest, NcclUniqueIdIsRelayedThroughTheController) {
  std::string id_hex;
  for (int i = 0; i < 128; ++i) {
    char b[3];
    snprintf(b, sizeof b, "%02x", (i * 37 + 11) & 0xff);
    id_hex += b;
  }
  const std::string fake = dir_ + "/fake-inject";
  WriteFile(
      fake,
      "#!/bin/sh\n"
      "# stand-in for codl-inject: rank 0 publishes, rank 1 records what it was given\n"
      "case \"$*\" in *--list*|*--cleanup-stale*) exit 0;; esac\n"
      "for a in \"$@\"; do case \"$a\" in\n"
      "  rendezvous_key=*) key=${a#rendezvous_key=};; unique_id=*) uid=${a#unique_id=};;\n"
      "  rank=*) rank=${a#rank=};; esac; done\n"
      "if [ \"$rank\" = 0 ]; then\n"
      "  printf '{\"rendezvous_publish\":{\"key\":\"%s\",\"value_hex\":\"" +
          id_hex +
          "\"}}\\n' \"$key\"\n"
          "else echo \"$uid\" > " +
          dir_ +
          "/rank1-$$.txt; fi\n"
          "case \"$*\" in *--start-at*) echo \"{\\\"started_unix_ns\\\":$(date +%s%N)}\";; esac\n"
          "trap 'echo {\"summary\":true,\"achieved_rate\":1,\"unit\":\"busbw bytes/s\"}; exit 0' "
          "TERM\n"
          "while :; do echo '{\"t_s\":0.1,\"achieved\":100,\"target\":100,\"unit\":\"busbw "
          "bytes/s\"}'; sleep 0.1; done\n");
  chmod(fake.c_str(), 0755);
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a", {"--inject-binary", fake});
  c.StartAgent("b", {"--inject-binary", fake});
  ASSERT_TRUE(c.WaitForAgents(2)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            "name: relay\n"
            "victim: {command: [sleep, '0.5'], progress: {format: wall}, timeout: 30s}\n"
            "antagonists:\n"
            "  - {name: bg, injector: nccl, options: {op: allreduce, size: 1MiB}, rates: ['100'],\n"
            "     nodes: {hosts: [a, b]}}\n"
            "repetitions: 1\nsettle: 1s\n");
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err << c.Logs();
  std::string got;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    if (e.path().filename().string().rfind("rank1-", 0) == 0) got = ReadFile(e.path());
  }
  while (!got.empty() && got.back() == '\n') got.pop_back();
  EXPECT_EQ(got, id_hex) << c.Logs();
  EXPECT_NE(c.Logs().find("relayed rendezvous"), std::string::npos) << c.Logs();
  auto res = c.Ctl({"results", "latest", "-o", "json"});
  const auto results = nlohmann::json::parse(res.out);
  for (const auto& p : results["pairings"]) EXPECT_EQ(p["n_failed"].get<int>(), 0) << res.out;
}

// The cpu, llc, pagecache and net injectors under the agent, at small absolute rates: each ran
// and achieved something, and pagecache's file is gone afterwards.
TEST_F(ClusterTest, ResourceInjectorsRunThroughTheAgent) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            "name: resource-injectors\n"
            "victim: {command: [sleep, '1'], progress: {format: wall}, timeout: 30s}\n"
            "antagonists:\n"
            "  - {name: cores, injector: cpu, options: {threads: 1}, rates: ['0.2']}\n"
            "  - {name: cache, injector: llc, options: {working_set: 4MiB}, rates: ['200000']}\n"
            "  - {name: memory, injector: pagecache, options: {kind: file, limit: 16MiB, dir: " +
                dir_ +
                "}, rates: ['8388608']}\n"
                "  - {name: tcp, injector: net, rates: [10MiB/s]}\n"
                "repetitions: 1\nsettle: 1s\nwarmup_trials: 0\n");
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err << c.Logs();
  auto res = c.Ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  std::set<std::string> seen;
  const auto results = nlohmann::json::parse(res.out);
  for (const auto& p : results["pairings"]) {
    EXPECT_EQ(p["n_failed"].get<int>(), 0) << res.out;
    for (const auto& a : p["antagonists"]) {
      seen.insert(a["name"].get<std::string>());
      EXPECT_GT(a["achieved_rate"].get<double>(), 0) << a.dump();
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"cores", "cache", "memory", "tcp"})) << res.out;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind("codl-inject.", 0), std::string::npos) << e.path();
  }
}

// A net pair across two agents: agent a's codl-inject (rank 0) receives on 127.0.0.2 and
// publishes where, agent b's (rank 1) fetches that through the controller and streams to it at
// the rate; both hold it (the receiver drains what the sender sends).
TEST_F(ClusterTest, NetPairStreamsFromOneAgentToTheOther) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  c.StartAgent("b");
  ASSERT_TRUE(c.WaitForAgents(2)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            "name: net-pair\n"
            "victim: {command: [sleep, '2'], progress: {format: wall}, timeout: 30s}\n"
            "antagonists:\n"
            "  - {name: flood, injector: net, options: {bind: 127.0.0.2, connections: 2},\n"
            "     rates: [20MiB/s], nodes: {hosts: [a, b]}}\n"
            "repetitions: 1\nsettle: 1s\nwarmup_trials: 0\n");
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err << c.Logs();
  EXPECT_NE(c.Logs().find("relayed rendezvous"), std::string::npos) << c.Logs();
  auto res = c.Ctl({"results", "latest", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto results = nlohmann::json::parse(res.out);
  bool seen = false;
  for (const auto& p : results["pairings"]) {
    EXPECT_EQ(p["n_failed"].get<int>(), 0) << res.out;
    for (const auto& a : p["antagonists"]) {
      seen = true;
      const double target = 20.0 * 1024 * 1024;
      EXPECT_NEAR(a["target_rate"].get<double>(), target, 1) << a.dump();
      EXPECT_NEAR(a["achieved_rate"].get<double>() / target, 1.0, 0.15) << a.dump();
      EXPECT_EQ(a["n_missed_target"].get<int>(), 0) << a.dump() << c.Logs();
    }
  }
  EXPECT_TRUE(seen) << res.out;
  EXPECT_TRUE(ProcessesMatching(dir_ + " --json").empty()) << "a net rank outlived the run";
}

// The built-in proxy under the agent: phases come through to the results, and one run writes
// the table, CSV, JSON and the HTML report.
TEST_F(ClusterTest, CodlVictimUnderTheAgentReportsPhases) {
  WriteFile(dir_ + "/exp.yaml",
            "name: proxy\n"
            "victim:\n"
            "  command: [codl-victim, run, --dir, " +
                dir_ +
                "/data, --profile, io-bound, --samples, '64',\n"
                "            --steps, '8', --warmup-steps, '2']\n"
                "  warmup_steps: 2\n"
                "  timeout: 60s\n"
                "antagonists:\n"
                "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, "
                "rates: [500MiB/s]}\n"
                "repetitions: 1\nsettle: 1s\n");
  auto r = RunCommand({Bin("codlctl"), "run", dir_ + "/exp.yaml", "--scratch-root", dir_, "--csv",
                       dir_ + "/r.csv", "--json", dir_ + "/r.json", "--report", dir_ + "/r.html"},
                      180, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("phases:"), std::string::npos) << r.out;
  const auto results = nlohmann::json::parse(ReadFile(dir_ + "/r.json"));
  std::set<std::string> phases;
  for (const auto& p : results["pairings"]) {
    for (const auto& ph : p["phases"]) phases.insert(ph["phase"].get<std::string>());
  }
  for (const char* want : {"read_s", "compute_s", "data_wait_s"}) {
    EXPECT_TRUE(phases.count(want)) << want << " missing from " << results.dump();
  }
  EXPECT_NE(ReadFile(dir_ + "/r.csv").find("membw@500MiB/s"), std::string::npos)
      << ReadFile(dir_ + "/r.csv");
  EXPECT_NE(ReadFile(dir_ + "/r.html").find("<svg"), std::string::npos);
}

// The exit status comes from the error's code as it crossed gRPC (store NotFound -> NOT_FOUND ->
// exit 2; an unreachable controller -> UNAVAILABLE -> exit 1), not from the message text.
TEST_F(ClusterTest, UnknownExperimentExitsTwoUnreachableControllerThree) {
  Cluster c(dir_);
  c.StartController();
  ASSERT_TRUE(WaitUntil([&] { return c.Ctl({"agents"}, 5).exit_code == 0; }, 20)) << c.Logs();
  for (const char* cmd : {"status", "watch", "cancel", "results"}) {
    auto r = c.Ctl({cmd, "nope"});
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("no experiment 'nope'"), std::string::npos) << cmd << ": " << r.err;
  }
  c.controller().Signal(SIGKILL);
  c.controller().Wait(5);
  auto gone = c.Ctl({"status", "nope"}, 30);
  EXPECT_EQ(gone.exit_code, 3) << gone.err;  // unreachable: distinct from a failed experiment
  EXPECT_NE(gone.err.find("cannot reach the controller"), std::string::npos) << gone.err;
}

TEST_F(ClusterTest, BadInputExitsTwoWithLocation) {
  WriteFile(dir_ + "/bad.yaml", "name: x\nvictim:\n  command: [true]\n  colour: red\n");
  auto r = RunCommand({Bin("codlctl"), "validate", dir_ + "/bad.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/bad.yaml:4:3:"), std::string::npos) << r.err;
  auto missing = RunCommand({Bin("codlctl"), "results", "latest", "--db", dir_ + "/nope.db"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
}

}  // namespace
}  // namespace codl::testing
