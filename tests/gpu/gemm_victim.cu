// A tiny GPU victim for the MPS check: back-to-back cuBLAS SGEMMs for a fixed time, reported as
// TFLOP/s. Run it with CUDA_MPS_PIPE_DIRECTORY set to join the same MPS server as mps_cotenant.
//   gemm_victim SECONDS [N] [DEVICE]
// Prints one JSON line: {"n":4096,"gemms":812,"seconds":5.0,"tflops":19.4}
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SECONDS [N] [DEVICE]\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const int n = argc > 2 ? std::atoi(argv[2]) : 4096;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    std::fprintf(stderr, "cudaSetDevice: %s\n", cudaGetErrorString(e));
    return 1;
  }
  const size_t bytes = static_cast<size_t>(n) * n * sizeof(float);
  float *a, *b, *c;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
      cudaMalloc(&c, bytes) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(a, 0x3c, bytes);
  cudaMemset(b, 0x3c, bytes);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  const float alpha = 1, beta = 0;
  auto gemm = [&] {
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n);
  };
  for (int i = 0; i < 3; ++i) gemm();  // warm-up: heuristics, clocks
  cudaDeviceSynchronize();
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  double elapsed = 0;
  long gemms = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 4; ++i) {
      if (gemm() != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "cublasSgemm failed\n");
        return 1;
      }
    }
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
      std::fprintf(stderr, "cudaDeviceSynchronize: %s\n", cudaGetErrorString(e));
      return 1;
    }
    gemms += 4;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  const double tflops = 2.0 * n * n * static_cast<double>(n) * gemms / elapsed / 1e12;
  std::printf("{\"n\":%d,\"gemms\":%ld,\"seconds\":%.3f,\"tflops\":%.4f}\n", n, gemms, elapsed,
              tflops);
  cublasDestroy(h);
  return 0;
}
