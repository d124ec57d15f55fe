// The guard of an agent child (agent/child_guard.h): what it kills once the agent is gone, and
// that a released guard kills nothing.
#include "agent/child_guard.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "agent/subreaper.h"
#include "lib/common/subprocess.h"

namespace codl::agent {
namespace {

// A process tagged like an agent child's descendant, in a session of its own (a daemon).
Subprocess Tagged(const std::string& tag) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "60"};
  o.env[kChildTagEnv] = tag;
  o.group = SpawnOptions::Group::kOwnSession;
  auto p = Subprocess::Spawn(o);
  EXPECT_TRUE(p.ok()) << p.error();
  return std::move(*p);
}

bool Ended(Subprocess& p) { return p.WaitFor(5).has_value(); }

// Until the spawned child has exec'd (before that its environment is still ours, untagged).
void AwaitExec(const Subprocess& p, const std::string& tag) {
  const std::string path = "/proc/" + std::to_string(p.pid()) + "/environ";
  for (int i = 0; i < 500; ++i) {
    std::ifstream f(path);
    std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (env.find(tag) != std::string::npos) return;
    usleep(10'000);
  }
  ADD_FAILURE() << "pid " << p.pid() << " never showed its tag";
}

TEST(ChildGuard, KillsEveryProcessCarryingTheTagAndNoOther) {
  const std::string tag = "guard-test." + std::to_string(getpid());
  Subprocess a = Tagged(tag), b = Tagged(tag), other = Tagged(tag + "0");
  for (const Subprocess* p : {&a, &b, &other}) AwaitExec(*p, tag);
  const std::string entry = std::string(kChildTagEnv) + "=" + tag;
  EXPECT_EQ(KillChildTree(-1, entry.c_str(), "", 1), 2);
  EXPECT_TRUE(Ended(a));
  EXPECT_TRUE(Ended(b));
  EXPECT_FALSE(other.WaitFor(0.3).has_value()) << "a longer tag is another child's";
  other.Signal(SIGKILL);
  other.Wait();
}

TEST(ChildGuard, AReleasedGuardKillsNothing) {
  const std::string tag = "guard-release." + std::to_string(getpid());
  Subprocess child = Tagged(tag);
  std::unique_lock<std::mutex> forks = LockForks();
  auto guard = ChildGuard::Start(child.pid(), tag, "");
  forks.unlock();
  ASSERT_TRUE(guard.ok()) << guard.error();
  const pid_t gpid = guard->pid();
  guard->Release();
  EXPECT_NE(kill(gpid, 0), 0) << "the guard was reaped";
  EXPECT_FALSE(child.WaitFor(0.3).has_value()) << "a released guard killed the child";
  child.Signal(SIGKILL);
  child.Wait();
}

// The agent's end of the pipe closed without the byte (what the kernel does when the agent
// dies): the guard kills the tree. Emulated by a guard whose pipe end is closed here unwritten.
TEST(ChildGuard, EndOfFileWithoutTheByteKillsTheTree) {
  const std::string tag = "guard-eof." + std::to_string(getpid());
  Subprocess child = Tagged(tag);
  AwaitExec(child, tag);
  std::unique_lock<std::mutex> forks = LockForks();
  auto guard = ChildGuard::Start(child.pid(), tag, "");
  forks.unlock();
  ASSERT_TRUE(guard.ok()) << guard.error();
  guard->CloseWithoutRelease();
  EXPECT_TRUE(Ended(child));
}

}  // namespace
}  // namespace codl::agent
