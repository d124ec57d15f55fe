// Baseline for cuda_memcpy --max: a bare cudaMemcpyAsync loop (one stream, pinned host memory)
// that never lets the stream drain: a ring of DEPTH events, and the host waits only for the
// oldest copy while DEPTH-1 stay queued. (Synchronizing after each batch, as a first version
// did, idled the copy engine once per batch: a baseline a few percent low makes the >= 0.97x
// goal of run_gpu_checks.sh meaningless.)
//   memcpy_baseline h2d|d2h|d2d SIZE_BYTES SECONDS [DEVICE] [DEPTH (default 32)]
// Prints one JSON line: {"direction":"h2d","size":67108864,"depth":32,"bytes_per_s":5.3e10}
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
    std::fprintf(stderr, "usage: %s h2d|d2h|d2d SIZE_BYTES SECONDS [DEVICE] [DEPTH]\n", argv[0]);
    return 2;
  }
  const char* dir = argv[1];
  const size_t size = std::strtoull(argv[2], nullptr, 10);
  const double seconds = std::atof(argv[3]);
  const int device = argc > 4 ? std::atoi(argv[4]) : 0;
  const int depth = argc > 5 ? std::atoi(argv[5]) : 32;
  if (depth < 2 || depth > 1024) {
    std::fprintf(stderr, "DEPTH must be 2..1024\n");
    return 2;
  }
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
  for (int i = 0; i < 4; ++i) CHECK(cudaMemcpyAsync(dst, src, size, kind, stream));  // warm-up
  CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t* ring = new cudaEvent_t[depth];
  for (int i = 0; i < depth; ++i) CHECK(cudaEventCreateWithFlags(&ring[i], cudaEventDisableTiming));
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  double elapsed = 0;
  unsigned long long issued = 0;
  while (elapsed < seconds) {
    const int slot = static_cast<int>(issued % depth);
    if (issued >= static_cast<unsigned long long>(depth)) CHECK(cudaEventSynchronize(ring[slot]));
    CHECK(cudaMemcpyAsync(dst, src, size, kind, stream));
    CHECK(cudaEventRecord(ring[slot], stream));
    ++issued;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  CHECK(cudaStreamSynchronize(stream));  // count only finished copies, over the time they took
  elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  const unsigned long long copies = issued;
  std::printf("{\"direction\":\"%s\",\"size\":%zu,\"depth\":%d,\"bytes_per_s\":%.6e}\n", dir, size,
              depth, static_cast<double>(copies) * static_cast<double>(size) / elapsed);
  for (int i = 0; i < depth; ++i) cudaEventDestroy(ring[i]);
  delete[] ring;
  cudaFreeHost(host);
  cudaFree(dev_a);
  cudaFree(dev_b);
  return 0;
}
