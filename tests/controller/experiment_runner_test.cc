// The trial runner against fake agents (no processes, no sockets) and a real SQLite store.
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "controller/agent_registry.h"
#include "controller/experiment_runner.h"
#include "lib/analysis/results.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"

namespace codl::controller {
namespace {

// A fake agent whose "victim" slows down by (1 + level of every running antagonist), so the
// runner's bookkeeping can be checked against a known slowdown.
class FakeAgent : public AgentClient {
 public:
  std::mutex mu;
  int calibrations = 0;
  std::map<std::string, double> running;  // id -> target rate
  std::set<std::string> ever_started;
  int stops = 0;
  bool fail_start = false;
  bool fail_victim = false;
  bool fail_stop = false;  // as an unreachable agent: the antagonist keeps running
  int victims = 0;
  double achieved_fraction = 1.0;  // of the target
  double peak = 1000;

  Result<v1::CalibrateReply> Calibrate(const v1::CalibrateRequest&) override {
    std::lock_guard<std::mutex> l(mu);
    ++calibrations;
    v1::CalibrateReply r;
    r.set_peak_rate(peak);
    r.set_unit("bytes/s");
    return r;
  }
  Result<v1::StartAntagonistReply> StartAntagonist(const v1::StartAntagonistRequest& req) override {
    std::lock_guard<std::mutex> l(mu);
    if (fail_start) return Err("codl-inject: option 'threads': 0 is out of range [1, 256]");
    running[req.antagonist_id()] = req.spec().rate();
    ever_started.insert(req.antagonist_id());
    v1::StartAntagonistReply r;
    r.set_pid(1234);
    r.set_started_unix_ns(SystemClock::Get()->UnixNanos());
    return r;
  }
  Result<v1::GetAntagonistReply> GetAntagonist(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu);
    v1::GetAntagonistReply r;
    r.set_running(running.count(id) > 0);
    r.set_unit("bytes/s");
    r.set_samples(3);
    r.set_target(running[id]);
    r.set_last_achieved(running[id] * achieved_fraction);
    return r;
  }
  Result<v1::StopAntagonistReply> StopAntagonist(const v1::StopAntagonistRequest& req) override {
    std::lock_guard<std::mutex> l(mu);
    ++stops;
    if (fail_stop) return Err("agent unavailable");
    double target = running[req.antagonist_id()];
    running.erase(req.antagonist_id());
    v1::StopAntagonistReply r;
    r.set_unit("bytes/s");
    r.set_target_rate(target);
    r.set_achieved_rate(target * achieved_fraction);
    return r;
  }
  Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest&, double) override {
    std::lock_guard<std::mutex> l(mu);
    ++victims;
    v1::RunVictimReply r;
    if (fail_victim) {
      r.set_ok(false);
      r.set_error("victim exited with status 3");
      r.set_exit_code(3);
      r.set_stderr_tail("boom");
      return r;
    }
    double slow = 1;
    for (const auto& [id, rate] : running) slow += rate / peak;
    r.set_ok(true);
    r.set_metric(0.1 * slow);
    r.set_wall_s(0.5);
    (*r.mutable_phase_medians())["compute_s"] = 0.05;
    (*r.mutable_phase_medians())["read_s"] = 0.05 * slow;
    r.set_started_unix_ns(SystemClock::Get()->UnixNanos());
    return r;
  }
  Status StopAll(const std::string&) override { return Status::Ok(); }
};

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
    runner_ = std::make_unique<ExperimentRunner>(registry_.get(), store_.get(), SystemClock::Get(),
                                                 RunnerOptions{0.0, 0.9, 0.0});
  }
  void AddNode(const std::string& id, std::shared_ptr<FakeAgent> agent) {
    agents_by_id_[id] = std::move(agent);
    v1::AgentInfo info;
    info.set_agent_id(id);
    info.set_address("fake");
    ASSERT_TRUE(registry_->Register(info).ok());
  }
  // The runner's waits (settle polls, cooldown) then take no real time; the test cancels from
  // inside a wait with fake_clock_.OnWait.
  void UseFakeClock() {
    runner_ = std::make_unique<ExperimentRunner>(registry_.get(), store_.get(), &fake_clock_,
                                                 RunnerOptions{0.0, 0.9, 0.0});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  experiment::ExperimentSpec Spec(const std::string& extra = "", const std::string& settle = "0s") {
    std::string yaml =
        "name: fake\n"
        "victim: {command: [victim], warmup_steps: 0}\n"
        "antagonists:\n"
        "  - {name: membw, injector: memcpy, levels: [0.5, 1.0]}\n"
        "repetitions: 3\n"
        "settle: " +
        settle + "\n" + extra;
    auto s = experiment::ParseExperiment(yaml, "fake.yaml");
    EXPECT_TRUE(s.ok()) << s.error();
    return *s;
  }

  Status Run(const experiment::ExperimentSpec& spec, ExperimentRecord* rec) {
    rec->id = "exp-" + std::to_string(++counter_);
    rec->name = spec.name;
    rec->total_trials = static_cast<int>(experiment::ExpandPlan(spec).size());
    EXPECT_TRUE(store_->CreateExperiment(*rec).ok());
    struct L : RunListener {
      void OnMessage(const std::string&) override {}
      void OnTrialStarted(const experiment::PlannedTrial&) override {}
      void OnTrialDone(const TrialRecord&) override {}
    } listener;
    return runner_->Run(*rec, spec, experiment::ExpandPlan(spec), cancel_, &listener);
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
  }
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

TEST(AgentRegistry, RegisterRefusesAnAgentItCannotDial) {
  FakeClock clock;
  AgentRegistry r(
      &clock,
      [](const std::string&, const std::string&) { return std::shared_ptr<AgentClient>(nullptr); },
      5);
  v1::AgentInfo info;
  info.set_agent_id("a");
  info.set_address("x");
  // A factory returning null is refused with a clear message.
  EXPECT_FALSE(r.Register(info).ok());
}

TEST(AgentRegistry, LivenessSelectionAndOffsets) {
  FakeClock clock;
  auto fake = std::make_shared<FakeAgent>();
  AgentRegistry r(
      &clock, [&](const std::string&, const std::string&) { return fake; }, 5);
  for (const char* id : {"b", "a"}) {
    v1::AgentInfo info;
    info.set_agent_id(id);
    info.set_address(std::string("addr-") + id);
    (*info.mutable_labels())["role"] = id == std::string("a") ? "gpu" : "storage";
    ASSERT_TRUE(r.Register(info).ok());
  }
  EXPECT_TRUE(r.Heartbeat("a", 0.010, 0.004, 0));
  EXPECT_TRUE(r.Heartbeat("a", 0.001, 0.002, 0));
  EXPECT_TRUE(r.Heartbeat("a", 0.020, -0.01, 0));
  EXPECT_DOUBLE_EQ(r.ClockOffset("a"), 0.002);
  EXPECT_FALSE(r.Heartbeat("zzz", 0.001, 0, 0)) << "unknown agents are told to re-register";

  experiment::NodeSelector gpu;
  gpu.kind = experiment::NodeSelector::Kind::kLabels;
  gpu.labels = {{"role", "gpu"}};
  auto sel = r.Select(gpu);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(*sel, std::vector<std::string>{"a"});

  experiment::NodeSelector all;
  EXPECT_EQ(*r.Select(all), (std::vector<std::string>{"a", "b"}));

  experiment::NodeSelector three;
  three.kind = experiment::NodeSelector::Kind::kCount;
  three.count = 3;
  ASSERT_FALSE(r.Select(three).ok());
  EXPECT_NE(r.Select(three).error().find("needs 3 live agents, 2 are up"), std::string::npos);

  clock.Advance(4);
  EXPECT_TRUE(r.Heartbeat("b", 0.001, 0, 0));
  clock.Advance(2);  // a: 6 s silent (> 5), b: 2 s
  EXPECT_FALSE(r.Alive("a"));
  EXPECT_TRUE(r.Alive("b"));
  EXPECT_EQ(*r.Select(all), std::vector<std::string>{"b"});
  auto none = r.Select(gpu);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(),
            "node selector 'labels: {role: gpu}' matched no live agent (2 registered)");
}

}  // namespace
}  // namespace codl::controller
