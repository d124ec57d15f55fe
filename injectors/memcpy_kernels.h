// Copy kernels for the memcpy injector, separate so tests can check they really copy.
#pragma once

#include <cstddef>

namespace codl::injectors {

// dst/src 64-byte aligned, n a multiple of 128 (the injector copies 4 KiB-multiple chunks).
using CopyFn = void (*)(char* dst, const char* src, size_t n);

// std::memcpy: regular stores (a destination line is read for ownership before being written).
void CopyRegular(char* dst, const char* src, size_t n);

// The best non-temporal (streaming-store) kernel this CPU supports, chosen at run time with
// __builtin_cpu_supports (AVX, else SSE2); nullptr where there is none (non-x86).
CopyFn StreamingKernel();

}  // namespace codl::injectors
