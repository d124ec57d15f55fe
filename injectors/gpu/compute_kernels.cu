#include "injectors/gpu/compute_kernels.h"

namespace codl::injectors::gpu {
namespace {

// Eight independent dependency chains hide the FMA pipeline latency (4 cycles) on every SM
// generation we target, so the kernel is bound by FMA issue rate, not by latency.
__global__ void FmaKernel(int iterations, float* sink) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = static_cast<float>(tid + j) * 1e-7f;
  const float a = 0.999999f, b = 1e-7f;  // keeps values finite forever
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) sum += x[j];
  if (sum == -1.0f) sink[tid] = sum;  // never true; the compiler cannot know
}

}  // namespace

cudaError_t FmaBlocksPerSm(int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, FmaKernel, kFmaThreads, 0);
}

cudaError_t LaunchFmaKernel(int blocks, int iterations, float* sink, cudaStream_t stream) {
  FmaKernel<<<blocks, kFmaThreads, 0, stream>>>(iterations, sink);
  return cudaGetLastError();
}

}  // namespace codl::injectors::gpu
