// Node telemetry's parsers on fixture text (well-formed, malformed, missing) and the sampler
// over a fixture /proc and /sys tree: deltas, shares, minimum, and reasons instead of zeros.
#include "agent/node_telemetry.h"

#include <stdlib.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace codl::agent {
namespace {

TEST(ParsePsiTotals, ReadsSomeAndFull) {
  const auto p = ParsePsiTotals(
      "some avg10=15.82 avg60=11.56 avg300=9.90 total=88737035\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n");
  EXPECT_EQ(p.some_us, 88737035u);
  EXPECT_EQ(p.full_us, 12u);
}

TEST(ParsePsiTotals, MissingOrMalformedLinesAreNullopt) {
  const auto only_some = ParsePsiTotals("some avg10=0.00 avg60=0.00 avg300=0.00 total=5");
  EXPECT_EQ(only_some.some_us, 5u);
  EXPECT_FALSE(only_some.full_us);  // older kernels: no full line for cpu
  for (const char* bad : {"", "\n\n", "some total=", "some total=12x", "some total=-3",
                          "full avg10=1 total=99999999999999999999999", "nonsense total=4",
                          "some\0total=3", "total=5 some"}) {
    const auto p = ParsePsiTotals(bad);
    EXPECT_FALSE(p.some_us) << bad;
    EXPECT_FALSE(p.full_us) << bad;
  }
}

constexpr const char* kDiskstats =
    "   7       0 loop0 10 0 80 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    " 254       0 vda 313007 10522 405527986 1154803 80849 28881 35489472 83157 0 69804 1241145\n"
    " 254       1 vda1 300 0 2400 10 20 0 160 5 0 10 15\n"
    " 253       0 zram0 5 0 40 0 5 0 40 0 0 0 0\n"
    " 259       0 nvme0n1 1 0 8 0 2 0 16 0 0 0 0\n"
    " 259       1 nvme0n1p1 1 0 8 0 2 0 16 0 0 0 0\n"
    "   8      17 sdb1 4 0 32 0 4 0 32 0 0 0 0\n"
    "   1       0 ram0 1 0 8 0 1 0 8 0 0 0 0\n"
    " 253       1 dm-0 7 0 56 0 9 0 72 0 0 0 0\n";

TEST(ParseDiskstats, ReadsEveryWellFormedLine) {
  const auto d = ParseDiskstats(kDiskstats);
  ASSERT_EQ(d.size(), 9u);
  EXPECT_EQ(d[1].name, "vda");
  EXPECT_EQ(d[1].major, 254u);
  EXPECT_EQ(d[1].reads, 313007u);
  EXPECT_EQ(d[1].sectors_read, 405527986u);
  EXPECT_EQ(d[1].writes, 80849u);
  EXPECT_EQ(d[1].sectors_written, 35489472u);
}

TEST(ParseDiskstats, SkipsMalformedLines) {
  const auto d = ParseDiskstats(
      "8 0 sda 1 2 3\n"                      // too short
      "8 0 sda x 0 8 0 1 0 8 0 0 0 0\n"      // not a number
      "8 0 sda 1 0 8 0 1 0\n"                // 9 fields
      "99999999999 0 sdz 1 0 8 0 1 0 8 0\n"  // major out of range
      "8 16 sdb 1 0 8 0 1 0 -8 0 0 0 0\n"    // negative
      "\n   \n"
      "8 32 sdc 1 0 8 0 1 0 8 0\n");  // the one good line
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "sdc");
  EXPECT_TRUE(ParseDiskstats("").empty());
}

TEST(IsCountedDisk, WholeDisksOnlyAndNoMemoryDevices) {
  std::set<std::string> all;
  for (const auto& d : ParseDiskstats(kDiskstats)) all.insert(d.name);
  EXPECT_TRUE(IsCountedDisk("vda", all));
  EXPECT_FALSE(IsCountedDisk("vda1", all));  // its disk is listed
  EXPECT_TRUE(IsCountedDisk("nvme0n1", all));
  EXPECT_FALSE(IsCountedDisk("nvme0n1p1", all));
  EXPECT_TRUE(IsCountedDisk("sdb1", all));  // sdb is not listed: the partition is all there is
  EXPECT_FALSE(IsCountedDisk("loop0", all));
  EXPECT_FALSE(IsCountedDisk("zram0", all));
  EXPECT_FALSE(IsCountedDisk("ram0", all));
  EXPECT_TRUE(IsCountedDisk("dm-0", all));
  EXPECT_FALSE(IsCountedDisk("mmcblk0p1", {"mmcblk0", "mmcblk0p1"}));
  EXPECT_TRUE(IsCountedDisk("mmcblk0", {"mmcblk0", "mmcblk0p1"}));
  EXPECT_TRUE(IsCountedDisk("123", {"123"}));
}

constexpr const char* kNetDev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo:    3267      29    0    0    0     0          0         0     3267      29    0    0 "
    "   0     0       0          0\n"
    "  eth0: 250067863    4627    0    0    0     0          0         0   174531    2397    0    "
    "0    0     0       0          0\n";

TEST(ParseNetDev, ReadsEveryInterfaceLoIncluded) {
  const auto n = ParseNetDev(kNetDev);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n.at("lo").rx, 3267u);
  EXPECT_EQ(n.at("lo").tx, 3267u);
  EXPECT_EQ(n.at("eth0").rx, 250067863u);
  EXPECT_EQ(n.at("eth0").tx, 174531u);
}

TEST(ParseNetDev, SkipsMalformedLines) {
  const auto n = ParseNetDev(
      "eth0: 1 2 3\n"                             // too short
      ": 1 2 3 4 5 6 7 8 9 10\n"                  // no name
      "eth1: a 0 0 0 0 0 0 0 5 0 0 0 0 0 0 0\n"   // not a number
      "eth2 1 0 0 0 0 0 0 0 5\n"                  // no colon
      "eth3:7 0 0 0 0 0 0 0 9 0 0 0 0 0 0 0\n");  // no space after the colon: still good
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n.at("eth3").rx, 7u);
  EXPECT_EQ(n.at("eth3").tx, 9u);
  EXPECT_TRUE(ParseNetDev("").empty());
}

TEST(ParseMeminfo, ReadsAvailableAndCachedInBytes) {
  const auto m = ParseMeminfo(
      "MemTotal:        8000000 kB\nMemFree:  100 kB\nMemAvailable:    4000000 kB\n"
      "Buffers:  10 kB\nCached:          2000000 kB\nSwapCached:  5 kB\n");
  EXPECT_EQ(m.available_bytes, 4000000ull * 1024);
  EXPECT_EQ(m.cached_bytes, 2000000ull * 1024);  // not SwapCached
}

TEST(ParseMeminfo, MalformedOrMissingFieldsAreNullopt) {
  EXPECT_FALSE(ParseMeminfo("").available_bytes);
  EXPECT_FALSE(ParseMeminfo("MemAvailable: abc kB").available_bytes);
  EXPECT_FALSE(ParseMeminfo("MemAvailable: 12 MB").available_bytes);
  EXPECT_FALSE(ParseMeminfo("MemAvailable: 99999999999999999999 kB").available_bytes);
  EXPECT_FALSE(ParseMeminfo("MemAvailable:").available_bytes);
  EXPECT_EQ(ParseMeminfo("Cached: 4").cached_bytes, 4u);  // no unit: bytes
}

TEST(PerfEventConfig, FillsTheFormatBits) {
  const std::map<std::string, std::string> f = {{"event", "config:0-7\n"},
                                                {"umask", "config:8-15\n"},
                                                {"edge", "config:18"},
                                                {"split", "config:0-3,32-35"},
                                                {"other", "config1:0-7"}};
  EXPECT_EQ(PerfEventConfig("event=0x04,umask=0x03\n", f), 0x0304u);
  EXPECT_EQ(PerfEventConfig("event=0xff,edge", f), 0xffu | 1u << 18);
  EXPECT_EQ(PerfEventConfig("split=0xab", f), 0xbull | 0xaull << 32);
  EXPECT_FALSE(PerfEventConfig("event=0x100", f));  // does not fit 8 bits
  EXPECT_FALSE(PerfEventConfig("nope=1", f));       // no such format
  EXPECT_FALSE(PerfEventConfig("other=1", f));      // config1: not used here
  EXPECT_FALSE(PerfEventConfig("event=zz", f));
  EXPECT_FALSE(PerfEventConfig("", f));
  EXPECT_FALSE(PerfEventConfig("event=1", {{"event", "config:9-3"}}));
  EXPECT_FALSE(PerfEventConfig("event=1", {{"event", "config:0-64"}}));
  EXPECT_FALSE(PerfEventConfig("event=1", {{"event", "garbage"}}));
}

// A fixture /proc and /sys under a temporary directory.
class SamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/codl-telemetry-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    src_.proc = root_ + "/proc";
    src_.sys = root_ + "/sys";
    src_.gpus = GpuSource{nullptr, "gpu: unavailable (fixture)"};
    std::filesystem::create_directories(src_.proc);
    std::filesystem::create_directories(src_.sys);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text;
  }
  void WriteProc(uint64_t cpu_some, uint64_t sectors_written, uint64_t eth_rx, uint64_t avail_kb) {
    Write("proc/pressure/cpu", "some avg10=0 avg60=0 avg300=0 total=" + std::to_string(cpu_some) +
                                   "\nfull avg10=0 avg60=0 avg300=0 total=0\n");
    Write("proc/pressure/io",
          "some avg10=0 avg60=0 avg300=0 total=100\n"
          "full avg10=0 avg60=0 avg300=0 total=100\n");
    Write("proc/pressure/memory", "garbage\n");
    Write("proc/diskstats", " 254 0 vda 10 0 80 0 5 0 " + std::to_string(sectors_written) +
                                " 0 0 0 0\n 254 1 vda1 10 0 80 0 5 0 " +
                                std::to_string(sectors_written) +
                                " 0 0 0 0\n"
                                "   7 0 loop0 1 0 8 0 1 0 8 0 0 0 0\n");
    Write("proc/net/dev", "Inter-| x\n face |bytes\n  eth0: " + std::to_string(eth_rx) +
                              " 0 0 0 0 0 0 0 50 0 0 0 0 0 0 0\n");
    Write("proc/meminfo", "MemAvailable: " + std::to_string(avail_kb) + " kB\nCached: 300 kB\n");
  }

  std::string root_;
  TelemetrySources src_;
};

TEST_F(SamplerTest, DeltasSharesAndTheLowestMemAvailable) {
  WriteProc(1000000, 100, 1000, 4000);
  NodeTelemetrySampler s(src_);
  s.Start(10.0);
  WriteProc(1000000 + 500000, 100 + 2048, 1000 + 4096, 1000);
  s.Tick(10.1);  // too soon after the start: not read
  s.Tick(10.3);  // reads 1000 kB
  WriteProc(1000000 + 500000, 100 + 2048, 1000 + 4096, 3000);
  const NodeTelemetry t = s.Finish(12.0);
  EXPECT_DOUBLE_EQ(t.window_s, 2.0);
  EXPECT_DOUBLE_EQ(t.psi_cpu_some, 0.25);  // 0.5 s stalled of 2 s
  EXPECT_DOUBLE_EQ(t.psi_cpu_full, 0.0);
  EXPECT_DOUBLE_EQ(t.psi_io_some, 0.0);
  EXPECT_TRUE(std::isnan(t.psi_memory_some));  // unreadable: not a zero
  EXPECT_NE(t.notes.find("PSI memory: unreadable"), std::string::npos) << t.notes;
  ASSERT_EQ(t.disks.size(), 1u);  // vda1 is in vda, loop0 is not a disk
  EXPECT_EQ(t.disks[0].device, "vda");
  EXPECT_EQ(t.disks[0].write_bytes, 2048 * 512);
  EXPECT_EQ(t.disks[0].writes, 0);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].interface, "eth0");
  EXPECT_EQ(t.nics[0].rx_bytes, 4096);
  EXPECT_EQ(t.nics[0].tx_bytes, 0);
  EXPECT_EQ(t.mem_available_start_bytes, 4000 * 1024);
  EXPECT_EQ(t.mem_available_end_bytes, 3000 * 1024);
  EXPECT_EQ(t.mem_available_min_bytes, 1000 * 1024);
  EXPECT_EQ(t.cached_start_bytes, 300 * 1024);
  EXPECT_TRUE(std::isnan(t.membw_bytes));
  EXPECT_EQ(t.membw_note,
            "memory bandwidth: unavailable (no resctrl MBM, no uncore_imc PMU and no amd_df PMU "
            "on this node)");
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, "gpu: unavailable (fixture)");
}

TEST_F(SamplerTest, ACounterThatWentBackwardsIsZeroNotHuge) {
  WriteProc(5000, 4096, 9000, 100);
  NodeTelemetrySampler s(src_);
  s.Start(0);
  WriteProc(10, 8, 1, 100);  // reset (a device re-added, a counter wrapped)
  const NodeTelemetry t = s.Finish(1);
  EXPECT_DOUBLE_EQ(t.psi_cpu_some, 0.0);
  ASSERT_EQ(t.disks.size(), 1u);
  EXPECT_EQ(t.disks[0].write_bytes, 0);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].rx_bytes, 0);
}

TEST_F(SamplerTest, MissingFilesAreSaidNeverZeros) {
  NodeTelemetrySampler s(src_);  // empty /proc and /sys
  s.Start(0);
  s.Tick(1);
  const NodeTelemetry t = s.Finish(2);
  EXPECT_TRUE(std::isnan(t.psi_cpu_some));
  EXPECT_TRUE(std::isnan(t.psi_io_full));
  EXPECT_TRUE(t.disks.empty());
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.mem_available_min_bytes, -1);
  EXPECT_EQ(t.cached_end_bytes, -1);
  EXPECT_NE(t.notes.find("PSI: unavailable"), std::string::npos) << t.notes;
  EXPECT_NE(t.notes.find("diskstats unreadable"), std::string::npos) << t.notes;
  EXPECT_NE(t.notes.find("net/dev unreadable"), std::string::npos) << t.notes;
  EXPECT_NE(t.notes.find("meminfo"), std::string::npos) << t.notes;
  EXPECT_TRUE(std::isnan(t.membw_bytes));
}

TEST_F(SamplerTest, FinishWithoutTimePassingHasNoShares) {
  WriteProc(1, 1, 1, 1);
  NodeTelemetrySampler s(src_);
  s.Start(5);
  const NodeTelemetry t = s.Finish(5);
  EXPECT_EQ(t.window_s, 0);
  EXPECT_TRUE(std::isnan(t.psi_cpu_some));
}

TEST_F(SamplerTest, ResctrlMbmIsSummedOverDomains) {
  WriteProc(1, 1, 1, 1);
  Write("sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "1000\n");
  Write("sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "500\n");
  NodeTelemetrySampler s(src_);
  s.Start(0);
  Write("sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "5000\n");
  Write("sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "1500\n");
  const NodeTelemetry t = s.Finish(1);
  EXPECT_DOUBLE_EQ(t.membw_bytes, 5000.0);
  EXPECT_EQ(t.membw_note.rfind("resctrl mbm_total_bytes", 0), 0u) << t.membw_note;
}

TEST_F(SamplerTest, ResctrlThatStopsReadingIsUnavailableNotZero) {
  WriteProc(1, 1, 1, 1);
  Write("sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "1000\n");
  NodeTelemetrySampler s(src_);
  s.Start(0);
  Write("sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "Unavailable\n");
  const NodeTelemetry t = s.Finish(1);
  EXPECT_TRUE(std::isnan(t.membw_bytes));
  EXPECT_EQ(t.membw_note.rfind("memory bandwidth: unavailable (", 0), 0u) << t.membw_note;
}

TEST_F(SamplerTest, AnUncorePmuThatCannotBeOpenedGivesTheReason) {
  WriteProc(1, 1, 1, 1);
  // A PMU type no kernel has: perf_event_open fails, whatever the privileges.
  Write("sys/bus/event_source/devices/uncore_imc_0/type", "987654\n");
  Write("sys/bus/event_source/devices/uncore_imc_0/cpumask", "0\n");
  Write("sys/bus/event_source/devices/uncore_imc_0/format/event", "config:0-7\n");
  Write("sys/bus/event_source/devices/uncore_imc_0/format/umask", "config:8-15\n");
  Write("sys/bus/event_source/devices/uncore_imc_0/events/cas_count_read",
        "event=0x04,umask=0x03\n");
  Write("sys/bus/event_source/devices/uncore_imc_0/events/cas_count_write",
        "event=0x04,umask=0x0c\n");
  NodeTelemetrySampler s(src_);
  s.Start(0);
  const NodeTelemetry t = s.Finish(1);
  EXPECT_TRUE(std::isnan(t.membw_bytes));
  EXPECT_EQ(t.membw_note.rfind("memory bandwidth: unavailable (perf_event_open on uncore_imc_0", 0),
            0u)
      << t.membw_note;
}

TEST_F(SamplerTest, AnAmdDfPmuThatCannotBeOpenedGivesTheReason) {
  WriteProc(1, 1, 1, 1);
  Write("proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\n\n");
  Write("sys/bus/event_source/devices/amd_df/type", "987654\n");
  Write("sys/bus/event_source/devices/amd_df/cpumask", "0,64\n");
  Write("sys/bus/event_source/devices/amd_df/format/event", "config:0-7,32-35\n");
  Write("sys/bus/event_source/devices/amd_df/format/umask", "config:8-15\n");
  NodeTelemetrySampler s(src_);
  s.Start(0);
  const NodeTelemetry t = s.Finish(1);
  EXPECT_TRUE(std::isnan(t.membw_bytes));
  EXPECT_EQ(t.membw_note.rfind(
                "memory bandwidth: unavailable (no uncore_imc PMU; perf_event_open on amd_df", 0),
            0u)
      << t.membw_note;
}

TEST_F(SamplerTest, AnAmdDfPmuOfAnUnknownCpuSaysWhichCpu) {
  WriteProc(1, 1, 1, 1);
  Write("proc/cpuinfo", "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n");
  Write("sys/bus/event_source/devices/amd_df/type", "11\n");
  NodeTelemetrySampler s(src_);
  s.Start(0);
  const NodeTelemetry t = s.Finish(1);
  EXPECT_TRUE(std::isnan(t.membw_bytes));
  EXPECT_EQ(t.membw_note,
            "memory bandwidth: unavailable (no resctrl MBM and no uncore_imc PMU; amd_df: its "
            "DRAM events are known to codl for Zen 2 and Zen 3 only, this CPU is family 0x19 "
            "model 0x11)");
}

TEST(AmdDfDramEvents, EightChannelsOnZen2AndZen3) {
  std::string why;
  const auto zen2 = AmdDfDramEvents(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\n", &why);
  ASSERT_EQ(zen2.size(), 8u) << why;
  EXPECT_EQ(zen2[0], "event=0x7,umask=0x38");
  EXPECT_EQ(zen2[4], "event=0x107,umask=0x38");
  EXPECT_EQ(zen2[7], "event=0x1c7,umask=0x38");
  // Zen 2's format puts the event's high bits at 32-35.
  const std::map<std::string, std::string> formats = {{"event", "config:0-7,32-35"},
                                                      {"umask", "config:8-15"}};
  EXPECT_EQ(PerfEventConfig(zen2[4], formats), 0x100003807ull);
  EXPECT_EQ(AmdDfDramEvents("vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 1\n", &why).size(),
            8u);  // Milan
  EXPECT_TRUE(
      AmdDfDramEvents("vendor_id : GenuineIntel\ncpu family : 6\nmodel : 85\n", &why).empty());
  EXPECT_EQ(why, "not an AMD CPU (vendor_id 'GenuineIntel')");
  EXPECT_TRUE(AmdDfDramEvents("vendor_id : AuthenticAMD\n", &why).empty());
  EXPECT_EQ(why, "cpuinfo has no cpu family or model");
}

// The sampler's own cost on this node's real /proc and /sys (docs/validity.md, "Node
// telemetry: cost"): not a test, run by hand with --gtest_also_run_disabled_tests.
TEST(NodeTelemetryCost, DISABLED_PrintsCpuPerWindowAndPerSecond) {
  auto cpu_s = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
  };
  constexpr int kWindows = 200;
  double t0 = cpu_s();
  for (int i = 0; i < kWindows; ++i) {
    NodeTelemetrySampler s;
    s.Start(0);
    (void)s.Finish(1);
  }
  const double per_window = (cpu_s() - t0) / kWindows;
  NodeTelemetrySampler s;
  s.Start(0);
  constexpr int kTicks = 2000;
  t0 = cpu_s();
  for (int i = 1; i <= kTicks; ++i) s.Tick(i * NodeTelemetrySampler::kMemSampleS);
  const double per_tick = (cpu_s() - t0) / kTicks;
  std::printf(
      "start+finish: %.3f ms CPU per window; Tick (every %.1f s): %.4f ms CPU each, "
      "%.4f %% of one core\n",
      per_window * 1e3, NodeTelemetrySampler::kMemSampleS, per_tick * 1e3,
      100 * per_tick / NodeTelemetrySampler::kMemSampleS);
}

}  // namespace
}  // namespace codl::agent
