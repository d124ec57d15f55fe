// Security issue 12: a victim that daemonizes a helper (double fork + setsid) used to leave it
// running after the experiment: it left the victim's process group, and init adopted it. With
// the agent as child subreaper (agent/subreaper.h) it is adopted by the agent, listed for the
// leftovers file, reaped, and killed with its victim. Real processes; this test binary is the
// subreaper, as codl-agent is.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "agent/child_process.h"
#include "agent/subreaper.h"
#include "agent/victim_runner.h"
#include "lib/common/clock.h"

namespace codl::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::steady_clock;

// The parent pid, or 0 once /proc/PID is gone (exited and reaped).
pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return 0;
  const size_t rp = s.rfind(')');
  char state = '?';
  pid_t ppid = 0;
  std::istringstream(s.substr(rp + 2)) >> state >> ppid;
  return ppid;
}

class SubreaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(EnableSubreaper().ok());
    char tmpl[] = "/tmp/codl-subreaper.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    pidfile_ = dir_ + "/sleeper.pid";
  }
  void TearDown() override {
    if (sleeper_ > 0 && ParentOf(sleeper_) != 0) kill(sleeper_, SIGKILL);
    fs::remove_all(dir_);
  }

  // sh: a subshell forks a `setsid sh` that records its pid and becomes a 300 s sleep, then the
  // subshell exits: the sleeper is an orphan in its own session, its stdio detached.
  std::string DaemonizingScript(const std::string& then) const {
    return "(setsid sh -c 'echo $$ > " + pidfile_ + ".tmp && mv " + pidfile_ + ".tmp " + pidfile_ +
           " && exec sleep 300' </dev/null >/dev/null 2>&1 &); " + then;
  }

  // Waits for the sleeper's pid and for the agent (this process) to have adopted it.
  ::testing::AssertionResult WaitAdopted() {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (steady_clock::now() < deadline) {
      std::ifstream in(pidfile_);
      if (in >> sleeper_ && ParentOf(sleeper_) == getpid()) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ::testing::AssertionFailure()
           << "sleeper " << sleeper_ << " not adopted; parent " << ParentOf(sleeper_);
  }

  // Gone and reaped: no /proc entry left (a zombie would still have one).
  ::testing::AssertionResult WaitGone() const {
    const auto deadline = steady_clock::now() + std::chrono::seconds(5);
    while (ParentOf(sleeper_) != 0) {
      if (steady_clock::now() > deadline) {
        return ::testing::AssertionFailure() << "sleeper " << sleeper_ << " still there";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ::testing::AssertionSuccess();
  }

  std::string dir_, pidfile_;
  pid_t sleeper_ = 0;
};

TEST_F(SubreaperTest, CancelledVictimTakesItsDaemonizedSleeperAlong) {
  experiment::VictimSpec v;
  v.command = {"sh", "-c", DaemonizingScript("exec sleep 300")};
  v.timeout_s = 60;
  VictimRunner runner(SystemClock::Get());
  std::atomic<bool> cancel{false};
  std::thread run([&] { runner.Run(v, &cancel); });
  ASSERT_TRUE(WaitAdopted());
  cancel = true;
  run.join();
  EXPECT_TRUE(WaitGone());
}

TEST_F(SubreaperTest, VictimThatEndsTakesItsDaemonizedSleeperAlong) {
  experiment::VictimSpec v;
  // The victim waits until the sleeper is adopted, then ends by itself, successfully.
  v.command = {"sh", "-c",
               DaemonizingScript("while [ ! -s " + pidfile_ + " ]; do sleep 0.05; done; sleep 1")};
  VictimRunner runner(SystemClock::Get());
  VictimOutcome out = runner.Run(v);
  EXPECT_EQ(out.exit_code, 0) << out.stderr_tail;
  std::ifstream(pidfile_) >> sleeper_;
  ASSERT_GT(sleeper_, 0);
  EXPECT_TRUE(WaitGone());
}

TEST_F(SubreaperTest, AdoptedSleeperIsListedForTheLeftoversFileWhileItsVictimRuns) {
  ChildProcess::Options o;
  o.argv = {"sh", "-c", DaemonizingScript("exec sleep 300")};
  auto child = ChildProcess::Spawn(std::move(o));
  ASSERT_TRUE(child.ok()) << child.error();
  ASSERT_TRUE(WaitAdopted());
  SweepOrphans();  // what the sweep thread does within 500 ms
  auto live = LiveChildren();
  EXPECT_TRUE(std::any_of(live.begin(), live.end(),
                          [&](const auto& c) { return c.first == sleeper_ && c.second > 0; }));
  EXPECT_EQ(SweepOrphans(), 0) << "its victim still runs: the sleeper is kept";
  (*child)->Kill();
  EXPECT_TRUE(WaitGone());
  child->reset();
  live = LiveChildren();
  EXPECT_TRUE(
      std::none_of(live.begin(), live.end(), [&](const auto& c) { return c.first == sleeper_; }));
}

TEST_F(SubreaperTest, OrphanOfAnEarlierAgentRunIsKilled) {
  // An orphan whose tag no live child carries (here: a previous agent's) is not kept.
  ChildProcess::Options o;
  o.argv = {"sh", "-c",
            std::string("export ") + kChildTagEnv + "=1.1; " + DaemonizingScript("exec sleep 300")};
  auto child = ChildProcess::Spawn(std::move(o));
  ASSERT_TRUE(child.ok()) << child.error();
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (sleeper_ == 0 && steady_clock::now() < deadline) {
    std::ifstream(pidfile_) >> sleeper_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(sleeper_, 0);
  EXPECT_TRUE(WaitGone()) << "the sweep thread kills it within a second";
  child->reset();
}

}  // namespace
}  // namespace codl::agent
