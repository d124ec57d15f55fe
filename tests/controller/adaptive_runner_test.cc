// Adaptive repetitions in the runner: whole blocks until the CIs are narrow enough or max blocks
// ran, the stop reason stored; a plain `repetitions: N` runs exactly N blocks as before. Fake
// agents and the fake clock: no processes, no sleeps.
#include <atomic>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "controller/agent_registry.h"
#include "controller/block_stopper.h"
#include "controller/experiment_runner.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"
#include "tests/controller/fake_agent.h"

namespace codl::controller {
namespace {

// The fake victim with seeded noise on its metric: +-`spread` (uniform), so CIs stay wide.
class NoisyAgent : public FakeAgent {
 public:
  double spread = 0;
  Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest& req, double t) override {
    auto r = FakeAgent::RunVictim(req, t);
    std::uniform_real_distribution<double> u(1 - spread, 1 + spread);
    if (r.ok()) r->set_metric(r->metric() * u(rng_));
    return r;
  }

 private:
  std::mt19937_64 rng_{3};
};

struct Recorder : RunListener {
  void OnEvent(const v1::ExperimentEvent&) override {}
  void OnTrialStarted(const experiment::PlannedTrial&) override {}
  void OnTrialDone(const TrialRecord&) override { ++trials; }
  void OnPrecision(const std::string& line) override { precision.push_back(line); }
  void OnStopped(const std::string& reason) override { stopped.push_back(reason); }
  int trials = 0;
  std::vector<std::string> precision, stopped;
};

class AdaptiveRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("codl-adaptive-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto s = store::Store::Open((dir_ / "r.db").string());
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(s.value());
    agent_ = std::make_shared<NoisyAgent>();
    agent_->clock = &clock_;
    registry_ = std::make_unique<AgentRegistry>(
        SystemClock::Get(), [this](const std::string&, const std::string&) { return agent_; }, 60);
    v1::AgentInfo info;
    info.set_agent_id("node-1");
    info.set_address("fake");
    ASSERT_TRUE(registry_->Register(info).ok());
    runner_ = std::make_unique<ExperimentRunner>(registry_.get(), store_.get(), &clock_,
                                                 RunnerOptions{0.0, 0.9, 0.0});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Two interference pairings (membw@0.5, membw@1) and one baseline per block: 3 trials.
  Status Run(const std::string& repetitions, const std::string& extra = "") {
    auto spec = experiment::ParseExperiment(
        "name: adaptive\nvictim: {command: [victim]}\nwarmup_trials: 0\nsettle: 0s\n"
        "antagonists:\n  - {name: membw, injector: memcpy, levels: [0.5, 1.0]}\n"
        "repetitions: " +
            repetitions + "\n" + extra,
        "a.yaml");
    EXPECT_TRUE(spec.ok()) << spec.error();
    rec_.id = "exp-1";
    rec_.name = spec->name;
    rec_.total_trials = static_cast<int>(experiment::ExpandPlan(*spec).size());
    EXPECT_TRUE(store_->CreateExperiment(rec_).ok());
    return runner_->Run(rec_, *spec, experiment::ExpandPlan(*spec), cancel_, &listener_);
  }
  size_t StoredTrials() { return store_->GetTrials(rec_.id, false)->size(); }
  std::string StoredReason() { return store_->GetExperiment(rec_.id)->stop_reason; }

  std::filesystem::path dir_;
  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::shared_ptr<NoisyAgent> agent_;
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<ExperimentRunner> runner_;
  std::atomic<bool> cancel_{false};
  ExperimentRecord rec_;
  Recorder listener_;
};

TEST_F(AdaptiveRunnerTest, PlainIntegerRunsExactlyThatManyBlocksAndRecordsNoReason) {
  ASSERT_TRUE(Run("3").ok());
  EXPECT_EQ(StoredTrials(), 9u);
  EXPECT_EQ(StoredReason(), "");
  EXPECT_TRUE(listener_.precision.empty());
  EXPECT_TRUE(listener_.stopped.empty());
}

TEST_F(AdaptiveRunnerTest, StopsAtTheFirstCheckedBlockThatMeetsTheTarget) {
  // A noiseless victim: every CI has zero width once it exists, so the target is met at min.
  ASSERT_TRUE(Run("{min: 4, max: 10, ci_halfwidth: 2%}").ok());
  EXPECT_EQ(StoredTrials(), 12u) << "whole blocks only, none after the target was met";
  EXPECT_EQ(StoredReason(), "target reached after 4 blocks");
  ASSERT_EQ(listener_.precision.size(), 1u) << "nothing is checked before min blocks";
  EXPECT_EQ(listener_.stopped, std::vector<std::string>{"target reached after 4 blocks"});
}

TEST_F(AdaptiveRunnerTest, APairingWithoutAnIntervalYetKeepsItRunning) {
  // min 1, but below 3 trials a side there is no CI: blocks 1 and 2 cannot meet the target.
  ASSERT_TRUE(Run("{min: 1, max: 10, ci_halfwidth: 2%}").ok());
  EXPECT_EQ(StoredTrials(), 9u);
  EXPECT_EQ(StoredReason(), "target reached after 3 blocks");
  ASSERT_EQ(listener_.precision.size(), 3u);
  // Which pairing is named first depends on the drawn seed's order.
  EXPECT_EQ(listener_.precision[0].rfind(
                "block 1 (min 1, max 10): widest half-width n/a (no CI yet) at membw@", 0),
            0u)
      << listener_.precision[0];
  EXPECT_NE(listener_.precision[2].find("widest half-width 0% at"), std::string::npos)
      << listener_.precision[2];
}

TEST_F(AdaptiveRunnerTest, StopsAtMaxAndSaysWhichPairingWasWidest) {
  agent_->spread = 0.2;  // +-20 % per trial: a 1 % half-width is out of reach in 4 blocks
  ASSERT_TRUE(Run("{min: 3, max: 4, ci_halfwidth: 1%}").ok());
  EXPECT_EQ(StoredTrials(), 12u);
  const std::string reason = StoredReason();
  EXPECT_EQ(reason.rfind("max reached (4) with widest half-width ", 0), 0u) << reason;
  EXPECT_NE(reason.find("% at pairing membw@"), std::string::npos) << reason;
  EXPECT_EQ(listener_.precision.size(), 2u);  // blocks 3 and 4
}

TEST_F(AdaptiveRunnerTest, CancelIsRecordedAsTheStopReason) {
  int cooldowns = 0;
  clock_.OnWait([&](double seconds) {
    if (seconds > 60 && ++cooldowns == 4) cancel_ = true;  // in block 2
  });
  Status s = Run("{min: 3, max: 10, ci_halfwidth: 2%}", "cooldown: 1h\n");
  EXPECT_EQ(s.error(), "cancelled");
  EXPECT_EQ(StoredTrials(), 4u);
  EXPECT_EQ(StoredReason(), "cancelled");
  EXPECT_EQ(listener_.stopped, std::vector<std::string>{"cancelled"});
}

TEST(BlockStopperTest, ABlockClosesWhereTheRepetitionChangesOrThePlanEnds) {
  std::vector<experiment::PlannedTrial> plan(5);
  for (int i = 0; i < 5; ++i) plan[i].repetition = i / 2;
  EXPECT_FALSE(BlockStopper::ClosesBlock(plan, 0));
  EXPECT_TRUE(BlockStopper::ClosesBlock(plan, 1));
  EXPECT_FALSE(BlockStopper::ClosesBlock(plan, 2));
  EXPECT_TRUE(BlockStopper::ClosesBlock(plan, 3));
  EXPECT_TRUE(BlockStopper::ClosesBlock(plan, 4));
}

}  // namespace
}  // namespace codl::controller
