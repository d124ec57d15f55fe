// VictimIdentities (agent/victim_identities.h): one uid per experiment, host-wide locks, release
// kills what runs as the uid. Needs root (it switches a child to the uids it hands out).
#include "agent/victim_identities.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "lib/common/clock.h"
#include "lib/common/subprocess.h"

namespace codl::agent {
namespace {

class ManualClock : public Clock {
 public:
  double MonotonicSeconds() const override { return now; }
  int64_t UnixNanos() const override { return static_cast<int64_t>(now * 1e9); }
  bool WaitUntil(double, const std::atomic<bool>&) const override { return true; }
  double now = 100;
};

class VictimIdentitiesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the uids are handed to children";
    char tmpl[] = "/tmp/codl-uids.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<VictimIdentities> Open(UidRange r, double idle_s = 3600) {
    auto v = VictimIdentities::Open(r, dir_ + "/locks", &clock_, idle_s);
    EXPECT_TRUE(v.ok()) << v.error();
    return v.ok() ? std::move(*v) : nullptr;
  }
  std::string dir_;
  ManualClock clock_;
};

TEST_F(VictimIdentitiesTest, EachExperimentGetsItsOwnUidAndKeepsIt) {
  auto pool = Open({61100, 61103});
  ASSERT_TRUE(pool);
  auto a = pool->Acquire("exp-a"), b = pool->Acquire("exp-b"), a2 = pool->Acquire("exp-a");
  ASSERT_TRUE(a.ok() && b.ok() && a2.ok());
  EXPECT_NE(a->uid, b->uid);
  EXPECT_EQ(a->uid, a2->uid) << "one experiment keeps one uid for all its victims";
  EXPECT_EQ(a->gid, static_cast<gid_t>(a->uid));
  EXPECT_TRUE(a->groups.empty()) << "no supplementary groups";
  for (uid_t u : {a->uid, b->uid}) EXPECT_TRUE(u >= 61100 && u <= 61103);
  // Round robin: a released uid is not the next one handed out.
  pool->Done("exp-a");
  pool->Done("exp-a");
  EXPECT_EQ(pool->End("exp-a"), 0);
  auto c = pool->Acquire("exp-c");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->uid, a->uid);
  EXPECT_NE(c->uid, b->uid);
  EXPECT_EQ(pool->End("never-ran"), -1);
}

TEST_F(VictimIdentitiesTest, AnotherAgentOnTheHostNeverGetsAHeldUid) {
  auto first = Open({61110, 61111}), second = Open({61110, 61111});
  ASSERT_TRUE(first && second);
  auto a = first->Acquire("exp-a");
  auto b = second->Acquire("exp-b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->uid, b->uid) << "the flock on LOCK_DIR/UID is host-wide";
  auto c = second->Acquire("exp-c");
  ASSERT_FALSE(c.ok()) << "both uids are held by running experiments";
  EXPECT_EQ(c.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.error().find("all 2 uids of victim_uid_range 61110-61111"), std::string::npos)
      << c.error();
  first.reset();  // an agent that goes away frees its uids at once
  auto d = second->Acquire("exp-d");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->uid, a->uid);
}

TEST_F(VictimIdentitiesTest, AnIdleExperimentGivesItsUidBackWhenAnotherNeedsIt) {
  auto pool = Open({61120, 61120}, /*idle_s=*/600);
  ASSERT_TRUE(pool);
  ASSERT_TRUE(pool->Acquire("exp-a").ok());
  EXPECT_FALSE(pool->Acquire("exp-b").ok()) << "exp-a's victim still runs";
  pool->Done("exp-a");
  auto b = pool->Acquire("exp-b");  // the range is exhausted: the idle exp-a is released
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(pool->UidOf("exp-a"), 0u);
  pool->Done("exp-b");
  clock_.now += 601;  // and an experiment idle for idle_release_s goes at the next Acquire
  auto c = pool->Acquire("exp-c");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(pool->UidOf("exp-b"), 0u);
}

// The real uid of `pid` from /proc/PID/status, or -1.
long RealUid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) == 0) return std::strtol(line.c_str() + 4, nullptr, 10);
  }
  return -1;
}

TEST_F(VictimIdentitiesTest, ReleaseKillsWhatStillRunsAsTheUid) {
  auto pool = Open({61130, 61131});
  ASSERT_TRUE(pool);
  auto a = pool->Acquire("exp-a");
  ASSERT_TRUE(a.ok());
  SpawnOptions o;
  o.argv = {"/bin/sleep", "300"};
  o.run_as = *a;
  o.group = SpawnOptions::Group::kOwnSession;  // left its group: only the uid finds it
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.error();
  // Spawn returns after the fork: until the child has dropped to the uid it is still root's
  // (and the agent's to stop by its group, not by the uid). Wait for the drop, 10 s at most.
  for (int i = 0; i < 1000 && RealUid(p->pid()) != static_cast<long>(a->uid); ++i)
    usleep(10 * 1000);
  ASSERT_EQ(RealUid(p->pid()), static_cast<long>(a->uid));
  pool->Done("exp-a");
  EXPECT_EQ(pool->End("exp-a"), 1);
  const ExitStatus st = p->Wait();
  EXPECT_EQ(st.signal, SIGKILL);
}

}  // namespace
}  // namespace codl::agent
