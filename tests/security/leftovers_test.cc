// Security issue, items 5 and 6: a victim's grandchildren survived `kill -9` of the agent; the
// agent trusted its state dir (listed pids got SIGKILL; a symlinked temp file was followed).
// Real processes throughout.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/child_process.h"
#include "agent/leftovers.h"

namespace codl::agent {
namespace {

namespace fs = std::filesystem;

bool Alive(pid_t pid) {
  // A zombie counts as gone: read the state letter after the comm field.
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return false;
  auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && s[rp + 2] != 'Z';
}

bool WaitGone(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Alive(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return !Alive(pid);
}

class LeftoversTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/codl-sec-left.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    state_ = dir_ + "/state";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_, state_;
};

TEST_F(LeftoversTest, RestartKillsTheGrandchildrenOfADeadAgentsVictim) {
  // The "victim": a shell that starts a worker in its group, writes the worker's pid, waits.
  const std::string pidfile = dir_ + "/worker.pid";
  ChildProcess::Options o;
  o.argv = {"/bin/sh", "-c", "sleep 300 & echo $! > " + pidfile + "; wait"};
  auto victim = ChildProcess::Spawn(std::move(o));
  ASSERT_TRUE(victim.ok()) << victim.error();
  pid_t worker = 0;
  for (int i = 0; i < 1000 && worker == 0; ++i) {
    std::ifstream in(pidfile);
    in >> worker;
    if (worker == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(worker, 0);
  std::vector<ChildRecord> live;
  for (const auto& [pid, ticks] : LiveChildren()) live.push_back({pid, ticks, ""});
  ASSERT_EQ(live.size(), 1u) << "the victim is listed like any child";
  ASSERT_TRUE(WriteLeftovers(state_, live).ok());
  // The agent dies by SIGKILL: PDEATHSIG takes the shell, not its worker. Simulated by killing
  // the shell alone.
  kill((*victim)->pid(), SIGKILL);
  ASSERT_TRUE(WaitGone((*victim)->pid()));
  ASSERT_TRUE(Alive(worker)) << "the worker outlives its parent (the finding)";
  auto killed = KillLeftovers(state_);  // the restarted agent
  ASSERT_TRUE(killed.ok()) << killed.error();
  EXPECT_GE(*killed, 1);
  EXPECT_TRUE(WaitGone(worker)) << "the restarted agent killed the dead victim's worker";
}

TEST_F(LeftoversTest, PidsThatAreNotOurChildrenAreNeverKilled) {
  // A process the agent did not start, listed in the file (a tampered or stale state dir).
  pid_t other = fork();
  if (other == 0) {
    setpgid(0, 0);
    pause();
    _exit(0);
  }
  ASSERT_GT(other, 0);
  setpgid(other, other);  // also from here: the group must exist before the checks
  mkdir(state_.c_str(), 0700);
  // Wrong start time: a recycled pid.
  ASSERT_TRUE(WriteLeftovers(state_, {{other, ProcessStartTicks(other) + 7, ""}}).ok());
  EXPECT_EQ(KillLeftovers(state_).value(), 0);
  EXPECT_TRUE(Alive(other));
  // Right start time but another executable than recorded.
  ASSERT_TRUE(WriteLeftovers(state_, {{other, ProcessStartTicks(other), "/usr/bin/other"}}).ok());
  EXPECT_EQ(KillLeftovers(state_).value(), 0);
  EXPECT_TRUE(Alive(other));
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}

TEST_F(LeftoversTest, StateDirMustBePrivateAndTempFilesAreNotFollowed) {
  ASSERT_EQ(mkdir(state_.c_str(), 0777), 0);
  chmod(state_.c_str(), 0777);
  EXPECT_EQ(WriteLeftovers(state_, {}).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(KillLeftovers(state_).status().code(), StatusCode::kPermissionDenied);
  chmod(state_.c_str(), 0700);
  const std::string target = dir_ + "/precious";
  std::ofstream(target) << "keep";
  fs::create_symlink(target, state_ + "/children.tmp");
  ASSERT_TRUE(WriteLeftovers(state_, {}).ok());
  std::ifstream in(target);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "keep") << "the planted symlink was followed";
  EXPECT_FALSE(fs::is_symlink(state_ + "/children"));
}

}  // namespace
}  // namespace codl::agent
