// The compute kernels of the `cpu` injector: dependent chains that keep one core's integer,
// scalar floating-point or SIMD units busy without touching memory beyond registers, so the
// pressure is on cores (and their power/frequency budget), not on caches or DRAM.
#pragma once

#include <cstdint>
#include <string>

namespace codl::injectors {

enum class CpuMix { kInt, kFloat, kVector, kMixed };

// "int", "float", "vector", "mixed"; false for anything else.
bool ParseCpuMix(const std::string& text, CpuMix* mix);

// Runs `iterations` of the mix (one iteration = one op in the `ops` rate; mixed = a third of
// each) and returns a value depending on every step, so the compiler cannot drop the work.
uint64_t RunCpuKernel(CpuMix mix, uint64_t iterations, uint64_t seed);

// Which SIMD flavour the vector kernel runs here: "avx2+fma" or "generic" (compiler vectors).
const char* VectorKernelName();

}  // namespace codl::injectors
