// A transport failure deep inside a trial (the victim's agent cannot be reached) travels as
// UNAVAILABLE from the agent client through the trial, the runner, the scheduler, the store and
// the ExperimentStatus on the wire, so that codlctl exits 3 ("unreachable, safe to retry") and
// not 1. Fake agents, a real store and scheduler; no processes, no sockets.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "controller/agent_registry.h"
#include "controller/experiment_runner.h"
#include "controller/experiment_scheduler.h"
#include "lib/rpc/records_proto.h"
#include "lib/store/store.h"
#include "tests/controller/fake_agent.h"

namespace codl::cli {
namespace {

using controller::FakeAgent;

class UnreachableAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("codl-unreachable-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto s = store::Store::Open((dir_ / "r.db").string());
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(s.value());
    agent_ = std::make_shared<FakeAgent>();
    registry_ = std::make_unique<controller::AgentRegistry>(
        SystemClock::Get(), [this](const std::string&, const std::string&) { return agent_; }, 60);
    v1::AgentInfo info;
    info.set_agent_id("node-1");
    info.set_address("fake");
    ASSERT_TRUE(registry_->Register(info).ok());
    // No settle grace, so that the trials take no real time.
    runner_ = std::make_unique<controller::ExperimentRunner>(
        registry_.get(), store_.get(), SystemClock::Get(),
        controller::RunnerOptions{0.0, 0.9, 0.0, 0.0});
    scheduler_ = std::make_unique<controller::ExperimentScheduler>(
        store_.get(), runner_.get(), SystemClock::Get(), experiment::ParseHooks{});
  }
  void TearDown() override {
    scheduler_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  // Submits an experiment, watches it, starts the scheduler and waits for the final event;
  // returns that event's status as it arrives on the other side of the wire.
  v1::ExperimentStatus RunToEnd() {
    auto sub = scheduler_->Submit(
        "name: fake\n"
        "victim: {command: [victim], warmup_steps: 0}\n"
        "antagonists:\n"
        "  - {name: membw, injector: memcpy, levels: [0.5]}\n"
        "repetitions: 3\n"
        "warmup_trials: 0\n"
        "settle: 0s\n",
        "fake.yaml");
    EXPECT_TRUE(sub.ok()) << sub.error();
    if (!sub.ok()) return {};
    id_ = sub->id;
    std::promise<v1::ExperimentStatus> final_status;
    auto done = final_status.get_future();
    auto handle = scheduler_->Watch(id_, [&](const v1::ExperimentEvent& ev, bool final) {
      if (final) final_status.set_value(ev.status());
    });
    EXPECT_TRUE(handle.ok()) << handle.error();
    scheduler_->Start();  // after the watch: the final event cannot come before it
    EXPECT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    return OverTheWire(done.get());
  }

  static v1::ExperimentStatus OverTheWire(const v1::ExperimentStatus& s) {
    v1::ExperimentStatus back;
    EXPECT_TRUE(back.ParseFromString(s.SerializeAsString()));
    return back;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::shared_ptr<FakeAgent> agent_;
  std::unique_ptr<controller::AgentRegistry> registry_;
  std::unique_ptr<controller::ExperimentRunner> runner_;
  std::unique_ptr<controller::ExperimentScheduler> scheduler_;
  std::string id_;
};

TEST_F(UnreachableAgentTest, AnUnreachableVictimAgentInEveryTrialExitsThree) {
  agent_->unreachable_victim = true;
  // It still heartbeats: alive, its calls unreachable (a passing error, not a lost agent that
  // agent_grace would wait for), so the trials fail.
  std::atomic<bool> done{false};
  std::thread beats([&] {
    while (!done) {
      registry_->Heartbeat("node-1", 0.001, 0, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const v1::ExperimentStatus live = RunToEnd();
  done = true;
  beats.join();
  EXPECT_EQ(rpc::StateName(live), "failed");
  EXPECT_NE(live.error().find("the first 3 trials failed"), std::string::npos) << live.error();
  EXPECT_NE(live.error().find("failed to connect"), std::string::npos) << live.error();
  EXPECT_EQ(live.error_code(), static_cast<int>(grpc::StatusCode::UNAVAILABLE));
  EXPECT_EQ(ExitCodeFor(live), kExitUnreachable);

  // Read back after the run (from the store, as `codlctl status` or a late watch would).
  auto stored = scheduler_->GetStatus(id_);
  ASSERT_TRUE(stored.ok()) << stored.error();
  EXPECT_EQ(rpc::StateName(*stored), "failed");
  EXPECT_EQ(ExitCodeFor(OverTheWire(*stored)), kExitUnreachable);
  auto rec = store_->GetExperiment(id_);
  ASSERT_TRUE(rec.ok()) << rec.error();
  EXPECT_EQ(rec->error_code, StatusCode::kUnavailable);

  // The agent was reached for everything else: the antagonists were started and stopped.
  EXPECT_FALSE(agent_->ever_started.empty());
  EXPECT_TRUE(agent_->running.empty());
}

TEST_F(UnreachableAgentTest, AVictimThatFailsOnItsOwnIsARuntimeFailureNotThree) {
  agent_->fail_victim = true;  // the agent answers: the victim exited with status 3
  const v1::ExperimentStatus live = RunToEnd();
  EXPECT_EQ(rpc::StateName(live), "failed");
  EXPECT_EQ(ExitCodeFor(live), kExitFailed);
  auto stored = scheduler_->GetStatus(id_);
  ASSERT_TRUE(stored.ok()) << stored.error();
  EXPECT_EQ(ExitCodeFor(*stored), kExitFailed);
}

TEST_F(UnreachableAgentTest, ADoneExperimentExitsZero) {
  const v1::ExperimentStatus live = RunToEnd();
  EXPECT_EQ(rpc::StateName(live), "done") << live.error();
  EXPECT_EQ(live.error_code(), 0);
  EXPECT_EQ(ExitCodeFor(live), kExitOk);
}

TEST(ExitCodeForExperiment, AFailureWithoutACodeFromAnOlderControllerIsOne) {
  v1::ExperimentStatus s;
  s.set_state_name("failed");
  s.set_error("victim node node-1 stopped heartbeating");  // text alone decides nothing
  EXPECT_EQ(ExitCodeFor(s), kExitFailed);
  s.set_state_name("cancelled");
  EXPECT_EQ(ExitCodeFor(s), kExitFailed);
  s.set_state_name("failed");
  s.set_error_code(static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(ExitCodeFor(s), kExitBadInput);
}

}  // namespace
}  // namespace codl::cli
