#include "injectors/gpu/gpu_info.h"

#include "injectors/gpu/gpu_host.h"
#include "injectors/gpu/gpu_probe.h"

#ifdef CODL_HAVE_NCCL
#include "lib/gpu/nccl_loader.h"
#endif

namespace codl::injectors {

std::map<std::string, std::string> DetectGpuLabels() {
  const gpu::GpuProbe& probe = gpu::ProbeGpus();
  const std::string reason = gpu::CudaUsable().message();  // "" when usable
  std::map<std::string, std::string> labels;
  const size_t count = reason.empty() ? probe.devices.size() : 0;
  labels["gpu_count"] = std::to_string(count);
  if (count > 0) {
    std::string names, memory;
    bool simulated = false;
    for (const auto& d : probe.devices) {
      names += (names.empty() ? "" : ",") + d.name;
      memory += (memory.empty() ? "" : ",") + std::to_string(d.memory_bytes);
      // No NVIDIA device has this name: the stand-in says what it is through the CUDA API.
      simulated = simulated || d.name.find("(gpusim)") != std::string::npos;
    }
    labels["gpu_names"] = names;
    labels["gpu_memory_bytes"] = memory;
    labels["gpu_device"] = simulated ? "simulated (gpusim)" : "hardware";
  } else {
    labels["gpu_unavailable_reason"] = reason;
  }
  if (probe.driver_version > 0) {
    labels["cuda_driver_version"] = gpu::CudaVersionString(probe.driver_version);
  }
  if (probe.runtime_version > 0) {
    labels["cuda_runtime_version"] = gpu::CudaVersionString(probe.runtime_version);
  }
#ifdef CODL_HAVE_NCCL
  // ncclGetVersion only returns the library's version code: no CUDA initialization.
  // NCCL is dlopen'ed (loaders/nccl_loader.h): without it the label is simply absent.
  const auto& nccl = gpu_loaders::Nccl();
  int v = 0;
  if (nccl.error.empty() && nccl.GetVersion(&v) == ncclSuccess && v > 0) {
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100.
    const int major = v >= 10000 ? v / 10000 : v / 1000;
    const int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
    const int patch = v % 100;
    labels["nccl_version"] =
        std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
#endif
  const bool mps = count > 0 && !gpu::FindOnPath("nvidia-cuda-mps-control").empty();
  labels["mps_available"] = mps ? "true" : "false";
  return labels;
}

}  // namespace codl::injectors
