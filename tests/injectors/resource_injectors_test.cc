// Pure logic of the cpu, llc, pagecache and net injectors: CPU lists, compute kernels, cache
// topology from a fake sysfs, walk orders, /proc parsing, the memory back-off decisions, and
// the endpoint a net pair's receiver publishes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "injectors/cpu/cpu_kernels.h"
#include "injectors/cpu_list.h"
#include "injectors/llc/llc_topology.h"
#include "injectors/net/net_endpoint.h"
#include "injectors/net/net_rdma.h"
#include "injectors/pagecache/pagecache_memory.h"
#include "tests/injectors/test_util.h"

namespace codl::injectors {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

TEST(CpuListTest, ParsesListsAndRangesAndRefusesJunk) {
  std::vector<int> cpus;
  EXPECT_TRUE(ParseCpuList("none", &cpus));
  EXPECT_TRUE(cpus.empty());
  EXPECT_TRUE(ParseCpuList("0-2,5", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 5}));
  for (const char* bad : {"", "-1", "3-1", "1,", "a", "1-", "0-5000", "1x"}) {
    EXPECT_FALSE(ParseCpuList(bad, &cpus)) << bad;
  }
  EXPECT_TRUE(CheckCpuListOption("cpus", "0").ok());
  const Status busy = CheckCpuListOption("cpus", "4095");
  EXPECT_EQ(busy.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(busy.message(), "option 'cpus': CPU 4095 is not available to this process");
  EXPECT_THAT(CheckCpuListOption("cpus", "x").message(), HasSubstr("is not 'none' or a CPU list"));
}

TEST(CpuKernelTest, EveryMixIsDeterministicAndDependsOnItsInput) {
  for (const char* name : {"int", "float", "vector", "mixed"}) {
    CpuMix mix;
    ASSERT_TRUE(ParseCpuMix(name, &mix)) << name;
    EXPECT_EQ(RunCpuKernel(mix, 3000, 7), RunCpuKernel(mix, 3000, 7)) << name;
    // More iterations change the result: the work is a real chain, not folded away.
    EXPECT_NE(RunCpuKernel(mix, 3000, 7), RunCpuKernel(mix, 3, 7)) << name;
  }
  CpuMix mix;
  EXPECT_FALSE(ParseCpuMix("double", &mix));
  EXPECT_THAT(std::string(VectorKernelName()), ::testing::AnyOf("avx2+fma", "generic"));
}

TEST(LlcTopologyTest, ParsesSizesAndFindsTheLastLevel) {
  EXPECT_EQ(ParseCacheSize("48K"), 48u * 1024);
  EXPECT_EQ(ParseCacheSize("32M"), 32 * kMiB);
  EXPECT_EQ(ParseCacheSize("4096"), 4096u);
  EXPECT_EQ(ParseCacheSize("12Q"), 0u);
  EXPECT_EQ(ParseCacheSize(""), 0u);

  codl::testing::TempDir sys;
  auto write = [&](int index, const std::string& level, const std::string& type,
                   const std::string& size) {
    const std::string dir = sys.path() + "/cache/index" + std::to_string(index);
    fs::create_directories(dir);
    std::ofstream(dir + "/level") << level << "\n";
    std::ofstream(dir + "/type") << type << "\n";
    std::ofstream(dir + "/size") << size << "\n";
    std::ofstream(dir + "/coherency_line_size") << "64\n";
    std::ofstream(dir + "/shared_cpu_list") << "0-7\n";
  };
  write(0, "1", "Data", "32K");
  write(1, "1", "Instruction", "32K");
  write(2, "2", "Unified", "1024K");
  write(3, "3", "Unified", "16384K");
  const auto caches = ReadCacheTopology(sys.path());
  ASSERT_EQ(caches.size(), 4u);
  const CacheInfo* llc = LastLevelCache(caches);
  ASSERT_NE(llc, nullptr);
  EXPECT_EQ(llc->level, 3);
  EXPECT_EQ(llc->size, 16 * kMiB);
  EXPECT_EQ(llc->line_size, 64u);
  EXPECT_EQ(llc->shared_cpus, "0-7");
  EXPECT_EQ(LastLevelCache({}), nullptr);
  EXPECT_TRUE(ReadCacheTopology(sys.path() + "/nothing").empty());
}

TEST(LlcTopologyTest, RandomCycleVisitsEveryLineOnceInOneCycle) {
  for (size_t lines : {1u, 2u, 17u, 4096u}) {
    const auto next = RandomCycle(lines, 42);
    std::set<uint32_t> seen;
    uint32_t p = 0;
    for (size_t i = 0; i < lines; ++i) {
      EXPECT_TRUE(seen.insert(p).second) << "line " << p << " twice before the cycle closed";
      p = next[p];
    }
    EXPECT_EQ(p, 0u) << "not a single cycle of length " << lines;
    EXPECT_EQ(seen.size(), lines);
  }
  EXPECT_EQ(RandomCycle(1000, 1), RandomCycle(1000, 1));
  EXPECT_NE(RandomCycle(1000, 1), RandomCycle(1000, 2));
}

TEST(LlcTopologyTest, CoprimeStrideSweepsEveryLine) {
  for (size_t lines : {1u, 64u, 65u, 4160u, 6389760u}) {
    const size_t stride = CoprimeStride(lines, 65);
    EXPECT_GE(stride, 1u);
    if (lines > 65) {
      EXPECT_GE(stride, 65u) << lines;
    }
    if (lines > 100000) continue;
    std::set<size_t> seen;
    size_t p = 0;
    for (size_t i = 0; i < lines; ++i, p = (p + stride) % lines) seen.insert(p);
    EXPECT_EQ(seen.size(), lines) << "stride " << stride << " over " << lines;
  }
}

TEST(PagecacheMemoryTest, ParsesMeminfoAndPsi) {
  const MemInfo m = ParseMemInfo(
      "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n"
      "HugePages_Total:       0\n");
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.total, 24576000ULL * 1024);
  EXPECT_EQ(m.available, 20000000ULL * 1024);
  EXPECT_FALSE(ParseMemInfo("MemTotal: 1 kB\n").ok);  // pre-3.14 kernels: no MemAvailable

  EXPECT_DOUBLE_EQ(ParsePsiSomeAvg10("some avg10=12.50 avg60=1.00 avg300=0.00 total=5\n"
                                     "full avg10=3.00 avg60=0.00 avg300=0.00 total=1\n"),
                   12.5);
  EXPECT_EQ(ParsePsiSomeAvg10(""), -1);
  EXPECT_EQ(ParsePsiSomeAvg10("some total=5\n"), -1);

  EXPECT_EQ(DefaultFloor(4ULL << 30), 1ULL << 30);     // 10% of 4 GiB < 1 GiB
  EXPECT_EQ(DefaultFloor(100ULL << 30), 10ULL << 30);  // 10% of 100 GiB
}

MemoryPolicy Policy() {
  MemoryPolicy p;
  p.floor = 1024 * kMiB;
  p.psi_limit = 10;
  p.step = 64 * kMiB;
  p.granule = 4096;
  return p;
}

TEST(PagecacheMemoryTest, GrowsTowardsTheTargetByAtMostOneStep) {
  MemoryState s{0, 100 * kMiB, 8192 * kMiB, 0, false};
  MemoryDecision d = DecideMemoryStep(s, Policy());
  EXPECT_EQ(d.delta, static_cast<int64_t>(64 * kMiB));
  EXPECT_FALSE(d.backed_off);
  s.held = 64 * kMiB;
  EXPECT_EQ(DecideMemoryStep(s, Policy()).delta, static_cast<int64_t>(36 * kMiB));
  s.held = 100 * kMiB;
  EXPECT_EQ(DecideMemoryStep(s, Policy()).delta, 0);
  s.desired = 40 * kMiB;  // target lowered: shrink to it at once
  EXPECT_EQ(DecideMemoryStep(s, Policy()).delta, -static_cast<int64_t>(60 * kMiB));
}

TEST(PagecacheMemoryTest, NeverGrowsBelowTheFloorAndReleasesTheShortfall) {
  // 10 MiB of room above the floor: grow only that much, and say the floor held it back.
  MemoryState s{0, 100 * kMiB, 1034 * kMiB, -1, false};
  MemoryDecision d = DecideMemoryStep(s, Policy());
  EXPECT_EQ(d.delta, static_cast<int64_t>(10 * kMiB));
  EXPECT_TRUE(d.backed_off);
  EXPECT_EQ(d.reason, "floor");
  // 5 MiB (+ a bit) below the floor: release exactly the shortfall, rounded up to a page.
  s = {200 * kMiB, 200 * kMiB, 1019 * kMiB - 100, -1, false};
  d = DecideMemoryStep(s, Policy());
  EXPECT_EQ(d.delta, -static_cast<int64_t>(5 * kMiB + 4096));
  EXPECT_TRUE(d.backed_off);
  // Never releases more than is held.
  s = {kMiB, 200 * kMiB, 10 * kMiB, -1, false};
  EXPECT_EQ(DecideMemoryStep(s, Policy()).delta, -static_cast<int64_t>(kMiB));
}

TEST(PagecacheMemoryTest, PressureReleasesOneStepPerCooldownAndBlocksGrowth) {
  MemoryState s{500 * kMiB, 1000 * kMiB, 8192 * kMiB, 25.0, false};
  MemoryDecision d = DecideMemoryStep(s, Policy());
  EXPECT_EQ(d.delta, -static_cast<int64_t>(64 * kMiB));
  EXPECT_TRUE(d.backed_off);
  EXPECT_EQ(d.reason, "psi");
  s.psi_cooldown = true;  // PSI lags; no second release within the cooldown, and no growth
  d = DecideMemoryStep(s, Policy());
  EXPECT_EQ(d.delta, 0);
  EXPECT_TRUE(d.backed_off);
  MemoryPolicy ignore = Policy();
  ignore.psi_limit = 0;
  EXPECT_GT(DecideMemoryStep(s, ignore).delta, 0);
}

TEST(NetEndpointTest, RoundTripsAndRefusesJunk) {
  const NetEndpoint e{"0123456789abcdef0123456789abcdef", {"10.0.0.2:5001", "[fd00::2]:5001"}};
  const std::string text = EncodeNetEndpoint(e);
  EXPECT_EQ(text, "codl-net1 0123456789abcdef0123456789abcdef 10.0.0.2:5001 [fd00::2]:5001");
  auto back = DecodeNetEndpoint(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->token, e.token);
  EXPECT_EQ(back->addresses, e.addresses);
  const std::string shape = "not a net endpoint (expected 'codl-net1 <token> <host:port>...')";
  EXPECT_EQ(DecodeNetEndpoint("").error(), shape);
  EXPECT_EQ(DecodeNetEndpoint("codl-net2 0123456789abcdef0123456789abcdef a:1").error(), shape);
  EXPECT_EQ(DecodeNetEndpoint("codl-net1 0123456789abcdef0123456789abcdef").error(), shape);
  EXPECT_EQ(DecodeNetEndpoint("codl-net1 0123 a:1").error(),
            "net endpoint token must be 32 hex characters");
  EXPECT_EQ(DecodeNetEndpoint("codl-net1 0123456789abcdef0123456789abcdeX a:1").error(),
            "net endpoint token must be 32 hex characters");
}

TEST(NetEndpointTest, TokensAreFreshHex) {
  const std::string a = NewNetToken(), b = NewNetToken();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(DecodeNetEndpoint("codl-net1 " + a + " h:1").ok());
}

TEST(NetEndpointTest, ASpecificBindIsTheOnlyAddressAWildcardListsTheInterfaces) {
  EXPECT_EQ(ReachableAddresses("127.0.0.2", 80), std::vector<std::string>{"127.0.0.2:80"});
  EXPECT_EQ(ReachableAddresses("fd00::1", 80), std::vector<std::string>{"[fd00::1]:80"});
  // Every host has lo: it is listed, and last (an address the sender may share).
  const auto all = ReachableAddresses("0.0.0.0", 80);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back(), "127.0.0.1:80");
  for (const auto& a : all) EXPECT_EQ(a.find('['), std::string::npos) << "0.0.0.0 is IPv4 only";
}

TEST(NetRdmaTest, SaysWhyInOneLine) {
  const std::string s = RdmaStatus();
  EXPECT_EQ(s.rfind("RDMA: ", 0), 0u) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  if (!std::filesystem::exists("/sys/class/infiniband")) {
    EXPECT_THAT(s, HasSubstr("no device"));
  }
}

}  // namespace
}  // namespace codl::injectors
