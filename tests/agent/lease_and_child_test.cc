#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "agent/child_process.h"
#include "agent/lease_monitor.h"

namespace codl::agent {
namespace {

TEST(LeaseMonitor, ExpiresOnlyAfterTheLeaseOfSilence) {
  FakeClock clock;
  LeaseMonitor lease(&clock);
  clock.Advance(9.9);
  EXPECT_FALSE(lease.Expired(10));
  clock.Advance(0.2);
  EXPECT_TRUE(lease.Expired(10));
  lease.Renew();
  EXPECT_FALSE(lease.Expired(10));
  EXPECT_NEAR(lease.SecondsSinceContact(), 0, 1e-9);
  clock.Advance(3);
  EXPECT_TRUE(lease.Expired(2.5));  // per-antagonist leases differ
  EXPECT_FALSE(lease.Expired(3.5));
}

TEST(ChildProcess, DeliversStdoutLinesKeepsStderrTailAndExitCode) {
  std::mutex mu;
  std::vector<std::string> lines;
  ChildProcess::Options o;
  o.argv = {"sh", "-c", "echo one; echo two; echo oops >&2; printf tail; exit 3"};
  o.on_stdout = [&](std::string_view l) {
    std::lock_guard<std::mutex> g(mu);
    lines.emplace_back(l);
  };
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE((*c)->WaitFor(10));
  EXPECT_EQ((*c)->exit_code(), 3);
  EXPECT_EQ((*c)->stderr_tail(), "oops\n");
  c->reset();
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "tail"}));
}

TEST(ChildProcess, EnvAndWorkdirApply) {
  std::string out;
  ChildProcess::Options o;
  o.argv = {"sh", "-c", "echo $CODL_X; pwd"};
  o.env = {{"CODL_X", "42"}};
  o.workdir = "/";
  o.on_stdout = [&](std::string_view l) { out += std::string(l) + "|"; };
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok());
  (*c)->WaitFor(10);
  c->reset();
  EXPECT_EQ(out, "42|/|");
}

TEST(ChildProcess, TerminateKillsTheWholeProcessGroup) {
  // Written by the child's reader thread, read here: under a lock (a TSan report otherwise).
  std::mutex mu;
  std::string grandchild_pid_line;
  auto grandchild_pid = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return grandchild_pid_line;
  };
  ChildProcess::Options o;
  // The shell starts a grandchild and waits; killing the group must take both.
  o.argv = {"sh", "-c", "sleep 60 & echo $!; wait"};
  o.on_stdout = [&](std::string_view l) {
    std::lock_guard<std::mutex> lock(mu);
    grandchild_pid_line = std::string(l);
  };
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 100 && grandchild_pid().empty(); ++i) usleep(20000);
  ASSERT_FALSE(grandchild_pid().empty());
  (*c)->Terminate(1.0);
  EXPECT_TRUE((*c)->exited());
  EXPECT_EQ((*c)->exit_code(), -SIGTERM);
  pid_t g = std::stoi(grandchild_pid());
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(g) + "/stat");
    std::string s;
    std::getline(stat, s);
    gone = s.empty() || s.find(") Z") != std::string::npos;
    if (!gone) usleep(20000);
  }
  EXPECT_TRUE(gone) << "grandchild " << g << " survived";
}

TEST(ChildProcess, UnknownCommandIsAClearError) {
  ChildProcess::Options o;
  o.argv = {"no-such-command-codl"};
  auto c = ChildProcess::Spawn(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("command 'no-such-command-codl' not found"), std::string::npos)
      << c.error();
}

TEST(ChildProcess, StartTicksIdentifyTheProcess) {
  ChildProcess::Options o;
  o.argv = {"sleep", "5"};
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok());
  EXPECT_GT((*c)->start_time_ticks(), 0u);
  EXPECT_EQ(ProcessStartTicks((*c)->pid()), (*c)->start_time_ticks());
  (*c)->Kill();
  EXPECT_TRUE((*c)->exited());
}

}  // namespace
}  // namespace codl::agent
