// The CUDA device (cudaMemcpyAsync from pinned memory, cublasSgemm) and the NCCL communicator.
// Compiled as plain C++ against the CUDA runtime: no kernels of our own, so no nvcc needed.
// cudart is linked statically, so a box without a driver still starts codl-victim and falls
// back to the host device (cudaGetDeviceCount fails cleanly there).
#include "victim/device.h"

#ifdef CODL_VICTIM_HAVE_CUDA

#include <cuda_runtime.h>

// cuBLAS and NCCL are dlopen'ed, not linked, so codl-victim starts where they are missing.
#include "lib/gpu/cublas_loader.h"
#ifdef CODL_VICTIM_HAVE_NCCL
#include "lib/gpu/nccl_loader.h"
#endif

#include <set>

#include "victim/rng.h"

#define CODL_CUDA_TRY(expr)                                                                \
  do {                                                                                     \
    cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) return Err(std::string(#expr) + ": " + cudaGetErrorString(e_)); \
  } while (0)

namespace codl::victim {
namespace {

using gpu_loaders::Cublas;
#ifdef CODL_VICTIM_HAVE_NCCL
using gpu_loaders::Nccl;
#endif

class CudaDevice : public Device {
 public:
  CudaDevice(int ordinal, const DeviceConfig& c) : ordinal_(ordinal), config_(c) {}

  ~CudaDevice() override {
    cudaSetDevice(ordinal_);
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (handle_ != nullptr) Cublas().destroy(handle_);
    for (void* p : {staging_, a_, b_, c_, grads_}) {
      if (p != nullptr) cudaFree(p);
    }
    if (host_grads_ != nullptr) cudaFreeHost(host_grads_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Status Init() {
    CODL_CUDA_TRY(cudaSetDevice(ordinal_));
    cudaDeviceProp prop{};
    CODL_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal_));
    name_ = "cuda:" + std::to_string(ordinal_) + " (" + prop.name + ")";
    CODL_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (!Cublas().error.empty()) return Err(name_ + ": " + Cublas().error);
    if (Cublas().create(&handle_) != CUBLAS_STATUS_SUCCESS)
      return Err("cublasCreate failed on " + name_);
    Cublas().set_stream(handle_, stream_);
    if (config_.h2d_bytes > 0) CODL_CUDA_TRY(cudaMalloc(&staging_, config_.h2d_bytes));
    SplitMix64 rng(MixSeed(config_.seed, 0x6e6d));
    if (config_.gemm_dim > 0) {
      const size_t nn = static_cast<size_t>(config_.gemm_dim) * config_.gemm_dim;
      std::vector<float> host(nn);
      for (void** m : {&a_, &b_}) {
        for (float& x : host) x = rng.Symmetric();
        CODL_CUDA_TRY(cudaMalloc(m, nn * sizeof(float)));
        CODL_CUDA_TRY(cudaMemcpy(*m, host.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
      }
      CODL_CUDA_TRY(cudaMalloc(&c_, nn * sizeof(float)));
    }
    if (config_.grad_bytes > 0) {
      CODL_CUDA_TRY(cudaMalloc(&grads_, config_.grad_bytes));
      CODL_CUDA_TRY(cudaHostAlloc(&host_grads_, config_.grad_bytes, cudaHostAllocPortable));
      float* g = static_cast<float*>(host_grads_);
      for (size_t i = 0; i < config_.grad_bytes / sizeof(float); ++i) g[i] = rng.Symmetric();
      CODL_CUDA_TRY(cudaMemcpy(grads_, host_grads_, config_.grad_bytes, cudaMemcpyHostToDevice));
    }
    return Status::Ok();
  }

  std::string Name() const override { return name_; }
  std::string GemmEngine() const override { return "cublasSgemm"; }

  void* AllocHost(size_t bytes) override {
    void* p = nullptr;
    cudaSetDevice(ordinal_);
    if (cudaHostAlloc(&p, bytes == 0 ? 4096 : bytes, cudaHostAllocPortable) != cudaSuccess)
      return nullptr;
    return p;
  }
  void FreeHost(void* p) override { cudaFreeHost(p); }

  Status CopyToDevice(const void* src, size_t bytes) override {
    CODL_CUDA_TRY(cudaSetDevice(ordinal_));
    CODL_CUDA_TRY(cudaMemcpyAsync(staging_, src, std::min<size_t>(bytes, config_.h2d_bytes),
                                  cudaMemcpyHostToDevice, stream_));
    CODL_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  Status Gemm(int count) override {
    CODL_CUDA_TRY(cudaSetDevice(ordinal_));
    const int n = config_.gemm_dim;
    const float one = 1.0f, zero = 0.0f;
    for (int i = 0; i < count; ++i) {
      cublasStatus_t s = Cublas().sgemm(
          handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, static_cast<const float*>(a_), n,
          static_cast<const float*>(b_), n, &zero, static_cast<float*>(c_), n);
      if (s != CUBLAS_STATUS_SUCCESS)
        return Err(std::string("cublasSgemm: ") + Cublas().status_string(s));
    }
    CODL_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  float* HostGradients() override { return static_cast<float*>(host_grads_); }
  Status GradientsToHost() override {
    return CopyGradients(host_grads_, grads_, cudaMemcpyDeviceToHost);
  }
  Status GradientsFromHost() override {
    return CopyGradients(grads_, host_grads_, cudaMemcpyHostToDevice);
  }

  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  float* device_gradients() const { return static_cast<float*>(grads_); }

 private:
  Status CopyGradients(void* dst, const void* src, cudaMemcpyKind kind) {
    CODL_CUDA_TRY(cudaSetDevice(ordinal_));
    CODL_CUDA_TRY(cudaMemcpyAsync(dst, src, config_.grad_bytes, kind, stream_));
    CODL_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  int ordinal_;
  DeviceConfig config_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  void* staging_ = nullptr;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* c_ = nullptr;
  void* grads_ = nullptr;
  void* host_grads_ = nullptr;
};

#ifdef CODL_VICTIM_HAVE_NCCL
// One communicator per GPU, created together with ncclCommInitAll (single process, no MPI), and
// driven by each rank's own thread.
class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::vector<CudaDevice*> devices, size_t floats)
      : devices_(std::move(devices)), floats_(floats), comms_(devices_.size()) {}
  ~NcclCommunicator() override {
    for (ncclComm_t c : comms_) {
      if (c != nullptr) Nccl().CommDestroy(c);
    }
  }

  Status Init() {
    std::vector<int> ordinals;
    for (CudaDevice* d : devices_) ordinals.push_back(d->ordinal());
    if (!Nccl().error.empty()) return Err(Nccl().error);
    ncclResult_t r =
        Nccl().CommInitAll(comms_.data(), static_cast<int>(comms_.size()), ordinals.data());
    if (r != ncclSuccess) return Err(std::string("ncclCommInitAll: ") + Nccl().GetErrorString(r));
    return Status::Ok();
  }

  std::string Name() const override {
    return "nccl allreduce, " + std::to_string(devices_.size()) + " GPUs";
  }

  Status Allreduce(int rank) override {
    CudaDevice* d = devices_[static_cast<size_t>(rank)];
    CODL_CUDA_TRY(cudaSetDevice(d->ordinal()));
    ncclResult_t r =
        Nccl().AllReduce(d->device_gradients(), d->device_gradients(), floats_, ncclFloat, ncclAvg,
                         comms_[static_cast<size_t>(rank)], d->stream());
    if (r != ncclSuccess) return Err(std::string("ncclAllReduce: ") + Nccl().GetErrorString(r));
    CODL_CUDA_TRY(cudaStreamSynchronize(d->stream()));
    return Status::Ok();
  }

 private:
  std::vector<CudaDevice*> devices_;
  size_t floats_;
  std::vector<ncclComm_t> comms_;
};
#endif

}  // namespace

int CudaDeviceCount(std::string* note) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *note = std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return 0;
  }
  if (n == 0) *note = "no CUDA device";
  // The CUDA device computes with cuBLAS: without it, use the host (and say why).
  if (n > 0 && !Cublas().error.empty()) {
    *note = "CUDA device unusable: " + Cublas().error;
    return 0;
  }
  return n;
}

Result<std::unique_ptr<Device>> MakeCudaDevice(int ordinal, const DeviceConfig& config) {
  auto device = std::make_unique<CudaDevice>(ordinal, config);
  if (Status s = device->Init(); !s.ok()) return s;
  return std::unique_ptr<Device>(std::move(device));
}

Result<std::unique_ptr<Communicator>> MakeNcclCommunicator(const std::vector<Device*>& devices,
                                                           size_t floats) {
#ifdef CODL_VICTIM_HAVE_NCCL
  std::vector<CudaDevice*> cuda;
  std::set<int> ordinals;
  for (Device* d : devices) {
    auto* c = dynamic_cast<CudaDevice*>(d);
    if (c == nullptr) return Err("NCCL needs every rank on a CUDA device");
    if (!ordinals.insert(c->ordinal()).second) return Err("NCCL needs one GPU per rank");
    cuda.push_back(c);
  }
  auto comm = std::make_unique<NcclCommunicator>(std::move(cuda), floats);
  if (Status s = comm->Init(); !s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
#else
  return Err("built without NCCL");
#endif
}

}  // namespace codl::victim

#else  // !CODL_VICTIM_HAVE_CUDA

namespace codl::victim {

int CudaDeviceCount(std::string* note) {
  *note = "built without CUDA";
  return 0;
}

Result<std::unique_ptr<Device>> MakeCudaDevice(int, const DeviceConfig&) {
  return Err("--device cuda: this codl-victim was built without CUDA");
}

Result<std::unique_ptr<Communicator>> MakeNcclCommunicator(const std::vector<Device*>&, size_t) {
  return Err("built without NCCL");
}

}  // namespace codl::victim

#endif
