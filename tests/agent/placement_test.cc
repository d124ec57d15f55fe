// Placement of the agent's children: the node-level check of cpus/numa (errors name the YAML
// location and the node's CPUs), the affinity fallback applied at spawn, the mode detection
// helpers, and per-child cgroups where a writable cgroup v2 hierarchy exists (skipped otherwise).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/cgroup.h"
#include "agent/child_process.h"
#include "agent/cpu_usage.h"
#include "agent/page_cache.h"
#include "agent/placement.h"
#include "lib/common/cpu_list.h"

namespace codl::agent {
namespace {

NodeCpus TwoNodeMachine() {
  NodeCpus n;
  n.cpus = {0, 1, 2, 3};
  n.numa = {{0, {0, 1}}, {1, {2, 3}}};
  return n;
}

experiment::PlacementSpec Spec(const std::string& cpus, int numa = -1) {
  experiment::PlacementSpec s;
  s.cpus = cpus;
  s.numa = numa;
  s.where = "e.yaml:4:3: victim";
  return s;
}

TEST(ResolvePlacement, CpusOutsideTheNodeNameTheYamlLocationAndTheNodesCpus) {
  auto r = ResolvePlacement(Spec("2-5"), TwoNodeMachine(), "gpu1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "e.yaml:4:3: victim: cpus 2-5: CPU 4,5 not available on node gpu1 (its CPUs: 0-3)");
}

TEST(ResolvePlacement, NumaRestrictsToTheNodesCpusAndCpusNarrowIt) {
  auto numa = ResolvePlacement(Spec("", 1), TwoNodeMachine(), "h");
  ASSERT_TRUE(numa.ok()) << numa.error();
  EXPECT_EQ(numa->cpus, (std::set<int>{2, 3}));
  EXPECT_EQ(numa->numa, 1);
  auto both = ResolvePlacement(Spec("1-3", 1), TwoNodeMachine(), "h");
  ASSERT_TRUE(both.ok()) << both.error();
  EXPECT_EQ(both->cpus, (std::set<int>{2, 3}));
  auto none = ResolvePlacement(Spec("0-1", 1), TwoNodeMachine(), "h");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(),
            "e.yaml:4:3: victim: numa 1 (CPUs 2,3) and cpus 0-1 leave no CPU to run on on node h "
            "(its CPUs: 0-3)");
}

TEST(ResolvePlacement, UnknownNumaNodeListsTheNodesNodes) {
  auto r = ResolvePlacement(Spec("", 7), TwoNodeMachine(), "h");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "e.yaml:4:3: victim: numa 7: no such NUMA node on node h (its NUMA nodes: 0,1)");
}

TEST(ResolvePlacement, EmptyPlacementIsUnrestricted) {
  auto r = ResolvePlacement(experiment::PlacementSpec{}, TwoNodeMachine(), "h");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cpus.empty());
  EXPECT_EQ(r->numa, -1);
}

TEST(NodeCpus, ThisMachineHasCpusAndNodeListsParse) {
  NodeCpus n = NodeCpus::Read();
  EXPECT_FALSE(n.cpus.empty());
  for (const auto& [id, cpus] : n.numa) EXPECT_GE(id, 0);
}

// The fallback mode: the child inherits the affinity set on the spawner thread at fork.
TEST(AffinityPlacement, ChildRunsOnlyOnTheRequestedCpuAndReportsIt) {
  const int cpu = *AffinityOf(0).rbegin();
  Placer placer(PlacementMode::kAffinity, "", NodeCpus::Read(), "here", "test");
  auto p = placer.Prepare(Spec(std::to_string(cpu)), "victim");
  ASSERT_TRUE(p.ok()) << p.error();
  std::string allowed;
  ChildProcess::Options o;
  o.argv = {"sh", "-c", "grep Cpus_allowed_list /proc/self/status"};
  o.placement = *p;
  o.on_stdout = [&](std::string_view l) { allowed = std::string(l); };
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE((*c)->WaitFor(10));
  EXPECT_EQ((*c)->effective_cpus(), std::to_string(cpu));
  c->reset();
  EXPECT_NE(allowed.find("\t" + std::to_string(cpu)), std::string::npos) << allowed;
  // The spawner thread got its own affinity back: the next child may run anywhere again.
  ChildProcess::Options free;
  free.argv = {"true"};
  auto d = ChildProcess::Spawn(free);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->effective_cpus(), codl::FormatCpuList(AffinityOf(0)));
}

TEST(AffinityPlacement, ARefusedPlacementStartsNothing) {
  Placer placer(PlacementMode::kAffinity, "", TwoNodeMachine(), "here", "test");
  auto p = placer.Prepare(Spec("9"), "victim");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().find("e.yaml:4:3: victim: cpus 9"), std::string::npos) << p.error();
}

TEST(CgroupDetection, ParsesMountinfoAndProcSelfCgroup) {
  const std::string hybrid =
      "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(CgroupV2Mount(hybrid), "/sys/fs/cgroup/unified");
  EXPECT_EQ(CgroupV2Mount("25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            "/sys/fs/cgroup");
  EXPECT_EQ(CgroupV2Mount("34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"), "");
  EXPECT_EQ(OwnCgroupV2Path("3:cpuset:/\n0::/system.slice/codl-agent.service\n"),
            "/system.slice/codl-agent.service");
  EXPECT_EQ(OwnCgroupV2Path("3:cpuset:/\n"), "");
  EXPECT_TRUE(HasController("cpuset cpu io memory\n", "cpu"));
  EXPECT_FALSE(HasController("cpuset io\n", "cpu"));
}

// A scratch cgroup v2 directory for the test, removed afterwards; empty (with the reason) when
// this host has no writable cgroup v2 hierarchy.
struct ScratchCgroup {
  std::string dir, why_not;
  ScratchCgroup() {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream text;
    text << in.rdbuf();
    const std::string mount = CgroupV2Mount(text.str());
    if (mount.empty()) {
      why_not = "no cgroup v2 mount";
      return;
    }
    const std::string d = mount + "/codl-test-" + std::to_string(getpid());
    if (mkdir(d.c_str(), 0755) != 0) {
      why_not = "cgroup v2 at " + mount + " is not writable";
      return;
    }
    if (access((d + "/cgroup.kill").c_str(), F_OK) != 0) {
      rmdir(d.c_str());
      why_not = "no cgroup.kill (kernel before 5.14)";
      return;
    }
    dir = d;
  }
  ~ScratchCgroup() {
    if (!dir.empty()) rmdir(dir.c_str());
  }
};

bool Gone(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line) || line.find(") Z ") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The cgroup-v2 path: the child joins its cgroup before exec, cpu.stat counts the whole tree and
// cleanup reaches a descendant that left the process group (setsid).
TEST(CgroupPlacement, CountsTheTreeAndKillsEscapedDescendants) {
  ScratchCgroup scratch;
  if (scratch.dir.empty()) GTEST_SKIP() << scratch.why_not;
  auto cg = Cgroup::Create(scratch.dir, "child");
  ASSERT_TRUE(cg.ok()) << cg.error();
  const std::string path = (*cg)->path();
  auto placement = std::make_shared<ChildPlacement>();
  placement->cgroup = std::move(*cg);
  std::string escaped;
  ChildProcess::Options o;
  // A busy descendant, and one in a session of its own (out of reach of the group signal).
  o.argv = {"sh", "-c",
            "setsid sleep 300 & echo $!; yes > /dev/null & y=$!; sleep 1; kill $y; wait $y; "
            "exec sleep 300"};
  o.placement = std::move(placement);  // the child is its only owner: it removes the cgroup
  o.on_stdout = [&](std::string_view l) { escaped = std::string(l); };
  auto c = ChildProcess::Spawn(std::move(o));
  ASSERT_TRUE(c.ok()) << c.error();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::ifstream procs(path + "/cgroup.procs");
  std::string first;
  ASSERT_TRUE(std::getline(procs, first)) << "the child is not in " << path;
  EXPECT_GT((*c)->cpu_seconds(), 0.05);  // the reaped `yes` (the shell alone: ~0.005 s)
  (*c)->Terminate(0.5);
  EXPECT_TRUE((*c)->exited());
  ASSERT_FALSE(escaped.empty());
  c->reset();  // removes the cgroup, killing what is left in it
  EXPECT_TRUE(Gone(std::stoi(escaped)));
  struct stat st {};
  EXPECT_NE(stat(path.c_str(), &st), 0) << path << " is still there";
}

// victim.cache cold where the memory controller is delegated: what a child read, charged to its
// cgroup, leaves the page cache on ReclaimMemory after the child is gone (the file is resident
// before, not after). Skipped where cgroup v2 has no memory controller (a hybrid host binds it
// to cgroup v1, as on the CI machines).
TEST(CgroupPlacement, ReclaimMemoryDropsThePageCacheAChildFilled) {
  ScratchCgroup scratch;
  if (scratch.dir.empty()) GTEST_SKIP() << scratch.why_not;
  std::ifstream controllers(scratch.dir + "/cgroup.controllers");
  std::string list((std::istreambuf_iterator<char>(controllers)), std::istreambuf_iterator<char>());
  if (!HasController(list, "memory")) {
    GTEST_SKIP() << "cgroup v2 at " << scratch.dir
                 << " has no memory controller (bound to cgroup v1 on a hybrid host)";
  }
  {
    std::ofstream ctl(scratch.dir + "/cgroup.subtree_control");
    ctl << "+memory";
  }
  char tmpl[] = "/var/tmp/codl-reclaim.XXXXXX";  // on the disk: tmpfs pages cannot be dropped
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, file = dir + "/data.bin";
  {
    std::ofstream out(file, std::ios::binary);
    const std::string block(1 << 20, 'r');
    for (int i = 0; i < 32; ++i) out.write(block.data(), block.size());
  }
  experiment::CacheSpec cold{"cold", {dir}}, as_is{"as-is", {dir}};
  ASSERT_TRUE(
      PrepareCache(cold, CacheScope{{dir}, std::nullopt, {}}).ok());  // starts out of the cache
  auto cg = Cgroup::Create(scratch.dir, "reader");
  ASSERT_TRUE(cg.ok()) << cg.error();
  auto placement = std::make_shared<ChildPlacement>();
  placement->cgroup = std::move(*cg);
  ChildProcess::Options o;
  o.argv = {"sh", "-c", "cat \"$0\" > /dev/null", file};
  o.placement = placement;
  auto c = ChildProcess::Spawn(std::move(o));
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE((*c)->WaitFor(30));
  c->reset();
  auto before = PrepareCache(as_is, CacheScope{{dir}, std::nullopt, {}});
  ASSERT_TRUE(before.ok()) << before.error();
  EXPECT_GT(before->resident_bytes, before->total_bytes * 9 / 10);
  auto freed = placement->cgroup->ReclaimMemory();
  ASSERT_TRUE(freed.ok()) << freed.error();
  EXPECT_GE(*freed, before->total_bytes * 9 / 10);
  auto after = PrepareCache(as_is, CacheScope{{dir}, std::nullopt, {}});
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_LT(after->resident_bytes, after->total_bytes / 10);
  placement.reset();
  std::remove(file.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace codl::agent
