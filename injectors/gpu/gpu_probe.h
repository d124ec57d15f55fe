// What CUDA devices this host has, found WITHOUT initializing CUDA in the calling process.
//
// Why a forked child: Unsupported() runs in codl-agent (a long-lived daemon) and in every
// codl-inject before Setup. Initializing CUDA there would (a) leave a driver session in the
// daemon, and (b) make a later MPS co-tenant impossible, because a process connects to the MPS
// server when CUDA is first initialized and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is read when its
// context is created. So the probe runs cudaGetDeviceCount/cudaGetDeviceProperties in a child
// that reports over a pipe and exits; the result is cached for the process (one fork, ~ms
// without a GPU, one driver start with one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors::gpu {

struct GpuDeviceInfo {
  std::string name;
  uint64_t memory_bytes = 0;
  int compute_mode = 0;  // cudaComputeMode: 0 default, 2 prohibited, 3 exclusive-process
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::string pci_bus_id;  // "0000:17:00.0"
};

struct GpuProbe {
  bool built_with_cuda = false;
  int count_error = 0;           // cudaGetDeviceCount's cudaError_t (0 = success)
  std::string count_error_text;  // cudaGetErrorString of it
  int driver_version = 0;        // cudaDriverGetVersion, 0 when no driver
  int runtime_version = 0;       // cudaRuntimeGetVersion
  std::vector<GpuDeviceInfo> devices;
  std::string probe_error;  // the probe itself failed (fork, timeout, crash)
};

// Cached after the first call; thread-safe.
const GpuProbe& ProbeGpus();

// Ok when at least one CUDA device can be used, else FailedPrecondition saying why: "built
// without CUDA" or "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is
// detected)". The answer to a needs_gpu injector's Unsupported().
Status CudaUsable();

// Full path of `program` found on $PATH (executable), or "".
std::string FindOnPath(const std::string& program);

// Whether this process has initialized CUDA through the GPU injectors (mps_cotenant must be the
// first CUDA user of its process). Set by every injector before its first CUDA call.
void MarkCudaUsedHere();
bool CudaUsedHere();

}  // namespace codl::injectors::gpu
