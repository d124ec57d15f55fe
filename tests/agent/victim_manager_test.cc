// VictimManager (agent/victim_manager.h): the victim's lifecycle outside the RPC handler. A run
// publishes its steps to its trial's subscribers and counts its end; StopRunning cancels what
// runs now, CancelAll also what starts later; a common start time in the future is waited for,
// but never more than 5 s; an experiment without a uid never starts.
#include "agent/victim_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "lib/common/clock.h"

namespace codl::agent {
namespace {

experiment::VictimSpec ManagedShell(const std::string& script, double timeout_s = 60) {
  experiment::VictimSpec v;
  v.command = {"sh", "-c", script};
  v.timeout_s = timeout_s;
  return v;
}

VictimRequest ManagedRequest(experiment::VictimSpec spec, std::string trial = "") {
  VictimRequest r;
  r.spec = std::move(spec);
  r.experiment_id = "exp";
  r.trial_id = std::move(trial);
  return r;
}

const char* kManagedThreeSteps =
    "for t in 0.1 0.2 0.3; do echo \"{\\\"step_time_s\\\":$t}\" >&$CODL_PROGRESS_FD; done";

TEST(VictimManager, ARunPublishesItsStepsToItsTrialAndCountsItsEnd) {
  TelemetryHub hub;
  std::mutex mu;
  std::vector<double> seen;
  const int handle = hub.Subscribe("trial-1", [&](const v1::TelemetryEvent& ev) {
    std::lock_guard<std::mutex> l(mu);
    if (ev.has_victim_step()) seen.push_back(ev.victim_step().step_time_s());
  });
  VictimManager m(SystemClock::Get(), nullptr, {}, nullptr, nullptr, &hub);
  auto o = m.Run(ManagedRequest(ManagedShell(kManagedThreeSteps), "trial-1"));
  hub.Unsubscribe(handle);
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_TRUE(o->progress.ok) << o->progress.error;
  EXPECT_EQ(o->progress.steps.size(), 3u);
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(seen, (std::vector<double>{0.1, 0.2, 0.3}));
  }
  EXPECT_EQ(m.ok_count(), 1);
  auto bad = m.Run(ManagedRequest(ManagedShell("exit 3")));
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->progress.ok);
  EXPECT_EQ(m.failed_count(), 1);
}

TEST(VictimManager, StopRunningCancelsTheVictimsRunningNow) {
  VictimManager m(SystemClock::Get(), nullptr, {}, nullptr, nullptr, nullptr);
  Result<VictimOutcome> o = Err("not run");
  const auto t0 = std::chrono::steady_clock::now();
  std::thread runner([&] { o = m.Run(ManagedRequest(ManagedShell("sleep 30"))); });
  int stopped = 0;
  for (int i = 0; i < 200 && stopped == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stopped = m.StopRunning();
  }
  runner.join();
  EXPECT_EQ(stopped, 1);
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_FALSE(o->progress.ok);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(25));
  EXPECT_EQ(m.StopRunning(), 0);  // nothing left registered
}

TEST(VictimManager, AfterCancelAllEveryLaterVictimStartsCancelled) {
  VictimManager m(SystemClock::Get(), nullptr, {}, nullptr, nullptr, nullptr);
  m.CancelAll();
  const auto t0 = std::chrono::steady_clock::now();
  auto o = m.Run(ManagedRequest(ManagedShell("sleep 30")));
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_FALSE(o->progress.ok);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(25));
}

TEST(VictimManager, AStartTimeFarAheadIsWaitedForAtMostFiveSeconds) {
  VictimManager m(SystemClock::Get(), nullptr, {}, nullptr, nullptr, nullptr);
  VictimRequest r = ManagedRequest(ManagedShell(kManagedThreeSteps));
  r.start_at_unix_ns = SystemClock::Get()->UnixNanos() + 3600'000'000'000LL;  // an hour ahead
  const auto t0 = std::chrono::steady_clock::now();
  auto o = m.Run(std::move(r));
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_TRUE(o->progress.ok) << o->progress.error;
  EXPECT_GE(waited, std::chrono::milliseconds(4900));
  EXPECT_LT(waited, std::chrono::seconds(30));
}

}  // namespace
}  // namespace codl::agent
