// Copy kernels for the memcpy injector, separate so tests can check they really copy.
#pragma once

#include <cstddef>
#include <vector>

namespace codl::injectors {

// dst/src 64-byte aligned, n a multiple of 128 (the injector copies 4 KiB-multiple chunks).
using CopyFn = void (*)(char* dst, const char* src, size_t n);

// std::memcpy: regular stores (a destination line is read for ownership before being written).
void CopyRegular(char* dst, const char* src, size_t n);

// A non-temporal (streaming-store) kernel and its name, the memcpy injector's `kernel` value.
struct StreamingKernelInfo {
  const char* name;
  CopyFn copy;
};

// The streaming kernels this CPU supports (checked at run time with __builtin_cpu_supports),
// in order of preference when nothing was measured; empty where there are none (non-x86):
//   "interleaved"  AVX: four pages at once, one line of each in turn (four DRAM streams)
//   "sequential"   AVX, else SSE2: one line after the next
// Which is faster depends on the CPU (docs/injectors.md, memcpy): the injector measures both.
std::vector<StreamingKernelInfo> StreamingKernels();

// The first of StreamingKernels(), or nullptr (then "on" is refused).
CopyFn StreamingKernel();

}  // namespace codl::injectors
