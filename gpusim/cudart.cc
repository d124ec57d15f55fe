// The CUDA runtime API, as much of it as CoDL calls, on gpusim's runtime (runtime.h) and node
// model (node.h). Linked in place of cudart_static in a -DCODL_GPU_SIM=ON build; the code that
// calls it is the code that runs on a GPU. Also the entry points nvcc's host stubs call
// (registration, launch configuration, __cudaLaunchKernel): a registered kernel runs as its CPU
// analog (Kernels() below), which consumes modeled SM time.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gpusim/runtime.h"

using codl::gpusim::Allocation;
using codl::gpusim::Config;
using codl::gpusim::Node;
using codl::gpusim::Runtime;

namespace {

thread_local cudaError_t t_last = cudaSuccess;

// Every call's result passes here, as CUDA records it for cudaGetLastError.
cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess) t_last = e;
  return e;
}

cudaError_t CheckDevice(int device) {
  if (!Config().error.empty()) return cudaErrorInitializationError;
  if (!Runtime::Get().valid(device)) return cudaErrorInvalidDevice;
  return Runtime::Get().DeviceError(device);
}

// --- kernels: registered host stubs, and what each one does here --------------------------
struct Kernel {
  std::string name;  // mangled device name
};
struct LaunchConfig {
  dim3 grid, block;
  size_t shared = 0;
  cudaStream_t stream = nullptr;
};
std::mutex g_kernels_mu;
std::map<const void*, Kernel>& Kernels() {
  static auto* k = new std::map<const void*, Kernel>();
  return *k;
}
thread_local std::vector<LaunchConfig> t_configs;

uint64_t Threads(dim3 grid, dim3 block) {
  return static_cast<uint64_t>(grid.x) * grid.y * grid.z * block.x * block.y * block.z;
}

// The CPU analog of a kernel: its FLOP on the SMs (modeled time), and its effect on memory.
// Known: injectors/gpu/compute_kernels.cu's FmaKernel (2 x 8 FLOP per thread and iteration,
// writes nothing). An unknown kernel is an error, never silently skipped.
cudaError_t Launch(const void* host_fun, dim3 grid, dim3 block, void** args, cudaStream_t stream) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_kernels_mu);
    auto it = Kernels().find(host_fun);
    if (it == Kernels().end()) return cudaErrorInvalidDeviceFunction;
    name = it->second.name;
  }
  Runtime& rt = Runtime::Get();
  const int device = rt.current();
  if (cudaError_t e = CheckDevice(device); e != cudaSuccess) return e;
  if (block.x * block.y * block.z > 1024 || Threads(grid, block) == 0)
    return cudaErrorInvalidConfiguration;
  CUstream_st* s = rt.Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (name.find("FmaKernel") == std::string::npos) {
    std::fprintf(stderr, "gpusim: no CPU analog for kernel %s\n", name.c_str());
    return cudaErrorInvalidDeviceFunction;
  }
  const int iterations = *static_cast<const int*>(args[0]);
  const double flop = static_cast<double>(Threads(grid, block)) * iterations * 16.0;
  if (cudaError_t e = rt.Operate(device); e != cudaSuccess) return e;
  const double rate = rt.spec(device).fp32_flops;
  const float weight = rt.SmWeight();
  codl::gpusim::Trace("kernel %s on cuda:%d: %.3g FLOP at weight %.2f", name.c_str(), device, flop,
                      weight);
  rt.Enqueue(s, [device, flop, rate, weight] {
    const double took = Node::Get().Consume(device, codl::gpusim::kSm, flop, rate, weight, nullptr);
    codl::gpusim::Trace("kernel on cuda:%d done in %.6f s", device, took);
  });
  return cudaSuccess;
}

// --- copies ------------------------------------------------------------------------------
cudaError_t Copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, CUstream_st* s) {
  Runtime& rt = Runtime::Get();
  Allocation da, sa;
  const bool d_known = rt.Find(dst, n, &da), s_known = rt.Find(src, n, &sa);
  const bool d_dev = d_known && da.device >= 0, s_dev = s_known && sa.device >= 0;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      if (!d_dev || s_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToHost:
      if (!s_dev || d_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToDevice:
      if (!s_dev || !d_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyHostToHost:
      if (s_dev || d_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDefault: break;
    default: return cudaErrorInvalidMemcpyDirection;
  }
  int device = -1, resource = -1;
  double units = static_cast<double>(n), capacity = 0;
  int peer = -1;
  if (s_dev && d_dev && sa.device == da.device) {
    device = sa.device;
    resource = codl::gpusim::kHbm;
    units = 2.0 * static_cast<double>(n);  // read and written
    capacity = rt.spec(device).hbm_bps;
  } else if (s_dev && d_dev) {
    device = sa.device;
    peer = da.device;
    resource = codl::gpusim::kNvlink;
    capacity = rt.spec(device).nvlink_bps;
  } else if (d_dev) {
    device = da.device;
    resource = codl::gpusim::kPcieH2d;
    capacity = rt.spec(device).pcie_h2d_bps;
  } else if (s_dev) {
    device = sa.device;
    resource = codl::gpusim::kPcieD2h;
    capacity = rt.spec(device).pcie_d2h_bps;
  }
  if (device >= 0) {
    if (cudaError_t e = rt.Operate(device); e != cudaSuccess) return e;
    if (peer >= 0) {
      if (cudaError_t e = rt.DeviceError(peer); e != cudaSuccess) return e;
    }
  }
  codl::gpusim::Trace("copy %zu bytes on cuda:%d %s", n, device,
                      codl::gpusim::ResourceName(resource));
  auto* d = static_cast<char*>(dst);
  const auto* from = static_cast<const char*>(src);
  rt.Enqueue(s, [=] {
    auto step = [=](double a, double b) {
      const auto [lo, hi] = codl::gpusim::SliceOf(a, b, n);
      if (hi > lo) std::memmove(d + lo, from + lo, hi - lo);
    };
    if (device < 0) {
      step(0, 1);
      return;
    }
    Node& node = Node::Get();
    node.Consume(device, resource, units, capacity, 1.0f, step);
    if (peer >= 0 && node.ok()) node.shm()->dev[peer].nvlink_rx_bytes.fetch_add(n);
  });
  return cudaSuccess;
}

cudaError_t Memset(void* p, int value, size_t n, CUstream_st* s) {
  Runtime& rt = Runtime::Get();
  Allocation a;
  if (!rt.Find(p, n, &a) || a.device < 0) return cudaErrorInvalidValue;
  if (cudaError_t e = rt.Operate(a.device); e != cudaSuccess) return e;
  const double capacity = rt.spec(a.device).hbm_bps;
  const int device = a.device;
  auto* d = static_cast<unsigned char*>(p);
  rt.Enqueue(s, [=] {
    Node::Get().Consume(device, codl::gpusim::kHbm, static_cast<double>(n), capacity, 1.0f,
                        [=](double from, double to) {
                          const auto [lo, hi] = codl::gpusim::SliceOf(from, to, n);
                          if (hi > lo) std::memset(d + lo, value, hi - lo);
                        });
  });
  return cudaSuccess;
}

std::mutex g_peer_mu;
std::map<std::pair<int, int>, bool>& PeerEnabled() {
  static auto* m = new std::map<std::pair<int, int>, bool>();
  return *m;
}

}  // namespace

extern "C" {

// --- errors and versions -------------------------------------------------------------------
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unrecognized error code";
  }
}
const char* cudaGetErrorName(cudaError_t e) { return cudaGetErrorString(e); }

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  const int d = Runtime::Get().current();
  if (Runtime::Get().valid(d)) {
    if (cudaError_t sticky = Runtime::Get().DeviceError(d); sticky != cudaSuccess) return sticky;
  }
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return t_last; }
cudaError_t cudaDriverGetVersion(int* v) {
  return Ret(v ? (*v = 13000, cudaSuccess) : cudaErrorInvalidValue);
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  return Ret(v ? (*v = 13000, cudaSuccess) : cudaErrorInvalidValue);
}

// --- devices -------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Ret(cudaErrorInvalidValue);
  *count = 0;
  if (!Config().error.empty()) return Ret(cudaErrorInitializationError);
  *count = Runtime::Get().device_count();
  return *count == 0 ? Ret(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!Config().error.empty()) return Ret(cudaErrorInitializationError);
  if (!Runtime::Get().valid(device)) return Ret(cudaErrorInvalidDevice);
  Runtime::Get().set_current(device);
  return Ret(Runtime::Get().DeviceError(device));
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Ret(cudaErrorInvalidValue);
  *device = Runtime::Get().current();
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (p == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device); e != cudaSuccess && e != cudaErrorIllegalAddress)
    return Ret(e);
  const codl::gpusim::DeviceSpec& s = Runtime::Get().spec(device);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", s.name.c_str());
  p->totalGlobalMem = s.memory_bytes;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->major = s.cc_major;
  p->minor = s.cc_minor;
  p->multiProcessorCount = s.sms;
  p->maxThreadsPerMultiProcessor = 2048;
  p->pciBusID = 0x10 + device;
  p->unifiedAddressing = 1;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->memoryBusWidth = 5120;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device); e != cudaSuccess) return Ret(e);
  const codl::gpusim::DeviceSpec& s = Runtime::Get().spec(device);
  switch (attr) {
    case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; break;
    case cudaDevAttrMultiProcessorCount: *value = s.sms; break;
    case cudaDevAttrComputeCapabilityMajor: *value = s.cc_major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = s.cc_minor; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrPciBusId: *value = 0x10 + device; break;
    case cudaDevAttrPciDeviceId: *value = 0; break;
    case cudaDevAttrPciDomainId: *value = 0; break;
    default: return Ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* out, int len, int device) {
  if (out == nullptr || len <= 0) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device); e != cudaSuccess) return Ret(e);
  std::snprintf(out, static_cast<size_t>(len), "0000:%02x:00.0", 0x10 + device);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  Runtime& rt = Runtime::Get();
  const int d = rt.current();
  if (cudaError_t e = CheckDevice(d); e != cudaSuccess) return Ret(e);
  rt.SynchronizeDevice(d);
  return Ret(rt.DeviceError(d));
}

cudaError_t cudaDeviceReset(void) {
  Runtime& rt = Runtime::Get();
  const int d = rt.current();
  if (!rt.valid(d)) return Ret(cudaErrorInvalidDevice);
  rt.SynchronizeDevice(d);
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (can == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device); e != cudaSuccess) return Ret(e);
  if (cudaError_t e = CheckDevice(peer); e != cudaSuccess) return Ret(e);
  *can = device != peer && Runtime::Get().spec(device).nvlink_bps > 0 ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  Runtime& rt = Runtime::Get();
  const int d = rt.current();
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(peer); e != cudaSuccess) return Ret(e);
  if (peer == d) return Ret(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(g_peer_mu);
  bool& on = PeerEnabled()[{d, peer}];
  if (on) return Ret(cudaErrorPeerAccessAlreadyEnabled);
  on = true;
  return cudaSuccess;
}

// --- memory --------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (p == nullptr) return Ret(cudaErrorInvalidValue);
  const int d = Runtime::Get().current();
  if (cudaError_t e = CheckDevice(d); e != cudaSuccess) return Ret(e);
  cudaError_t e = cudaSuccess;
  *p = Runtime::Get().Allocate(d, bytes, &e);
  return Ret(e);
}

cudaError_t cudaFree(void* p) { return Ret(Runtime::Get().Free(p, /*host=*/false)); }

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  if (p == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = cudaSuccess;
  *p = Runtime::Get().Allocate(-1, bytes, &e);
  return Ret(e);
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }
cudaError_t cudaFreeHost(void* p) { return Ret(Runtime::Get().Free(p, /*host=*/true)); }

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (free_bytes == nullptr || total == nullptr) return Ret(cudaErrorInvalidValue);
  const int d = Runtime::Get().current();
  if (cudaError_t e = CheckDevice(d); e != cudaSuccess) return Ret(e);
  const uint64_t limit = Runtime::Get().spec(d).memory_bytes;
  const uint64_t used = Node::Get().MemoryUsed(d);
  *total = limit;
  *free_bytes = used >= limit ? 0 : limit - used;
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return Ret(cudaErrorInvalidValue);
  CUstream_st* s = Runtime::Get().Resolve(stream);
  if (s == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  return Ret(Copy(dst, src, n, kind, s));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (n == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return Ret(cudaErrorInvalidValue);
  CUstream_st* s = Runtime::Get().Resolve(nullptr);
  if (s == nullptr) return Ret(cudaErrorInvalidDevice);
  if (cudaError_t e = Copy(dst, src, n, kind, s); e != cudaSuccess) return Ret(e);
  Runtime::Get().Synchronize(s);
  return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                size_t n, cudaStream_t stream) {
  if (cudaError_t e = CheckDevice(dst_device); e != cudaSuccess) return Ret(e);
  if (cudaError_t e = CheckDevice(src_device); e != cudaSuccess) return Ret(e);
  Allocation da, sa;
  if (!Runtime::Get().Find(dst, n, &da) || da.device != dst_device ||
      !Runtime::Get().Find(src, n, &sa) || sa.device != src_device)
    return Ret(cudaErrorInvalidValue);
  return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CUstream_st* s = Runtime::Get().Resolve(stream);
  if (s == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  return Ret(Memset(p, value, n, s));
}

cudaError_t cudaMemset(void* p, int value, size_t n) {
  if (n == 0) return cudaSuccess;
  CUstream_st* s = Runtime::Get().Resolve(nullptr);
  if (s == nullptr) return Ret(cudaErrorInvalidDevice);
  if (cudaError_t e = Memset(p, value, n, s); e != cudaSuccess) return Ret(e);
  Runtime::Get().Synchronize(s);
  return cudaSuccess;
}

// --- streams and events ----------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return Ret(cudaErrorInvalidValue);
  const int d = Runtime::Get().current();
  if (cudaError_t e = CheckDevice(d); e != cudaSuccess) return Ret(e);
  *stream = Runtime::Get().CreateStream(d, flags);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  CUstream_st* s = Runtime::Get().Resolve(stream);
  if (s == nullptr || s->legacy_default) return Ret(cudaErrorInvalidResourceHandle);
  Runtime::Get().DestroyStream(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  CUstream_st* s = Runtime::Get().Resolve(stream);
  if (s == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  Runtime::Get().Synchronize(s);
  return Ret(Runtime::Get().DeviceError(s->device));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  CUstream_st* s = Runtime::Get().Resolve(stream);
  if (s == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = Runtime::Get().DeviceError(s->device); e != cudaSuccess) return Ret(e);
  return Runtime::Get().Idle(s) ? cudaSuccess : cudaErrorNotReady;  // NotReady is no error
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return Ret(cudaErrorInvalidValue);
  auto* e = new CUevent_st();
  e->state = std::make_shared<codl::gpusim::EventState>();
  e->state->timing = (flags & cudaEventDisableTiming) == 0;
  *event = e;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  delete event;  // a pending record keeps its state alive until it completes
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  CUstream_st* s = Runtime::Get().Resolve(stream);
  if (s == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  std::shared_ptr<codl::gpusim::EventState> st = event->state;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(st->mu);
    gen = ++st->recorded;
  }
  Runtime::Get().Enqueue(s, [st, gen] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::lock_guard<std::mutex> lock(st->mu);
    if (gen > st->completed) {
      st->completed = gen;
      st->time_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
    st->done.notify_all();
  });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(event->state->mu);
  return event->state->completed >= event->state->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  codl::gpusim::EventState& st = *event->state;
  std::unique_lock<std::mutex> lock(st.mu);
  st.done.wait(lock, [&st] { return st.completed >= st.recorded; });
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return Ret(cudaErrorInvalidValue);
  double t0, t1;
  {
    std::lock_guard<std::mutex> lock(start->state->mu);
    if (!start->state->timing) return Ret(cudaErrorInvalidResourceHandle);
    if (start->state->recorded == 0) return Ret(cudaErrorInvalidResourceHandle);
    if (start->state->completed < start->state->recorded) return cudaErrorNotReady;
    t0 = start->state->time_s;
  }
  {
    std::lock_guard<std::mutex> lock(end->state->mu);
    if (!end->state->timing) return Ret(cudaErrorInvalidResourceHandle);
    if (end->state->recorded == 0) return Ret(cudaErrorInvalidResourceHandle);
    if (end->state->completed < end->state->recorded) return cudaErrorNotReady;
    t1 = end->state->time_s;
  }
  *ms = static_cast<float>((t1 - t0) * 1e3);
  return cudaSuccess;
}

// --- kernels ---------------------------------------------------------------------------------
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                   int block_size, size_t,
                                                                   unsigned int) {
  if (blocks == nullptr || block_size <= 0 || block_size > 1024) return Ret(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> lock(g_kernels_mu);
    if (!Kernels().count(func)) return Ret(cudaErrorInvalidDeviceFunction);
  }
  // One resident block per SM: a launch sized "to fill the GPU" stays small enough for the
  // modeled FP32 rate (docs/gpu.md#gpusim), whatever the block size.
  *blocks = 1;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t,
                             cudaStream_t stream) {
  return Ret(Launch(func, grid, block, args, stream));
}

// nvcc's host stubs (crt/host_runtime.h): one fat binary per .cu, one registration per kernel.
void** __cudaRegisterFatBinary(void* fat) {
  static void* handle = nullptr;
  (void)fat;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int,
                            uint3*, uint3*, dim3*, dim3*, int*) {
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  Kernels()[host_fun] = Kernel{device_name};
}
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_fun) {
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  if (!Kernels().count(host_fun)) return cudaErrorInvalidDeviceFunction;
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(host_fun));
  return cudaSuccess;
}
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, cudaStream_t stream) {
  t_configs.push_back(LaunchConfig{grid, block, shared, stream});
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  if (t_configs.empty()) return cudaErrorInvalidConfiguration;
  const LaunchConfig c = t_configs.back();
  t_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t,
                               cudaStream_t stream) {
  return Ret(Launch(reinterpret_cast<const void*>(kernel), grid, block, args, stream));
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                    size_t shared, cudaStream_t stream) {
  return __cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}

}  // extern "C"
