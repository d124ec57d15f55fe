// Where the training step's device work happens: the host-to-device copy, the GEMMs and the
// gradient buffer. Two implementations behind one interface: CUDA (cudaMemcpyAsync from pinned
// memory, cublasSgemm) and the host fallback (memcpy into a staging buffer, blocked sgemm), so the
// pipeline code is the same with and without a GPU. Every call returns when the work is done,
// which is what makes per-phase timing honest on an asynchronous device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::victim {

struct DeviceConfig {
  uint64_t h2d_bytes = 0;   // device staging buffer; 0 = no copies
  int gemm_dim = 0;         // 0 = no GEMM buffers
  int compute_threads = 1;  // host sgemm threads
  uint64_t grad_bytes = 0;  // gradient buffer for the allreduce; 0 = none
  uint64_t seed = 1;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string Name() const = 0;        // "cpu", "cuda:0 (NVIDIA H200)"
  virtual std::string GemmEngine() const = 0;  // "cublasSgemm", "cpu-sgemm x1 thread"
  // Host memory for batches: pinned on CUDA so the copy runs at full PCIe speed. Page-aligned.
  virtual void* AllocHost(size_t bytes) = 0;
  virtual void FreeHost(void* p) = 0;
  virtual Status CopyToDevice(const void* src, size_t bytes) = 0;
  virtual Status Gemm(int count) = 0;  // `count` GEMMs of gemm_dim
  // The gradients as host memory, for the host allreduce. Where they live on the device, the
  // two calls copy them down and back up (the Gloo-over-GPU path); on the host they do nothing.
  virtual float* HostGradients() = 0;
  virtual Status GradientsToHost() = 0;
  virtual Status GradientsFromHost() = 0;
};

// How many CUDA devices this process can use; `note` says why there are none ("built without
// CUDA", "no CUDA device: cudaGetDeviceCount: ...").
int CudaDeviceCount(std::string* note);

Result<std::unique_ptr<Device>> MakeHostDevice(const DeviceConfig& config);
Result<std::unique_ptr<Device>> MakeCudaDevice(int ordinal, const DeviceConfig& config);

// The per-step allreduce across ranks (threads of this process). Allreduce(rank) is called by
// every rank's thread; it returns on each once the sum has reached that rank (gradients are
// averaged, as data-parallel training does).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string Name() const = 0;
  virtual Status Allreduce(int rank) = 0;
};

// Shared-memory reduce-scatter + all-gather over Device::HostGradients().
std::unique_ptr<Communicator> MakeShmCommunicator(const std::vector<Device*>& devices,
                                                  size_t floats);
// NCCL across CUDA devices, one rank per GPU; an error when built without NCCL, when a device
// is not a CUDA device, or when two ranks share a GPU.
Result<std::unique_ptr<Communicator>> MakeNcclCommunicator(const std::vector<Device*>& devices,
                                                           size_t floats);

}  // namespace codl::victim
