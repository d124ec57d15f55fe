#include "injectors/cpu/cpu_kernels.h"

#include <cstring>

namespace codl::injectors {
namespace {

// Four independent chains per kernel: enough instruction-level parallelism to fill the
// execution ports the way real compute does, still impossible to fold into a closed form.
uint64_t IntKernel(uint64_t n, uint64_t seed) {
  uint64_t a = seed | 1, b = seed ^ 0x9e3779b97f4a7c15ULL, c = seed + 7, d = ~seed;
  for (uint64_t i = 0; i < n; ++i) {
    a = a * 6364136223846793005ULL + 1442695040888963407ULL;
    b ^= b >> 13;
    b *= 0xff51afd7ed558ccdULL;
    c = (c << 7 | c >> 57) + a;
    d += b ^ c;
  }
  return a ^ b ^ c ^ d;
}

// a ← a·m + k converges to k/(1−m) ≈ 1000: no overflow, no denormals, no fast-math folding.
uint64_t FloatKernel(uint64_t n, uint64_t seed) {
  double a = 1.0 + static_cast<double>(seed & 0xff), b = 2.0, c = 3.0, d = 4.0;
  const double m = 0.999999, k = 1e-3;
  for (uint64_t i = 0; i < n; ++i) {
    a = a * m + k;
    b = b * m + k;
    c = c * m + k;
    d = d * m + k;
  }
  double sum = a + b + c + d;
  uint64_t bits;
  std::memcpy(&bits, &sum, sizeof bits);
  return bits;
}

typedef float V8 __attribute__((vector_size(32)));

// Same recurrence on 4 × 8 floats. The body is shared by the generic and AVX2 builds.
#define CODL_VECTOR_BODY                                                                         \
  V8 a = {1, 2, 3, 4, 5, 6, 7, static_cast<float>(seed & 0xf)}, b = a + 1, c = a + 2, d = a + 3; \
  const V8 m = {0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f, 0.9999f};         \
  const V8 k = m * 0.01f;                                                                        \
  for (uint64_t i = 0; i < n; ++i) {                                                             \
    a = a * m + k;                                                                               \
    b = b * m + k;                                                                               \
    c = c * m + k;                                                                               \
    d = d * m + k;                                                                               \
  }                                                                                              \
  V8 s = a + b + c + d;                                                                          \
  uint32_t bits;                                                                                 \
  std::memcpy(&bits, &s, sizeof bits);                                                           \
  return bits;

uint64_t VectorKernelGeneric(uint64_t n, uint64_t seed) { CODL_VECTOR_BODY }

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) uint64_t VectorKernelAvx2(uint64_t n, uint64_t seed) {
  CODL_VECTOR_BODY
}
bool HaveAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#else
uint64_t VectorKernelAvx2(uint64_t n, uint64_t seed) { return VectorKernelGeneric(n, seed); }
bool HaveAvx2() { return false; }
#endif
#undef CODL_VECTOR_BODY

uint64_t VectorKernel(uint64_t n, uint64_t seed) {
  static const bool avx2 = HaveAvx2();
  return avx2 ? VectorKernelAvx2(n, seed) : VectorKernelGeneric(n, seed);
}

}  // namespace

bool ParseCpuMix(const std::string& text, CpuMix* mix) {
  if (text == "int") *mix = CpuMix::kInt;
  else if (text == "float") *mix = CpuMix::kFloat;
  else if (text == "vector") *mix = CpuMix::kVector;
  else if (text == "mixed") *mix = CpuMix::kMixed;
  else return false;
  return true;
}

uint64_t RunCpuKernel(CpuMix mix, uint64_t iterations, uint64_t seed) {
  switch (mix) {
    case CpuMix::kInt: return IntKernel(iterations, seed);
    case CpuMix::kFloat: return FloatKernel(iterations, seed);
    case CpuMix::kVector: return VectorKernel(iterations, seed);
    case CpuMix::kMixed: {
      const uint64_t third = iterations / 3;
      return IntKernel(iterations - 2 * third, seed) ^ FloatKernel(third, seed) ^
             VectorKernel(third, seed);
    }
  }
  return 0;
}

const char* VectorKernelName() { return HaveAvx2() ? "avx2+fma" : "generic"; }

}  // namespace codl::injectors
