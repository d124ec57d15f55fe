// gpusim's node description: how many simulated GPUs, what each one is, and the faults to
// inject. Read once per process from CODL_GPUSIM_CONFIG (a YAML or JSON file); without it, the
// documented default (Default(): 2 devices, "H100-like (gpusim)"). docs/gpu.md#gpusim.
//
// Rates are what the stand-in honours, not a real card's: bytes really move through host memory,
// so the defaults are figures one CPU core sustains (a real H100's PCIe is ~25x faster).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace codl::gpusim {

struct DeviceSpec {
  std::string name = "H100-like (gpusim)";
  int sms = 132;
  int cc_major = 9, cc_minor = 0;
  uint64_t memory_bytes = 80ull << 30;
  double hbm_bps = 6e9;       // device memory; a d2d copy of S bytes reads and writes: 2S of it
  double pcie_h2d_bps = 2e9;  // host to device
  double pcie_d2h_bps = 2e9;  // device to host
  double nvlink_bps = 3e9;    // to every peer, summed over links (NCCL and peer copies)
  int nvlink_links = 18;      // how NVML scopes the NVLink counters
  double fp32_flops = 2e9;    // the whole device's FP32 rate (kernels and sgemm)
  unsigned sm_clock_mhz = 1980, mem_clock_mhz = 2619;
};

// A fault the config injects: after `after_ops` runtime operations on `device` (copies,
// kernels, allocations), every later call on it fails.
struct FaultSpec {
  int device = 0;
  uint64_t after_ops = 0;
  std::string error;  // "sticky" (cudaErrorIllegalAddress, sticky), "lost" (GPU fell off the bus)
};

struct NodeConfig {
  std::vector<DeviceSpec> devices;
  std::vector<FaultSpec> faults;
  std::string source = "default";  // the file, or "default"
  std::string error;  // Config(): why CODL_GPUSIM_CONFIG could not be used (then no devices)
};

// The default: 2 x DeviceSpec{}.
NodeConfig DefaultConfig();

// Parses a config's text (YAML, so JSON too). Keys: count, device: {name, sms, compute_capability,
// memory_gib, hbm_gbps, pcie_h2d_gbps, pcie_d2h_gbps, nvlink_gbps, nvlink_links, fp32_gflops,
// sm_clock_mhz, mem_clock_mhz}, devices: [ {...}, ... ] (per device, overriding `device`),
// faults: [ {device, after_ops, error} ]. Unknown keys and out-of-range values are errors;
// on error returns false with *error naming the key.
bool ParseConfig(const std::string& text, const std::string& source, NodeConfig* out,
                 std::string* error);

// This process's config: CODL_GPUSIM_CONFIG if set, else DefaultConfig(). A file that cannot
// be used gives no devices and `error` (printed once to stderr): a test must not run on a node
// it did not ask for, and cudaGetDeviceCount then fails with cudaErrorInitializationError.
const NodeConfig& Config();

}  // namespace codl::gpusim
