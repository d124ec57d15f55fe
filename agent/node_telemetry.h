// Node telemetry over a victim's run window (docs/results.md, "Node telemetry"): PSI, disk and
// NIC counters, page cache and free memory, memory bandwidth where the node has counters for
// it, and its NVIDIA GPUs through NVML (gpu_telemetry.h). Counters are read at the window's start
// and end (deltas); MemAvailable also every 0.2 s in between, for its minimum. Everything read
// comes from files on disk: the parsers skip what they cannot read and never throw; what could not
// be read is said in `notes`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/gpu_telemetry.h"
#include "lib/common/records.h"

namespace codl::agent {

// One /proc/pressure/{cpu,io,memory} file: the `total=` stall time in microseconds of its
// `some` and `full` lines (nullopt: the line is absent or malformed; older kernels have no
// `full` line for cpu).
struct PsiTotals {
  std::optional<uint64_t> some_us;
  std::optional<uint64_t> full_us;
};
PsiTotals ParsePsiTotals(std::string_view text);

// One /proc/diskstats line (sectors are 512 bytes whatever the device's block size).
struct DiskstatsLine {
  unsigned major = 0;
  unsigned minor = 0;
  std::string name;
  uint64_t reads = 0;  // completed
  uint64_t sectors_read = 0;
  uint64_t writes = 0;
  uint64_t sectors_written = 0;
};
// Malformed lines (fewer than 10 fields, a field that is not a number) are skipped.
std::vector<DiskstatsLine> ParseDiskstats(std::string_view text);
// Whether a diskstats device is counted: not loop*, ram*, zram* (memory, not a disk), nor a
// partition whose whole disk is listed too (its I/O is in the disk's counters already): "sda1"
// of "sda", "nvme0n1p2" and "mmcblk0p1" of "nvme0n1" and "mmcblk0". `all` = every name listed.
bool IsCountedDisk(const std::string& name, const std::set<std::string>& all);

// /proc/net/dev: received and transmitted bytes per interface; malformed lines skipped.
struct NetDevBytes {
  uint64_t rx = 0;
  uint64_t tx = 0;
};
std::map<std::string, NetDevBytes> ParseNetDev(std::string_view text);

// /proc/meminfo's MemAvailable and Cached, in bytes (nullopt: absent or malformed).
struct MemInfoFields {
  std::optional<uint64_t> available_bytes;
  std::optional<uint64_t> cached_bytes;
};
MemInfoFields ParseMeminfo(std::string_view text);

// A perf event's config from its sysfs text ("event=0x04,umask=0x03") and the PMU's format
// files (name -> "config:0-7"); nullopt when a term or format is malformed, names a field
// other than `config`, or a value does not fit its bits.
std::optional<uint64_t> PerfEventConfig(std::string_view event,
                                        const std::map<std::string, std::string>& formats);

// Where the sampler reads from: the real /proc and /sys, or a fixture tree in tests.
struct TelemetrySources {
  std::string proc = "/proc";
  std::string sys = "/sys";
  // The GPUs' NVML; unset: the node's (NodeNvml(): libnvidia-ml.so.1, loaded once).
  std::optional<GpuSource> gpus;
};

// The memory-bandwidth events of an AMD CPU's Data Fabric PMU (amd_df), from /proc/cpuinfo's
// vendor, family and model: Zen 2 and Zen 3 count 64-byte DRAM requests per channel
// ("event=0x07,umask=0x38" ... 8 channels). Empty, with *why set, for other CPUs.
std::vector<std::string> AmdDfDramEvents(std::string_view cpuinfo, std::string* why);

// Samples one window. Start, then Tick as often as convenient (it reads MemAvailable at most
// every kMemSampleS), then Finish. Not thread-safe; cheap (a handful of small files per call).
class NodeTelemetrySampler {
 public:
  static constexpr double kMemSampleS = 0.2;

  explicit NodeTelemetrySampler(TelemetrySources sources = {});
  ~NodeTelemetrySampler();
  NodeTelemetrySampler(const NodeTelemetrySampler&) = delete;
  NodeTelemetrySampler& operator=(const NodeTelemetrySampler&) = delete;

  void Start(double now_s);
  void Tick(double now_s);
  // The deltas over [Start, Finish]; `node` is left empty (the controller names it).
  NodeTelemetry Finish(double now_s);

  // The memory-bandwidth counter in use (for tests and logs): its source, or the reason none
  // is, as NodeTelemetry::membw_note says it.
  class BandwidthCounter;

 private:
  struct Snapshot {
    PsiTotals psi[3];  // cpu, io, memory
    bool psi_read[3] = {false, false, false};
    std::vector<DiskstatsLine> disks;
    bool disks_read = false;
    std::map<std::string, NetDevBytes> nics;
    bool nics_read = false;
    MemInfoFields mem;
  };
  Snapshot Read() const;
  void SeeMemAvailable(const MemInfoFields& m);

  TelemetrySources sources_;
  Snapshot start_;
  double start_s_ = 0;
  double last_mem_s_ = 0;
  std::optional<uint64_t> mem_min_;
  std::unique_ptr<BandwidthCounter> membw_;
  std::optional<double> membw_start_;
  std::unique_ptr<GpuTelemetrySampler> gpu_;
};

}  // namespace codl::agent
