#include "victim/sgemm.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

// On x86-64 the driver is compiled twice, baseline SSE2 and AVX2+FMA (x86-64-v3: anything from
// Haswell on), and picked once at run time, so a portable build (no -march=native) still runs
// at AVX2 speed whichever compiler built it. (GCC's target_clones("arch=x86-64-v3") did this
// for GCC only: clang 14 compiles the clone but its resolver never picks it, and the
// quickstart's clang build ran the GEMM stage at SSE2 speed, 2.5x slower.)
#if defined(__x86_64__) && defined(__GNUC__)
#define CODL_SGEMM_AVX2 1
#endif

namespace codl::victim {
namespace {

typedef float v8f __attribute__((vector_size(32)));

constexpr int kMr = 4;     // rows of the register tile
constexpr int kNr = 16;    // columns of the register tile (two 8-float vectors)
constexpr int kKc = 256;   // depth of a packed panel: an A strip + B strip stay in L1
constexpr int kMc = 64;    // rows of a packed A block (L2)
constexpr int kNc = 2048;  // columns of a packed B panel (L2/L3)

// Packs B[kc x nc] into strips of kNr columns: strip j holds kc rows of kNr floats, zero-padded.
void PackB(const float* b, int ldb, int kc, int nc, float* out) {
  for (int j0 = 0; j0 < nc; j0 += kNr) {
    const int w = std::min(kNr, nc - j0);
    for (int p = 0; p < kc; ++p) {
      const float* src = b + static_cast<long>(p) * ldb + j0;
      std::memcpy(out, src, sizeof(float) * w);
      std::fill(out + w, out + kNr, 0.0f);
      out += kNr;
    }
  }
}

// Packs A[mc x kc] into strips of kMr rows, column by column, zero-padded.
void PackA(const float* a, int lda, int mc, int kc, float* out) {
  for (int i0 = 0; i0 < mc; i0 += kMr) {
    const int h = std::min(kMr, mc - i0);
    for (int p = 0; p < kc; ++p) {
      for (int r = 0; r < kMr; ++r) *out++ = r < h ? a[static_cast<long>(i0 + r) * lda + p] : 0.0f;
    }
  }
}

// C[mr x nr] += Apanel * Bpanel over depth kc.
inline __attribute__((always_inline)) void MicroKernel(int kc, const float* ap, const float* bp,
                                                       float* c, int ldc, int mr, int nr) {
  v8f acc[kMr][2] = {};
  for (int p = 0; p < kc; ++p) {
    v8f b0, b1;
    __builtin_memcpy(&b0, bp, sizeof b0);
    __builtin_memcpy(&b1, bp + 8, sizeof b1);
    for (int r = 0; r < kMr; ++r) {
      const float av = ap[r];
      acc[r][0] += av * b0;
      acc[r][1] += av * b1;
    }
    ap += kMr;
    bp += kNr;
  }
  for (int r = 0; r < mr; ++r) {
    float tile[kNr];
    __builtin_memcpy(tile, &acc[r][0], sizeof(v8f));
    __builtin_memcpy(tile + 8, &acc[r][1], sizeof(v8f));
    float* row = c + static_cast<long>(r) * ldc;
    for (int j = 0; j < nr; ++j) row[j] += tile[j];
  }
}

inline __attribute__((always_inline)) void SgemmBody(int m, int n, int k, const float* a, int lda,
                                                     const float* b, int ldb, float* c, int ldc) {
  for (int i = 0; i < m; ++i)
    std::fill(c + static_cast<long>(i) * ldc, c + static_cast<long>(i) * ldc + n, 0.0f);
  thread_local std::vector<float> bpack, apack;
  bpack.resize(static_cast<size_t>(kKc) * (kNc + kNr));
  apack.resize(static_cast<size_t>(kKc) * (kMc + kMr));
  for (int jc = 0; jc < n; jc += kNc) {
    const int nc = std::min(kNc, n - jc);
    for (int pc = 0; pc < k; pc += kKc) {
      const int kc = std::min(kKc, k - pc);
      PackB(b + static_cast<long>(pc) * ldb + jc, ldb, kc, nc, bpack.data());
      for (int ic = 0; ic < m; ic += kMc) {
        const int mc = std::min(kMc, m - ic);
        PackA(a + static_cast<long>(ic) * lda + pc, lda, mc, kc, apack.data());
        for (int jr = 0; jr < nc; jr += kNr) {
          const float* bp = bpack.data() + static_cast<size_t>(jr / kNr) * kc * kNr;
          for (int ir = 0; ir < mc; ir += kMr) {
            const float* ap = apack.data() + static_cast<size_t>(ir / kMr) * kc * kMr;
            float* cp = c + static_cast<long>(ic + ir) * ldc + jc + jr;
            MicroKernel(kc, ap, bp, cp, ldc, std::min(kMr, mc - ir), std::min(kNr, nc - jr));
          }
        }
      }
    }
  }
}

void SgemmBaseline(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                   int ldc) {
  SgemmBody(m, n, k, a, lda, b, ldb, c, ldc);
}

#ifdef CODL_SGEMM_AVX2
__attribute__((target("avx2,fma"))) void SgemmAvx2(int m, int n, int k, const float* a, int lda,
                                                   const float* b, int ldb, float* c, int ldc) {
  SgemmBody(m, n, k, a, lda, b, ldb, c, ldc);
}
#endif

using SgemmFn = void (*)(int, int, int, const float*, int, const float*, int, float*, int);

SgemmFn PickSgemm() {
#ifdef CODL_SGEMM_AVX2
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SgemmAvx2;
#endif
  return SgemmBaseline;
}

void SgemmSerial(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                 int ldc) {
  static const SgemmFn fn = PickSgemm();
  fn(m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace

void Sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
           int threads) {
  threads = std::max(1, std::min(threads, (m + kMr - 1) / kMr));
  if (threads == 1) {
    SgemmSerial(m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  // Row bands, multiples of kMr; each thread packs its own copy of B (cheap next to its share).
  const int band = ((m + threads - 1) / threads + kMr - 1) / kMr * kMr;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int r0 = t * band, r1 = std::min(m, r0 + band);
    if (r0 >= r1) break;
    pool.emplace_back([=] {
      SgemmSerial(r1 - r0, n, k, a + static_cast<long>(r0) * lda, lda, b, ldb,
                  c + static_cast<long>(r0) * ldc, ldc);
    });
  }
  for (auto& t : pool) t.join();
}

}  // namespace codl::victim
