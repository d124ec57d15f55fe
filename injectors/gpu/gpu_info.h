// GPU labels for agent registration (DESIGN.md "Control plane": agents register with GPUs and
// MPS availability). codl-inject prints them as the last line of `--list --json`
// ({"gpu_labels":{...}}), which is how the agent (linking no CUDA library) gets them. The CUDA
// part runs in a forked child (gpu_probe.h), so no caller keeps a CUDA context; it is cached.
#pragma once

#include <map>
#include <string>

namespace codl::injectors {

// Keys (values are strings, lists comma-separated in device order):
//   gpu_count            "2"                       always
//   gpu_names            "NVIDIA H200,NVIDIA H200" when gpu_count > 0
//   gpu_memory_bytes     "150754820096,..."        when gpu_count > 0
//   gpu_device           "hardware" | "simulated (gpusim)"   when gpu_count > 0: the devices
//                        are gpusim's CPU stand-in (docs/gpu.md#gpusim), whose names end in
//                        "(gpusim)"; every figure measured on them is the model's
//   cuda_driver_version  "13.0"                    when a driver answered
//   cuda_runtime_version "13.0"                    when built with CUDA
//   nccl_version         "2.28.9"                  when built with NCCL and libnccl.so.2 loads
//   mps_available        "true" | "false"          nvidia-cuda-mps-control on PATH and a device
//   gpu_unavailable_reason "built without CUDA" | "no CUDA device: ..."   when gpu_count is 0
std::map<std::string, std::string> DetectGpuLabels();

}  // namespace codl::injectors
