// GPU telemetry over a victim's window (docs/results.md, "Node telemetry"): every NVIDIA GPU of
// the node through NVML (nvml_api.h). Utilization, memory in use, SM and memory clocks and the
// clock event (throttle) reasons are sampled every kSampleS; PCIe and NVLink bytes are
// cumulative counters read at the same times and summed as differences (a 32-bit counter's
// wrap between two samples is undone). Where NVML is absent there are no rows and a reason,
// never zeros.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/nvml_api.h"
#include "lib/common/records.h"

namespace codl::agent {

// An initialized NVML to sample from, or why there is none.
struct GpuSource {
  const NvmlApi* api = nullptr;  // nvmlInit'ed; nullptr: `note` says why there is none
  std::string note;              // "NVML, driver 550.54.15", or "gpu: unavailable (...)"
};

// The node's NVML: libnvidia-ml.so.1 loaded and nvmlInit'ed on the first call (the agent makes
// it as it starts: nvmlInit can take seconds, a trial should not pay it), kept for the process's
// life. Thread-safe.
const GpuSource& NodeNvml();

// NVML over an API table: nvmlInit, and the note saying which driver (or why it failed).
// `api` must outlive the returned source.
GpuSource InitNvml(const NvmlApi* api);

// Samples every GPU over one window. Start, Tick as often as convenient (it samples at most
// every kSampleS), then Finish. Not thread-safe.
class GpuTelemetrySampler {
 public:
  static constexpr double kSampleS = 0.2;

  explicit GpuTelemetrySampler(GpuSource source);

  void Start(double now_s);
  void Tick(double now_s);
  // Fills t->gpus (one row per GPU NVML lists) and t->gpu_note.
  void Finish(double now_s, NodeTelemetry* t);

 private:
  // A cumulative counter (PCIe or NVLink bytes) summed as differences between samples.
  struct Counter {
    bool ok = false;  // every read so far succeeded
    bool seen = false;
    uint64_t last = 0;
    int bits = 64;  // the value's width: a decrease is a wrap modulo 2^bits
    double sum = 0;
    std::string why;  // why it is unavailable
  };
  struct Device {
    unsigned int index = 0;
    nvml::Device handle = nullptr;
    GpuTelemetry out;
    double util_sum = 0, mem_util_sum = 0, sm_sum = 0, mem_clock_sum = 0;
    int util_n = 0, mem_util_n = 0, sm_n = 0, mem_clock_n = 0;
    uint64_t reasons = 0;
    bool reasons_read = false;
    Counter pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
  };
  void Sample(Device* d);
  void ReadCounters(Device* d);
  void Note(Device* d, const std::string& what) const;

  GpuSource source_;
  std::string note_;
  std::vector<Device> devices_;
  double last_s_ = 0;
};

}  // namespace codl::agent
