// gpusim's process-side runtime: devices from the config, device and pinned memory (host memory,
// tracked), streams (a worker thread each, FIFO, CUDA's legacy default-stream ordering) and
// events. cudart.cc exposes it as the CUDA runtime API; the cuBLAS and NCCL stand-ins enqueue
// their work on its streams. Internal to gpusim.
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "gpusim/config.h"
#include "gpusim/node.h"

// The opaque handles of the CUDA headers, defined here (the driver defines them for real).
struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  bool legacy_default = false;
  std::mutex mu;
  std::condition_variable cv;    // work arrived, or quit
  std::condition_variable idle;  // the queue drained
  std::deque<std::function<void()>> queue;
  bool running = false;
  bool quit = false;
  std::thread worker;
};

namespace codl::gpusim {

struct EventState {
  std::mutex mu;
  std::condition_variable done;
  uint64_t recorded = 0, completed = 0;
  double time_s = 0;
  bool timing = true;
};

}  // namespace codl::gpusim

struct CUevent_st {
  std::shared_ptr<codl::gpusim::EventState> state;
};

namespace codl::gpusim {

// A block of memory the runtime handed out.
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  int device = -1;  // -1: pinned host memory
};

// CODL_GPUSIM_TRACE=1: one stderr line per modeled operation ("gpusim: kernel ... 1.2e9 FLOP").
void Trace(const char* format, ...) __attribute__((format(printf, 1, 2)));

class Runtime {
 public:
  static Runtime& Get();

  int device_count() const { return static_cast<int>(Config().devices.size()); }
  const DeviceSpec& spec(int device) const { return Config().devices[static_cast<size_t>(device)]; }
  bool valid(int device) const { return device >= 0 && device < device_count(); }

  // The calling thread's device (cudaSetDevice), 0 at first.
  int current() const;
  void set_current(int device);

  // Counts one operation on `device` and fires the config's faults; the device's error when it
  // has one (a sticky error, a lost device), else cudaSuccess.
  cudaError_t Operate(int device);
  cudaError_t DeviceError(int device) const;

  void* Allocate(int device, size_t bytes, cudaError_t* error);  // device = -1: pinned host
  cudaError_t Free(void* p, bool host);
  // The allocation holding [p, p+bytes), or nullptr.
  bool Find(const void* p, size_t bytes, Allocation* out) const;

  CUstream_st* Resolve(cudaStream_t s);  // 0, cudaStreamLegacy, cudaStreamPerThread: the default
  CUstream_st* CreateStream(int device, unsigned flags);
  void DestroyStream(CUstream_st* s);
  // Queues `work` on `s` (honouring the legacy default stream's ordering) and returns.
  void Enqueue(CUstream_st* s, std::function<void()> work);
  bool Idle(CUstream_st* s);
  void Synchronize(CUstream_st* s);
  void SynchronizeDevice(int device);

  // Weight of this process's kernels on the SMs: its MPS active-thread fraction when it joined
  // an MPS daemon (the stand-in, mps_control.cc) at start, else 1.
  float SmWeight() const;

 private:
  Runtime() = default;
  void JoinMps();
  int mps_percent_ = 0;  // 0: not an MPS client
  CUstream_st* DefaultStream(int device);
  std::vector<CUstream_st*> StreamsOf(int device);

  mutable std::mutex mu_;
  std::vector<Allocation> allocations_;  // few; searched linearly
  std::vector<CUstream_st*> streams_;
  std::vector<CUstream_st*> defaults_;
  std::vector<uint64_t> ops_;
  std::vector<cudaError_t> sticky_;
};

}  // namespace codl::gpusim
