// The trial runner against fake agents (no processes, no sockets) and a real SQLite store.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "controller/agent_registry.h"
#include "controller/experiment_runner.h"
#include "lib/analysis/results.h"
#include "lib/common/tunables.h"
#include "lib/common/version.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"
#include "tests/controller/fake_agent.h"
#include "tests/controller/run_plan.h"

namespace codl::controller {
namespace {

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("codl-runner-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto s = store::Store::Open((dir_ / "r.db").string());
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(s.value());
    agent_ = std::make_shared<FakeAgent>();
    registry_ = std::make_unique<AgentRegistry>(
        SystemClock::Get(),
        [this](const std::string& id, const std::string&) { return agents_by_id_.at(id); }, 60);
    AddNode("node-1", agent_);
    // No settle grace on the real clock: antagonists that miss their target end the settle at
    // once ("did not settle") instead of costing every trial 10 s of test time.
    runner_ = std::make_unique<ExperimentRunner>(registry_.get(), store_.get(), SystemClock::Get(),
                                                 RunnerOptions{0.0, 0.9, 0.0, 0.0, 0.0});
  }
  void AddNode(const std::string& id, std::shared_ptr<FakeAgent> agent) {
    agents_by_id_[id] = std::move(agent);
    v1::AgentInfo info;
    info.set_agent_id(id);
    info.set_address("fake");
    ASSERT_TRUE(registry_->Register(info).ok());
  }
  // The runner's waits (settle wake-ups, cooldown) then take no real time; the test cancels from
  // inside a wait with fake_clock_.OnWait.
  void UseFakeClock() {
    runner_ = std::make_unique<ExperimentRunner>(registry_.get(), store_.get(), &fake_clock_,
                                                 RunnerOptions{0.0, 0.9, 0.0});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // warmup_trials: 0 unless a test asks, so that victim counts are the trials'.
  experiment::ExperimentSpec Spec(const std::string& extra = "", const std::string& settle = "0s",
                                  const std::string& warmup = "0") {
    std::string yaml =
        "name: fake\n"
        "victim: {command: [victim], warmup_steps: 0}\n"
        "antagonists:\n"
        "  - {name: membw, injector: memcpy, levels: [0.5, 1.0]}\n"
        "repetitions: 3\n"
        "warmup_trials: " +
        warmup + "\nsettle: " + settle + "\n" + extra;
    auto s = experiment::ParseExperiment(yaml, "fake.yaml");
    EXPECT_TRUE(s.ok()) << s.error();
    return *s;
  }

  Status Run(const experiment::ExperimentSpec& spec, ExperimentRecord* rec) {
    return RunWholePlan(*runner_, *store_, spec, &counter_, cancel_, rec);
  }

  // Every antagonist the agent started was asked to stop, and none is left running.
  static void ExpectAllStopped(const FakeAgent& agent) {
    EXPECT_EQ(agent.stops, static_cast<int>(agent.ever_started.size()));
    EXPECT_TRUE(agent.running.empty()) << agent.running.size() << " antagonists still running";
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::shared_ptr<FakeAgent> agent_;
  std::map<std::string, std::shared_ptr<FakeAgent>> agents_by_id_;
  std::unique_ptr<AgentRegistry> registry_;
  FakeClock fake_clock_;
  std::atomic<bool> cancel_{false};
  std::unique_ptr<ExperimentRunner> runner_;
  int counter_ = 0;
};

TEST_F(RunnerTest, EveryTrialStoredEveryAntagonistStoppedSlowdownMeasured) {
  auto spec = Spec();
  ExperimentRecord rec;
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(static_cast<int>(trials->size()), rec.total_trials);
  EXPECT_EQ(agent_->stops, static_cast<int>(agent_->ever_started.size()));
  EXPECT_TRUE(agent_->running.empty());
  for (const auto& t : *trials) {
    EXPECT_EQ(t.state, TrialState::kDone) << t.error;
    if (!t.baseline) {
      ASSERT_EQ(t.antagonists.size(), 1u);
      EXPECT_DOUBLE_EQ(t.antagonists[0].peak_rate, 1000);
      EXPECT_DOUBLE_EQ(t.antagonists[0].target_rate, 1000 * t.antagonists[0].level);
    }
  }
  auto results = experiment::Summarize(rec, *trials);
  for (const auto& p : results.pairings) {
    const double expected = p.pairing == "membw@1" ? 2.0 : p.pairing == "membw@0.5" ? 1.5 : 1.0;
    EXPECT_NEAR(p.slowdown, expected, 1e-9) << p.pairing;
  }
  EXPECT_EQ(agent_->calibrations, 1);
  // A second experiment with the same injector options reuses the cached calibration.
  ExperimentRecord rec2;
  ASSERT_TRUE(Run(spec, &rec2).ok());
  EXPECT_EQ(agent_->calibrations, 1);
}

// One interference trial (membw@1) and its baseline, on the fake clock. Every wait of the
// runner is one 0.1 s telemetry interval: its time is recorded and the fake agent streams the
// next sample of each running antagonist.
class SettleTest : public RunnerTest {
 protected:
  void SetUp() override {
    RunnerTest::SetUp();
    UseFakeClock();
    agent_->clock = &fake_clock_;
    t0_ = fake_clock_.MonotonicSeconds();
    fake_clock_.OnWait([this](double) {
      {
        std::lock_guard<std::mutex> l(agent_->mu);
        poll_ends_s_.push_back(fake_clock_.MonotonicSeconds());
      }
      agent_->Tick();
    });
  }
  experiment::ExperimentSpec OneTrial(const std::string& settle) {
    auto spec = Spec("", settle);
    spec.antagonists[0].intensities.resize(1);  // level 0.5 only
    spec.repetitions = 1;
    return spec;
  }
  // The interference trial (the only one with antagonists).
  TrialRecord Interference(const std::string& id) {
    auto trials = store_->GetTrials(id);
    EXPECT_TRUE(trials.ok());
    for (const auto& t : *trials) {
      if (!t.baseline) return t;
    }
    ADD_FAILURE() << "no interference trial";
    return {};
  }
  double t0_ = 0;
  std::vector<double> poll_ends_s_;  // clock time at the start of each settle wait
};

TEST_F(SettleTest, VictimStartsOnlyAfterTheTargetsWereHeldForTheWholeWindow) {
  // At target from the start (sample 0 at t = 0, sample n at t = (n - 1) * 0.1 s), one dip at
  // sample 5 (t = 0.4 s), then at target again: the window restarts at sample 6 (t = 0.5 s), so
  // the victim may not start before t = 1.5 s. Before this rule, it started at the first
  // sample at target (t = 0).
  agent_->fraction_at_sample = [](int n) { return n == 5 ? 0.5 : 1.0; };
  const double t0 = t0_;
  ExperimentRecord rec;
  ASSERT_TRUE(Run(OneTrial("1s"), &rec).ok());
  TrialRecord t = Interference(rec.id);
  EXPECT_EQ(t.state, TrialState::kDone) << t.error;
  ASSERT_EQ(agent_->victim_starts.size(), 2u);  // the interference trial and its baseline
  double victim_s = -1;
  for (const auto& [at, running] : agent_->victim_starts) {
    if (running > 0) victim_s = at - t0;
  }
  EXPECT_GE(victim_s, 1.5 - 1e-6) << "the dip at 0.4 s did not restart the settle window";
  EXPECT_LE(victim_s, 1.5 + 0.1 + 1e-6) << "settle waited longer than the window";
  ASSERT_EQ(agent_->polls.size(), 1u);
  EXPECT_EQ(agent_->polls.begin()->second, 1) << "asked why only while below its line";
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, SettlesOnTheTelemetryStreamWithoutPolling) {
  // Every start sends one sample at its target on the trial's stream: with a zero settle
  // window that sample alone settles the trial, and no GetAntagonist poll is needed.
  auto spec = Spec();
  spec.repetitions = 1;
  ExperimentRecord rec;
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  for (const auto& t : *trials) EXPECT_EQ(t.state, TrialState::kDone) << t.error;
  EXPECT_TRUE(agent_->polls.empty()) << "polled although the stream said it";
  EXPECT_EQ(agent_->open_streams, 0) << "a settle stream was left open";
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, BelowTargetOnTheStreamIsAskedAndDoesNotSettle) {
  // The stream says 50 % of the target: the runner asks the agent (which agrees) and, with no
  // grace on this runner, gives up at once: "did not settle".
  agent_->achieved_fraction = 0.5;
  auto spec = Spec("", "1s");
  spec.repetitions = 1;
  ExperimentRecord rec;
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  for (const auto& t : *trials) {
    if (t.baseline) continue;
    EXPECT_EQ(t.state, TrialState::kFlagged);
    EXPECT_EQ(t.error.rfind("did not settle: ", 0), 0u) << t.error;
  }
  ExpectAllStopped(*agent_);
}

// An agent without StreamTelemetry (no stream opens) still settles, on the answers it gives
// when asked, which count as samples: it is asked again before its last answer goes stale
// (1 s), so a window longer than that holds.
TEST_F(SettleTest, AnAgentThatCannotStreamSettlesOnItsAnswers) {
  agent_->streams = false;
  ExperimentRecord rec;
  ASSERT_TRUE(Run(OneTrial("2s"), &rec).ok());
  TrialRecord t = Interference(rec.id);
  EXPECT_EQ(t.state, TrialState::kDone) << t.error;
  EXPECT_EQ(agent_->open_streams, 0);
  ASSERT_EQ(agent_->polls.size(), 1u);
  EXPECT_GE(agent_->polls.begin()->second, 4) << "a 2 s window on answers every 0.4 s";
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, CommonStartWaitsForTheSlowestSetupEstimate) {
  // One agent's antagonist needs 3 s to set up: every start time is at least that far out
  // (plus start_delay_s, 0 on this runner), not "now".
  auto slow = std::make_shared<FakeAgent>();
  slow->setup_estimate_s = 3;
  AddNode("node-2", slow);
  auto spec = Spec("", "0s");
  spec.antagonists[0].nodes.specified = true;  // membw on both nodes
  spec.repetitions = 1;
  spec.antagonists[0].intensities.resize(1);
  const int64_t before_ns = SystemClock::Get()->UnixNanos();
  ExperimentRecord rec;
  ASSERT_TRUE(Run(spec, &rec).ok());
  ASSERT_FALSE(agent_->start_at_ns.empty());
  ASSERT_FALSE(slow->start_at_ns.empty());
  EXPECT_GE(agent_->start_at_ns[0] - before_ns, 3'000'000'000LL) << "the fast agent too";
  EXPECT_GE(slow->start_at_ns[0] - before_ns, 3'000'000'000LL);
  EXPECT_EQ(agent_->start_at_ns[0], slow->start_at_ns[0]) << "one common start (offsets 0)";
}

TEST_F(SettleTest, TargetsNeverHeldForAWholeWindowFlagTheTrialDidNotSettle) {
  // At target 4 samples in 5: never 1 s without a gap. The runner gives up after settle + the
  // grace (10 s), still runs the victim, and flags the trial with its own reason.
  agent_->fraction_at_sample = [](int n) { return n % 5 == 4 ? 0.5 : 1.0; };
  ExperimentRecord rec;
  ASSERT_TRUE(Run(OneTrial("1s"), &rec).ok());
  TrialRecord t = Interference(rec.id);
  EXPECT_EQ(t.state, TrialState::kFlagged);
  EXPECT_EQ(t.error.rfind("did not settle: ", 0), 0u) << t.error;
  EXPECT_NE(t.error.find("of the 1 s settle window"), std::string::npos) << t.error;
  EXPECT_EQ(agent_->victims, 2) << "the victim still runs (its figures are kept, flagged)";
  ASSERT_FALSE(poll_ends_s_.empty());
  EXPECT_GE(poll_ends_s_.back() - t0_, 11 - 0.2) << "gave up before settle + grace";
  EXPECT_LE(poll_ends_s_.back() - t0_, 11 + 0.2) << "kept trying past settle + grace";
  ASSERT_EQ(t.flag_reasons.size(), 1u);
  EXPECT_EQ(t.flag_reasons[0].code, FlagCode::kDidNotSettle);
  EXPECT_EQ(t.flag_reasons[0].detail, t.error);
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, AVictimShorterThanTheSampleMinimumIsTooShortToJudge) {
  agent_->victim_wall_s = 0.5;  // ~3 antagonist samples (one per 0.2 s) in the victim's run
  ExperimentRecord rec;
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  for (const auto& t : *trials) {
    if (t.baseline) {
      EXPECT_EQ(t.state, TrialState::kDone) << "a baseline has no antagonist to judge";
      continue;
    }
    EXPECT_EQ(t.state, TrialState::kFlagged);
    EXPECT_EQ(t.error.rfind("too short to judge: membw had ", 0), 0u) << t.error;
    EXPECT_NE(t.error.find("(fewer than 5)"), std::string::npos) << t.error;
  }
  // The minimum is a YAML knob.
  ExperimentRecord rec2;
  ASSERT_TRUE(Run(Spec("min_antagonist_samples: 2\n"), &rec2).ok());
  auto trials2 = store_->GetTrials(rec2.id);
  ASSERT_TRUE(trials2.ok());
  for (const auto& t : *trials2) EXPECT_EQ(t.state, TrialState::kDone) << t.error;
}

TEST_F(RunnerTest, WarmupRunsComeFirstWithoutAntagonistsAndAreNeverTrials) {
  ExperimentRecord rec;
  auto spec = Spec("", "0s", "2");
  ASSERT_EQ(spec.warmup_trials, 2);
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ(static_cast<int>(trials->size()), rec.total_trials) << "warm-ups are not trials";
  EXPECT_EQ(agent_->victims, rec.total_trials + 2);
  ASSERT_GE(agent_->started_before_victim.size(), 2u);
  EXPECT_EQ(agent_->started_before_victim[0], 0u) << "a warm-up ran beside an antagonist";
  EXPECT_EQ(agent_->started_before_victim[1], 0u) << "a warm-up ran after a trial";
  // Recorded as provenance, with their wall times.
  auto stored = store_->GetExperiment(rec.id);
  ASSERT_TRUE(stored.ok());
  auto prov = nlohmann::json::parse(stored->provenance_json);
  ASSERT_EQ(prov["warmup"].size(), 2u);
  EXPECT_EQ(prov["warmup"][0]["run"], 1);
  EXPECT_TRUE(prov["warmup"][0]["ok"].get<bool>());
  EXPECT_DOUBLE_EQ(prov["warmup"][1]["wall_s"].get<double>(), agent_->victim_wall_s);
}

TEST_F(RunnerTest, AFailedWarmupStopsTheExperimentBeforeTrialOne) {
  agent_->fail_victim = true;
  ExperimentRecord rec;
  Status s = Run(Spec("", "0s", "1"), &rec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "warm-up run 1 failed: victim exited with status 3: boom")
      << "with the last line of the victim's stderr";
  EXPECT_EQ(s.code(), StatusCode::kUnknown) << "the victim failed, not the transport";
  EXPECT_TRUE(store_->GetTrials(rec.id)->empty());
  EXPECT_TRUE(agent_->ever_started.empty());
}

TEST_F(RunnerTest, AnUnreachableAgentKeepsItsCodeThroughWarmupAndTrials) {
  agent_->unreachable_victim = true;
  ExperimentRecord rec;
  Status warmup = Run(Spec("", "0s", "1"), &rec);
  ASSERT_FALSE(warmup.ok());
  EXPECT_EQ(warmup.code(), StatusCode::kUnavailable) << warmup.error();
  EXPECT_NE(warmup.error().find("warm-up run 1 failed"), std::string::npos) << warmup.error();

  // The agent still heartbeats: alive, its calls unreachable (a passing error, not a lost
  // agent), so the trials fail and are kept instead of waiting for it (agent_grace).
  std::atomic<bool> done{false};
  std::thread beats([&] {
    while (!done) {
      registry_->Heartbeat("node-1", 0.001, 0, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  Status trials = Run(Spec(), &rec);
  done = true;
  beats.join();
  ASSERT_FALSE(trials.ok());
  EXPECT_EQ(trials.code(), StatusCode::kUnavailable) << trials.error();
  EXPECT_NE(trials.error().find("the first 3 trials failed"), std::string::npos) << trials.error();
  auto stored = store_->GetTrials(rec.id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 3u);
  for (const auto& t : *stored) EXPECT_EQ(t.state, TrialState::kFailed);
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, StartsCarryTheAgentsStartTimeout) {
  // The controller sends the agent the time to give up on a start; its own deadline for the
  // call is derived from that (tunables::StartDeadlineS), so the two cannot drift apart.
  ExperimentRecord rec;
  ASSERT_TRUE(Run(Spec("pairings: singles\n"), &rec).ok());
  ASSERT_FALSE(agent_->start_timeouts.empty());
  for (double t : agent_->start_timeouts) {
    EXPECT_GE(t, tunables::kAntagonistStartTimeoutS);
    EXPECT_GT(tunables::StartDeadlineS(t), t);
  }
}

TEST_F(RunnerTest, ProvenanceRecordsVersionSeedNodesCalibrationsAndTrialLoad) {
  v1::AgentInfo info;
  info.set_agent_id("node-1");
  info.set_address("fake");
  v1::NodeSnapshot node;
  node.set_kernel("Linux 6.8.0");
  node.set_cpu_model("Test CPU");
  node.set_cpu_count(8);
  node.set_governor("performance");
  node.set_cpu_max_khz(3000000);
  (*node.mutable_gpu_labels())["gpu_count"] = "0";
  ASSERT_TRUE(registry_->Register(info, {}, node).ok());
  ASSERT_TRUE(registry_->Heartbeat("node-1", 0.001, 0, 0, {}, 1.25));
  ExperimentRecord rec;
  auto spec = Spec();
  ASSERT_FALSE(spec.seed_explicit);
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto stored = store_->GetExperiment(rec.id);
  ASSERT_TRUE(stored.ok());
  auto prov = nlohmann::json::parse(stored->provenance_json);
  EXPECT_EQ(prov["codl_version"], CodlVersion());
  EXPECT_EQ(prov["seed"].get<uint64_t>(), spec.seed);
  EXPECT_EQ(prov["seed_source"], "drawn");
  EXPECT_GT(prov["started_unix_ms"].get<int64_t>(), 0);
  EXPECT_GE(prov["finished_unix_ms"].get<int64_t>(), prov["started_unix_ms"].get<int64_t>());
  const auto& n = prov["nodes"]["node-1"];
  EXPECT_EQ(n["kernel"], "Linux 6.8.0");
  EXPECT_EQ(n["cpu_model"], "Test CPU");
  EXPECT_EQ(n["cpu_count"], 8);
  EXPECT_EQ(n["governor"], "performance");
  EXPECT_EQ(n["cpu_max_khz"], 3000000);
  EXPECT_EQ(n["gpu"]["gpu_count"], "0");
  ASSERT_EQ(prov["calibrations"].size(), 1u);
  EXPECT_EQ(prov["calibrations"][0]["source"], "measured: none cached");
  ASSERT_EQ(static_cast<int>(prov["trials"].size()), rec.total_trials);
  EXPECT_DOUBLE_EQ(prov["trials"][0]["load_avg_1m"].get<double>(), 1.25);
  // All of it reaches the results JSON (`codlctl results ID -o json`).
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  auto results =
      nlohmann::json::parse(experiment::FormatJson(experiment::Summarize(*stored, *trials)));
  EXPECT_EQ(results["provenance"], prov);
  EXPECT_EQ(results["yaml"], stored->yaml);
}

// A collective antagonist on two nodes is calibrated as it runs: both ranks at once, each with
// ranks 2, its rank and one rendezvous key of the calibration's own. (Rank by rank, each ran as
// a 1-rank communicator, whose peak is a device-local copy's: found on gpusim, where every
// level trial of a 2-node nccl antagonist then missed its target.) The second run takes the
// cached peaks.
TEST_F(RunnerTest, ACollectiveIsCalibratedWithAllItsRanksAtOnce) {
  auto second = std::make_shared<FakeAgent>();
  AddNode("node-2", second);
  agent_->calibrate_s = second->calibrate_s = 0.3;
  auto s = experiment::ParseExperiment(
      "name: fake\nvictim: {command: [victim], warmup_steps: 0, nodes: {hosts: [node-1]}}\n"
      "antagonists:\n"
      "  - {name: ar, injector: nccl, options: {op: allreduce}, nodes: {hosts: [node-1, node-2]}, "
      "levels: [0.5]}\n"
      "repetitions: 1\nwarmup_trials: 0\nsettle: 0s\n",
      "fake.yaml");
  ASSERT_TRUE(s.ok()) << s.error();
  ExperimentRecord rec;
  ASSERT_TRUE(Run(*s, &rec).ok());
  ASSERT_EQ(agent_->calibrate_requests.size(), 1u);
  ASSERT_EQ(second->calibrate_requests.size(), 1u);
  const auto& r0 = agent_->calibrate_requests[0].options();
  const auto& r1 = second->calibrate_requests[0].options();
  EXPECT_EQ(r0.at("ranks"), "2");
  EXPECT_EQ(r1.at("ranks"), "2");
  EXPECT_EQ(r0.at("rank"), "0");
  EXPECT_EQ(r1.at("rank"), "1");
  EXPECT_EQ(r0.at("rendezvous_key"), r1.at("rendezvous_key"));
  EXPECT_NE(r0.at("rendezvous_key").find("/ar"), std::string::npos) << r0.at("rendezvous_key");
  const auto [a0, a1] = agent_->calibrate_windows[0];
  const auto [b0, b1] = second->calibrate_windows[0];
  EXPECT_TRUE(a0 < b1 && b0 < a1) << "the ranks were calibrated one after the other";
  ASSERT_TRUE(Run(*s, &rec).ok());
  EXPECT_EQ(agent_->calibrations, 1) << "the cached peak is used";
  EXPECT_EQ(second->calibrations, 1);
}

TEST_F(RunnerTest, CalibrationIsRedoneWhenTooOldOrWhenTheNodeChanged) {
  UseFakeClock();
  ExperimentRecord rec;
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  EXPECT_EQ(agent_->calibrations, 1);
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  EXPECT_EQ(agent_->calibrations, 1) << "fresh and same node: the cached peak is reused";
  fake_clock_.Advance(25 * 3600);  // past the default max_age of 24 h
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  EXPECT_EQ(agent_->calibrations, 2) << "a day-old calibration is measured again";
  ASSERT_TRUE(Run(Spec("calibration: {max_age: 48h}\n"), &rec).ok());
  EXPECT_EQ(agent_->calibrations, 2);
  // The agent re-registers with another governor: the peak it measured no longer holds.
  v1::AgentInfo info;
  info.set_agent_id("node-1");
  info.set_address("fake");
  v1::NodeSnapshot node;
  node.set_governor("powersave");
  ASSERT_TRUE(registry_->Register(info, {}, node).ok());
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  EXPECT_EQ(agent_->calibrations, 3) << "the node's snapshot changed";
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  EXPECT_EQ(agent_->calibrations, 3);
}

TEST_F(RunnerTest, AntagonistThatMissesTargetFlagsTheTrial) {
  agent_->achieved_fraction = 0.5;
  ExperimentRecord rec;
  ASSERT_TRUE(Run(Spec(), &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  for (const auto& t : *trials) {
    if (t.baseline) continue;
    EXPECT_EQ(t.state, TrialState::kFlagged);
    EXPECT_NE(t.error.find("membw reached"), std::string::npos) << t.error;
    EXPECT_FALSE(t.antagonists[0].reached_target);
    // Every reason as its own entry, settle first; `error` is their text joined.
    ASSERT_EQ(t.flag_reasons.size(), 2u) << t.error;
    EXPECT_EQ(t.flag_reasons[0].code, FlagCode::kDidNotSettle);
    EXPECT_EQ(t.flag_reasons[1].code, FlagCode::kMissedTarget);
    EXPECT_EQ(t.flag_reasons[1].detail.rfind("membw reached ", 0), 0u) << t.flag_reasons[1].detail;
    EXPECT_EQ(t.error, JoinFlagReasons(t.flag_reasons));
  }
}

TEST_F(RunnerTest, TellsCalibrationWarmUpsAndWarningsAsTypedEvents) {
  agent_->achieved_fraction = 0.5;  // every interference trial: "did not settle"
  EventLog log;
  ExperimentRecord rec;
  ASSERT_TRUE(
      RunWholePlan(*runner_, *store_, Spec("", "0s", "1"), &counter_, cancel_, &rec, &log).ok());
  using E = v1::ExperimentEvent;
  std::vector<E::KindCase> kinds;
  for (const auto& ev : log.events) kinds.push_back(ev.kind_case());
  ASSERT_GE(kinds.size(), 5u);
  EXPECT_EQ(kinds[0], E::kNote) << log.events[0].message();  // where the victim runs
  EXPECT_EQ(kinds[1], E::kCalibrating);
  EXPECT_EQ(log.events[1].calibrating().antagonist(), "membw");
  EXPECT_EQ(log.events[1].calibrating().injector(), "memcpy");
  EXPECT_EQ(log.events[1].calibrating().node(), "node-1");
  EXPECT_EQ(log.events[1].calibrating().reason(), "none cached");
  EXPECT_EQ(kinds[2], E::kWarmUp);
  EXPECT_FALSE(log.events[2].warm_up().finished());
  EXPECT_EQ(kinds[3], E::kWarmUp);
  EXPECT_TRUE(log.events[3].warm_up().finished());
  EXPECT_EQ(log.events[3].warm_up().wall_s(), agent_->victim_wall_s);
  int warnings = 0;
  for (const auto& ev : log.events) {
    EXPECT_FALSE(ev.message().empty()) << "every event says something";
    if (ev.has_note() && ev.note().severity() == v1::Note::WARNING) {
      ++warnings;
      EXPECT_NE(ev.message().find("did not settle"), std::string::npos) << ev.message();
    }
  }
  EXPECT_EQ(warnings, 6) << "one per interference trial (2 levels x 3 repetitions)";
}

TEST_F(RunnerTest, FailedVictimIsRecordedNotMeasuredAndStopsEarly) {
  agent_->fail_victim = true;
  ExperimentRecord rec;
  Status s = Run(Spec(), &rec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("the first 3 trials failed"), std::string::npos) << s.error();
  auto trials = store_->GetTrials(rec.id);
  ASSERT_EQ(trials->size(), 3u);
  for (const auto& t : *trials) {
    EXPECT_EQ(t.state, TrialState::kFailed);
    EXPECT_EQ(t.exit_code, 3);
    EXPECT_EQ(t.stderr_tail, "boom");
  }
  EXPECT_TRUE(agent_->running.empty()) << "no antagonist may keep running";
}

TEST_F(RunnerTest, StartFailureFailsTrialAndLeavesNothingRunning) {
  agent_->fail_start = true;
  ExperimentRecord rec;
  (void)Run(Spec("pairings: singles\n"), &rec);
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  bool saw_failed = false;
  for (const auto& t : *trials) {
    if (t.baseline) continue;
    EXPECT_EQ(t.state, TrialState::kFailed);
    EXPECT_NE(t.error.find("out of range"), std::string::npos) << t.error;
    saw_failed = true;
  }
  EXPECT_TRUE(saw_failed);
  EXPECT_TRUE(agent_->running.empty());
}

TEST_F(RunnerTest, CancelDuringSettleStopsEveryAntagonistAndSkipsTheVictim) {
  UseFakeClock();
  agent_->achieved_fraction = 0;  // never at target: only the settle limit or a cancel ends it
  int waits = 0;
  fake_clock_.OnWait([&](double) {
    if (++waits == 3) cancel_ = true;  // as `codlctl cancel` during the third settle poll
  });
  const double t0 = fake_clock_.MonotonicSeconds();
  ExperimentRecord rec;
  Status s = Run(Spec("pairings: singles\n", "3600s"), &rec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "cancelled");
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(fake_clock_.Waits(), 3) << "the cancelled wait must end the settle at once";
  EXPECT_LT(fake_clock_.MonotonicSeconds() - t0, 1.0) << "settle ran on after the cancel";
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_FALSE(trials->empty());
  const TrialRecord& last = trials->back();
  EXPECT_EQ(last.state, TrialState::kCancelled);
  EXPECT_FALSE(last.baseline);
  EXPECT_EQ(agent_->victims, static_cast<int>(trials->size()) - 1) << "victim ran after cancel";
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, CancelDuringCooldownReturnsAtOnceWithEveryAntagonistStopped) {
  UseFakeClock();
  fake_clock_.OnWait([&](double seconds) {
    if (seconds > 60) cancel_ = true;  // the hour-long cooldown, not a settle poll
  });
  const double t0 = fake_clock_.MonotonicSeconds();
  ExperimentRecord rec;
  Status s = Run(Spec("cooldown: 3600s\n"), &rec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "cancelled");
  EXPECT_LT(fake_clock_.MonotonicSeconds() - t0, 60.0) << "the cooldown was served in full";
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(trials->size(), 1u) << "no trial may start after the cancel";
  EXPECT_EQ(trials->front().state, TrialState::kDone) << trials->front().error;
  ExpectAllStopped(*agent_);
}

TEST_F(RunnerTest, AStopFailureStillStopsTheOtherNodesAntagonists) {
  auto unreachable = std::make_shared<FakeAgent>();
  unreachable->fail_stop = true;
  AddNode("node-2", unreachable);
  ExperimentRecord rec;
  auto spec = Spec();
  spec.antagonists[0].nodes.specified = true;  // membw on both nodes (default: the victim's)
  ASSERT_TRUE(Run(spec, &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(static_cast<int>(trials->size()), rec.total_trials);
  for (const auto& t : *trials) {
    EXPECT_EQ(t.antagonists.size(), t.baseline ? 0u : 2u);
  }
  EXPECT_FALSE(agent_->ever_started.empty());
  ExpectAllStopped(*agent_);
  // node-2 was asked to stop each of its antagonists; its lease stops what it could not.
  EXPECT_FALSE(unreachable->ever_started.empty());
  EXPECT_EQ(unreachable->stops, static_cast<int>(unreachable->ever_started.size()));
  EXPECT_EQ(unreachable->running.size(), unreachable->ever_started.size());
}

TEST_F(RunnerTest, NoMatchingNodeIsAClearError) {
  ExperimentRecord rec;
  Status s = Run(Spec("nodes: {labels: {role: gpu}}\n"), &rec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("matched no live agent"), std::string::npos) << s.error();
}

// The retry policy (issue 55): a start that fails once for a passing reason runs again as
// attempt 2; only that one counts, the dropped attempt is kept with its kind, and the new
// attempt's antagonists have ids of their own.
TEST_F(RunnerTest, AFailedAntagonistStartRunsAgainAndOnlyTheLastAttemptCounts) {
  agent_->fail_next_starts = 1;
  ExperimentRecord rec;
  ASSERT_TRUE(Run(Spec("pairings: singles\n"), &rec).ok());
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok()) << trials.error();
  ASSERT_EQ(static_cast<int>(trials->size()), rec.total_trials);
  int retried = 0;
  for (const auto& t : *trials) {
    EXPECT_EQ(t.state, TrialState::kDone) << "trial " << t.index + 1 << ": " << t.error;
    if (t.attempt == 1) continue;
    ++retried;
    EXPECT_EQ(t.attempt, 2);
    EXPECT_EQ(t.earlier_failures, std::vector<FailureKind>{FailureKind::kAntagonistStart});
  }
  EXPECT_EQ(retried, 1);
  auto attempts = store_->GetAttempts(rec.id);
  ASSERT_TRUE(attempts.ok()) << attempts.error();
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ(attempts->front().attempt, 1);
  EXPECT_EQ(attempts->front().state, TrialState::kFailed);
  EXPECT_EQ(attempts->front().failure, FailureKind::kAntagonistStart);
  EXPECT_NE(attempts->front().error.find("page cache is full"), std::string::npos);
  bool second_attempt_id = false;
  for (const auto& id : agent_->ever_started)
    second_attempt_id |= id.find("-a2-") != std::string::npos;
  EXPECT_TRUE(second_attempt_id) << "attempt 2's antagonist ids carry their attempt";
  auto r = experiment::Summarize(rec, *trials);
  EXPECT_EQ(r.trials_committed, rec.total_trials);
  EXPECT_EQ(r.trials_retried, 1);
  EXPECT_EQ(r.retried_for, (std::map<std::string, int>{{"antagonist_start", 1}}));
  EXPECT_NE(experiment::RetriedLine(r).find("1 antagonist_start"), std::string::npos);
  ExpectAllStopped(*agent_);
}

// The default never retries a victim's own failure, and `retry: {attempts: 1}` nothing at all;
// either way the failed trial says its kind.
TEST_F(RunnerTest, AVictimsOwnFailureIsNotRetriedNorAnythingWithOneAttempt) {
  agent_->fail_victim = true;
  ExperimentRecord rec;
  (void)Run(Spec("pairings: singles\n"), &rec);
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  ASSERT_FALSE(trials->empty());
  for (const auto& t : *trials) {
    EXPECT_EQ(t.attempt, 1);
    EXPECT_EQ(t.failure, FailureKind::kVictim);
  }
  EXPECT_TRUE(store_->GetAttempts(rec.id)->empty());

  agent_->fail_victim = false;
  agent_->fail_next_starts = 1;
  ExperimentRecord once;
  ASSERT_TRUE(Run(Spec("pairings: singles\nretry: {attempts: 1}\n"), &once).ok());
  trials = store_->GetTrials(once.id);
  ASSERT_TRUE(trials.ok());
  int failed = 0;
  for (const auto& t : *trials) {
    EXPECT_EQ(t.attempt, 1);
    if (t.state != TrialState::kFailed) continue;
    ++failed;
    EXPECT_EQ(t.failure, FailureKind::kAntagonistStart);
  }
  EXPECT_EQ(failed, 1);
  EXPECT_TRUE(store_->GetAttempts(once.id)->empty());
}

// A start that fails every time uses every attempt the policy gives, then fails for good.
TEST_F(RunnerTest, AStartThatAlwaysFailsUsesEveryAttemptThenFails) {
  agent_->fail_start = true;
  ExperimentRecord rec;
  (void)Run(Spec("pairings: singles\nretry: {attempts: 3}\n"), &rec);
  auto trials = store_->GetTrials(rec.id);
  ASSERT_TRUE(trials.ok());
  auto attempts = store_->GetAttempts(rec.id);
  ASSERT_TRUE(attempts.ok());
  int failed = 0;
  for (const auto& t : *trials) {
    if (t.state != TrialState::kFailed) continue;
    ++failed;
    EXPECT_EQ(t.attempt, 3);
    EXPECT_EQ(t.earlier_failures.size(), 2u);
  }
  ASSERT_GT(failed, 0);
  EXPECT_EQ(attempts->size(), 2u * failed) << "two dropped attempts per failed trial";
  ExpectAllStopped(*agent_);
}

}  // namespace
}  // namespace codl::controller
