// Node telemetry through the real controller and agent (embedded `codlctl run`): over the
// victim's window the agent counts what else happened on the node. An io_uring write flood's
// bytes appear in the scratch device's diskstats write delta, and a CPU hog beside the victim
// makes PSI's cpu "some" share positive. Skips, with the reason, where the scratch directory has
// no block device (tmpfs, overlay) or the kernel has no PSI.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

// The whole disk holding `dir` as /proc/diskstats names it ("vda" for /dev/vda1 too), or "" when
// it is on no block device (tmpfs, overlay, a network file system).
std::string WholeDiskOf(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || major(st.st_dev) == 0) return "";
  const std::string link =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::error_code ec;
  const std::string target = std::filesystem::read_symlink(link, ec).string();
  if (ec) return "";
  // .../block/vda or .../block/vda/vda1: the component after "/block/".
  const size_t at = target.rfind("/block/");
  if (at == std::string::npos) return "";
  const std::string rest = target.substr(at + 7);
  return rest.substr(0, rest.find('/'));
}

class TelemetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/codl-telemetry-it.XXXXXX";  // on the disk, not tmpfs
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }

  // Runs `antagonist` (one YAML flow mapping) beside a 3 s victim; returns the interfered
  // trial's --trials row and the summary's achieved rate of its antagonist.
  nlohmann::json RunBeside(const std::string& name, const std::string& antagonist,
                           double* achieved) {
    const std::string db = dir_ + "/" + name + ".db";
    WriteFile(dir_ + "/" + name + ".yaml",
              "name: telemetry-" + name +
                  "\nvictim: {command: [sleep, '3'], progress: {format: wall}, timeout: 30s}\n"
                  "antagonists:\n  - " +
                  antagonist + "\nrepetitions: 1\nwarmup_trials: 0\nsettle: 1s\n");
    auto r = RunCommand(
        {Bin("codlctl"), "run", dir_ + "/" + name + ".yaml", "--db", db, "--scratch-root", dir_},
        240, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto trials =
        RunCommand({Bin("codlctl"), "results", "latest", "--db", db, "--trials", "-o", "json"});
    EXPECT_EQ(trials.exit_code, 0) << trials.err;
    nlohmann::json interfered;
    std::istringstream lines(trials.out);
    for (std::string line; std::getline(lines, line);) {
      auto row = nlohmann::json::parse(line);
      EXPECT_FALSE(row["telemetry_window_s"].is_null()) << row.dump();
      if (row["role"] == "interfered") interfered = row;
    }
    auto summary = RunCommand({Bin("codlctl"), "results", "latest", "--db", db, "-o", "json"});
    EXPECT_EQ(summary.exit_code, 0) << summary.err;
    const nlohmann::json results = nlohmann::json::parse(summary.out);
    for (const auto& p : results["pairings"]) {
      if (p["baseline"].get<bool>()) continue;
      *achieved = p["antagonists"][0]["achieved_rate"].get<double>();
      EXPECT_TRUE(p.contains("telemetry")) << p.dump();
    }
    return interfered;
  }

  std::string dir_;
};

TEST_F(TelemetryTest, IoUringWritesShowInTheScratchDevicesDiskstats) {
  const std::string disk = WholeDiskOf(dir_);
  if (disk.empty()) GTEST_SKIP() << dir_ << " is on no block device (tmpfs or overlay?)";
  double achieved = 0;
  const nlohmann::json t = RunBeside(
      "disk",
      "{name: storage, injector: io_uring, options: {dir: " + dir_ +
          ", mode: write, block_size: 1MiB, queue_depth: 4, nr_files: 1, file_size: 64MiB}, "
          "rates: [40MiB/s]}",
      &achieved);
  ASSERT_FALSE(t.is_null());
  const auto disks = nlohmann::json::parse(t["disks"].get<std::string>());
  ASSERT_TRUE(disks.contains(disk)) << "no " << disk << " in " << t.dump();
  const double window = t["telemetry_window_s"].get<double>();
  const double written = disks[disk]["write_bytes"].get<double>();
  // O_DIRECT writes reach the device in the window: at least half of what the injector says it
  // wrote there (the rest of the node writes too, so only a lower bound).
  EXPECT_GT(achieved, 0);
  EXPECT_GE(written, 0.5 * achieved * window) << t.dump();
  EXPECT_GE(t["disk_write_bytes"].get<double>(), written) << t.dump();
  EXPECT_GT(disks[disk]["writes"].get<int64_t>(), 0) << t.dump();
  std::fprintf(stderr, "%s: %.1f MB written in %.2f s; the injector reported %.1f MB/s\n",
               disk.c_str(), written / 1e6, window, achieved / 1e6);
  // A VM with no uncore PMU says why, never a zero.
  if (t["membw_bytes"].is_null()) {
    EXPECT_EQ(t["membw_note"].get<std::string>().rfind("memory bandwidth: unavailable (", 0), 0u)
        << t.dump();
  }
  // A node without NVML says why, with no GPU figures (never zeros); one with it lists its GPUs.
  const std::string gpu_note = t["gpu_note"].get<std::string>();
  if (gpu_note.rfind("gpu: unavailable (", 0) == 0) {
    EXPECT_EQ(t["gpu_count"], 0) << t.dump();
    EXPECT_TRUE(t["gpu_util_max"].is_null()) << t.dump();
    EXPECT_TRUE(t["gpu_pcie_rx_bytes"].is_null()) << t.dump();
  } else {
    EXPECT_EQ(gpu_note.rfind("NVML", 0), 0u) << t.dump();
    EXPECT_GT(t["gpu_count"].get<int>(), 0) << t.dump();
  }
  std::fprintf(stderr, "gpu_note: %s\n", gpu_note.c_str());
}

TEST_F(TelemetryTest, ACpuHogShowsInPsiCpu) {
  if (access("/proc/pressure/cpu", R_OK) != 0)
    GTEST_SKIP() << "no /proc/pressure/cpu: this kernel has no PSI (CONFIG_PSI, psi=1)";
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double achieved = 0;
  // Twice as many spinning threads as CPUs: runnable tasks wait, which is what PSI cpu counts.
  const nlohmann::json t =
      RunBeside("cpu",
                "{name: hog, injector: cpu, options: {threads: " + std::to_string(2 * cpus) +
                    "}, levels: [max]}",
                &achieved);
  ASSERT_FALSE(t.is_null());
  ASSERT_FALSE(t["psi_cpu_some"].is_null()) << t.dump();
  EXPECT_GT(t["psi_cpu_some"].get<double>(), 0) << t.dump();
  EXPECT_LE(t["psi_cpu_some"].get<double>(), 1) << t.dump();
  std::fprintf(stderr, "PSI cpu some %.3f of the window beside %ld spinning threads\n",
               t["psi_cpu_some"].get<double>(), 2 * cpus);
}

}  // namespace
}  // namespace codl::testing
