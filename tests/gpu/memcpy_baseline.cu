// Baseline for cuda_memcpy --max: the plainest cudaMemcpyAsync loop (one stream, pinned host
// memory, batches of copies between synchronizations). run_gpu_checks.sh compares the injector's
// peak with this; the goal is >= 0.97x.
//   memcpy_baseline h2d|d2h|d2d SIZE_BYTES SECONDS [DEVICE]
// Prints one JSON line: {"direction":"h2d","size":67108864,"bytes_per_s":5.3e10}
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(expr)                                                    \
  do {                                                                 \
    cudaError_t e_ = (expr);                                           \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_)); \
      return 1;                                                        \
    }                                                                  \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s h2d|d2h|d2d SIZE_BYTES SECONDS [DEVICE]\n", argv[0]);
    return 2;
  }
  const char* dir = argv[1];
  const size_t size = std::strtoull(argv[2], nullptr, 10);
  const double seconds = std::atof(argv[3]);
  const int device = argc > 4 ? std::atoi(argv[4]) : 0;
  CHECK(cudaSetDevice(device));
  void *host = nullptr, *dev_a = nullptr, *dev_b = nullptr;
  CHECK(cudaHostAlloc(&host, size, cudaHostAllocPortable));
  std::memset(host, 0x5a, size);
  CHECK(cudaMalloc(&dev_a, size));
  CHECK(cudaMalloc(&dev_b, size));
  CHECK(cudaMemset(dev_a, 0x5a, size));
  void* dst;
  const void* src;
  cudaMemcpyKind kind;
  if (std::strcmp(dir, "h2d") == 0) {
    dst = dev_a, src = host, kind = cudaMemcpyHostToDevice;
  } else if (std::strcmp(dir, "d2h") == 0) {
    dst = host, src = dev_a, kind = cudaMemcpyDeviceToHost;
  } else if (std::strcmp(dir, "d2d") == 0) {
    dst = dev_b, src = dev_a, kind = cudaMemcpyDeviceToDevice;
  } else {
    std::fprintf(stderr, "unknown direction %s\n", dir);
    return 2;
  }
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kBatch = 16;
  for (int i = 0; i < 4; ++i) CHECK(cudaMemcpyAsync(dst, src, size, kind, stream));  // warm-up
  CHECK(cudaStreamSynchronize(stream));
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  double elapsed = 0;
  unsigned long long copies = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < kBatch; ++i) CHECK(cudaMemcpyAsync(dst, src, size, kind, stream));
    CHECK(cudaStreamSynchronize(stream));
    copies += kBatch;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::printf("{\"direction\":\"%s\",\"size\":%zu,\"bytes_per_s\":%.6e}\n", dir, size,
              static_cast<double>(copies) * static_cast<double>(size) / elapsed);
  cudaFreeHost(host);
  cudaFree(dev_a);
  cudaFree(dev_b);
  return 0;
}
