// The co-tenant's own kernel (compute_kernels.cu, built by nvcc only when CUDA is found). Kept
// apart from mps_cotenant.cc so that file stays plain C++ against the runtime API.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace codl::injectors::gpu {

// Threads per block of the FMA kernel and the FLOP one thread does per loop iteration.
constexpr int kFmaThreads = 256;
constexpr int kFmaFlopPerIteration = 2 * 8;  // 8 independent FMA chains, 2 FLOP each

// Resident blocks per SM for the FMA kernel (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
cudaError_t FmaBlocksPerSm(int* blocks);

// Launches blocks × kFmaThreads threads, each running `iterations` loop iterations. `sink`
// (one float per thread, device memory) is written only on an impossible value: it keeps the
// compiler from deleting the loop without costing memory bandwidth.
cudaError_t LaunchFmaKernel(int blocks, int iterations, float* sink, cudaStream_t stream);

}  // namespace codl::injectors::gpu
