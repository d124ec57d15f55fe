// End-to-end tests with real processes: codl-controller, codl-agent(s), codl-inject children and
// codlctl, over loopback gRPC.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

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
  // Node telemetry: agent a's as the victim's node, and agent b's — it ran only the
  // antagonist — over a window as long as the victim's (BeginNodeWindow / EndNodeWindow).
  auto tel = c.Ctl({"results", "latest", "--telemetry", "-o", "json"});
  ASSERT_EQ(tel.exit_code, 0) << tel.err;
  std::map<int, std::map<std::string, nlohmann::json>> by_trial;  // trial -> node -> row
  std::istringstream lines(tel.out);
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    by_trial[row["trial"].get<int>()][row["telemetry_node"].get<std::string>()] = row;
  }
  int interfered = 0;
  for (const auto& [trial, nodes] : by_trial) {
    ASSERT_TRUE(nodes.count("a")) << tel.out;
    EXPECT_EQ(nodes.at("a")["node_role"], "victim");
    if (nodes.at("a")["role"] == "baseline") {
      EXPECT_FALSE(nodes.count("b")) << "a baseline runs no antagonist on b: " << tel.out;
      continue;
    }
    ++interfered;
    ASSERT_TRUE(nodes.count("b")) << "trial " << trial << ": " << tel.out;
    const auto& b = nodes.at("b");
    EXPECT_EQ(b["node_role"], "antagonists");
    const double victim_window = nodes.at("a")["telemetry_window_s"].get<double>();
    EXPECT_NEAR(b["telemetry_window_s"].get<double>(), victim_window, 1.0) << b.dump();
    EXPECT_GE(b["mem_available_min_bytes"].get<double>(), 0) << b.dump();
  }
  EXPECT_GE(interfered, 2) << tel.out;
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

// A workload antagonist (a real job as the neighbour) dies with a SIGKILLed agent mid-trial,
// and so does a daemon it detached with setsid: the same guarantees as codl-inject's.
TEST_F(ClusterTest, AgentKilledItsWorkloadNeighbourDies) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            "name: workloadkill\n"
            "victim: {command: [sleep, '6'], progress: {format: wall}, timeout: 60s}\n"
            "antagonists:\n"
            "  - name: job2\n"
            "    workload:\n"
            "      command: [sh, -c, 'setsid sleep 38 & while :; do echo "
            "\"{\\\"step_time_s\\\": 0.05}\"; sleep 0.05; done']\n"
            "      warmup_steps: 2\n"
            "repetitions: 1\nsettle: 0.5s\nlease: 30s\nwarmup_trials: 0\n");
  ASSERT_EQ(c.Ctl({"submit", dir_ + "/exp.yaml"}).exit_code, 0);
  const pid_t agent = c.agent(0).pid();
  std::vector<pid_t> tree;
  ASSERT_TRUE(WaitUntil(
      [&] {
        tree.clear();
        // The workload (in its solo trial or beside the victim, whichever the order has
        // first) and the daemon it detached.
        for (const char* what : {"sleep 38", "sh -c setsid"}) {
          for (pid_t p : DescendantsMatching(agent, what)) tree.push_back(p);
        }
        return !DescendantsMatching(agent, "sleep 38").empty() &&
               !DescendantsMatching(agent, "sh -c setsid").empty();
      },
      60))
      << c.Logs();
  c.agent(0).Signal(SIGKILL);
  c.agent(0).Wait(5);
  auto alive = [](pid_t p) {
    std::string s = ReadFile("/proc/" + std::to_string(p) + "/stat");
    auto rp = s.rfind(')');
    return !s.empty() && rp != std::string::npos && s[rp + 2] != 'Z';
  };
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (pid_t p : tree)
          if (alive(p)) return false;
        return true;
      },
      2.0))
      << "a workload neighbour (or what it detached) outlived the killed agent";
  for (pid_t p : tree) kill(p, SIGKILL);  // a failed run leaves nothing behind
  c.Ctl({"cancel", "latest"}, 30);
}

// What a victim started dies with a SIGKILLed agent too: a background job in its group and a
// daemon it detached with setsid (PDEATHSIG reaches only the victim itself; the agent's guard
// process ends the rest, agent/child_guard.h). Three kills, each of a fresh agent mid-trial.
TEST_F(ClusterTest, AgentKilledVictimGrandchildrenDie) {
  Cluster c(dir_);
  c.StartController();
  auto alive = [](pid_t p) {
    std::string s = ReadFile("/proc/" + std::to_string(p) + "/stat");
    auto rp = s.rfind(')');
    return !s.empty() && rp != std::string::npos && s[rp + 2] != 'Z';
  };
  for (int round = 0; round < 3; ++round) {
    const std::string id = "k" + std::to_string(round);
    c.StartAgent(id);
    ASSERT_TRUE(WaitUntil(
        [&] {
          std::stringstream lines(c.Ctl({"agents", "--json"}, 10).out);
          for (std::string line; std::getline(lines, line);) {
            if (line.find("\"agent_id\":\"" + id + "\"") != std::string::npos &&
                line.find("\"alive\":true") != std::string::npos)
              return true;
          }
          return false;
        },
        20))
        << c.Logs();
    const std::string yaml = dir_ + "/grand" + std::to_string(round) + ".yaml";
    WriteFile(yaml, "name: grandchildren\nnodes: {hosts: [" + id +
                        "]}\n"
                        "victim: {command: [sh, -c, 'sleep 32 & setsid sleep 33 & sleep 34'], "
                        "progress: {format: wall}, timeout: 60s}\n"
                        "antagonists:\n"
                        "  - {name: tick, injector: noop, rates: ['10']}\n"
                        "repetitions: 1\nsettle: 0s\nlease: 30s\nwarmup_trials: 0\n");
    ASSERT_EQ(c.Ctl({"submit", yaml}).exit_code, 0);
    const pid_t agent = c.agent(round).pid();
    std::vector<pid_t> tree;
    ASSERT_TRUE(WaitUntil(
        [&] {
          tree.clear();
          // The sleeps themselves, not the shell whose command line names them too.
          for (pid_t p : DescendantsMatching(agent, "sleep 3")) {
            if (ReadFile("/proc/" + std::to_string(p) + "/cmdline").rfind("sleep", 0) == 0)
              tree.push_back(p);
          }
          return tree.size() == 3;
        },
        60))
        << "round " << round << ": " << tree.size() << " of the victim's 3 sleeps\n"
        << c.Logs();
    c.agent(round).Signal(SIGKILL);
    c.agent(round).Wait(5);
    EXPECT_TRUE(WaitUntil(
        [&] {
          for (pid_t p : tree)
            if (alive(p)) return false;
          return true;
        },
        2.0))
        << "round " << round << ": a victim's grandchild outlived the killed agent";
    for (pid_t p : tree) kill(p, SIGKILL);  // a failed round leaves nothing behind
    c.Ctl({"cancel", "latest"}, 30);
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

// validate --plan with a controller: victim.cache as-is is weighed against the live agents'
// memory (their memory_bytes label), not the machine codlctl runs on; paths that are not on
// this machine are said to be unsized instead of counted as 0 bytes.
TEST_F(ClusterTest, ValidatePlanWeighsTheCacheAgainstTheAgentsMemory) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("memnode");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  std::filesystem::create_directories(dir_ + "/data");
  WriteFile(dir_ + "/data/f", std::string(4096, 'x'));
  WriteFile(dir_ + "/cache.yaml", "name: cache-plan\nvictim:\n  command: [cat, " + dir_ +
                                      "/data/f]\n  cache: {mode: as-is, paths: [" + dir_ +
                                      "/data]}\n");
  auto r = c.Ctl({"validate", dir_ + "/cache.yaml", "--plan"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4.00 KiB under victim.cache.paths could sit in node memnode's "),
            std::string::npos)
      << r.out;
  WriteFile(dir_ + "/away.yaml",
            "name: cache-away\nvictim:\n  command: [true]\n  cache: {mode: as-is, paths: [" + dir_ +
                "/not-here]}\n");
  auto away = c.Ctl({"validate", dir_ + "/away.yaml", "--plan"});
  ASSERT_EQ(away.exit_code, 0) << away.out << away.err;
  EXPECT_NE(away.out.find("are not on this machine"), std::string::npos) << away.out;
}

TEST_F(ClusterTest, BadInputExitsTwoWithLocation) {
  WriteFile(dir_ + "/bad.yaml", "name: x\nvictim:\n  command: [true]\n  colour: red\n");
  auto r = RunCommand({Bin("codlctl"), "validate", dir_ + "/bad.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/bad.yaml:4:3:"), std::string::npos) << r.err;
  auto missing = RunCommand({Bin("codlctl"), "results", "latest", "--db", dir_ + "/nope.db"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
}

// Security issue, item 3: a hostile experiment name (OSC title, clear screen, CR/LF and a fake
// line) through the verbs that need a controller — submit --watch's progress, watch (table,
// csv, json), status, agents — and into the daemons' logs: no raw ESC or CR anywhere, the name
// shown escaped, and watch's JSON lines valid JSON that keep the name exactly.
TEST_F(ClusterTest, HostileNameReachesNoTerminalOrLogRaw) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  WriteFile(dir_ + "/exp.yaml",
            QuickExperiment("\"evil\\e]0;pwned\\a\\e[2J\\r\\nFAKE done\"", "", 1));
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml", "--watch"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err << c.Logs();
  std::string all = sub.out + sub.err;
  const std::vector<std::vector<std::string>> verbs = {{"watch", "latest"},
                                                       {"watch", "latest", "-o", "csv"},
                                                       {"status"},
                                                       {"status", "latest"},
                                                       {"agents"},
                                                       {"agents", "-o", "wide"},
                                                       {"agents", "-o", "csv"}};
  for (const auto& args : verbs) {
    auto r = c.Ctl(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    all += r.out + r.err;
  }
  auto json = c.Ctl({"watch", "latest", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::istringstream lines(json.out);
  bool named = false;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << line;
    named |= line.find("evil\\u001b]0;pwned\\u0007") != std::string::npos;
  }
  EXPECT_TRUE(named) << json.out;
  all += json.out + json.err + c.Logs();
  EXPECT_EQ(all.find('\x1b'), std::string::npos) << "raw ESC";
  EXPECT_EQ(all.find('\r'), std::string::npos) << "raw CR";
  EXPECT_NE(all.find("evil\\x1B]0;pwned\\x07\\x1B[2J\\x0D\\x0AFAKE done"), std::string::npos)
      << sub.out;
}

}  // namespace
}  // namespace codl::testing
