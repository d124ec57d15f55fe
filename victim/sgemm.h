// A blocked single-precision GEMM for the CPU compute stage (the no-GPU fallback). Goto-style
// packing and a 4x16 register-tiled micro-kernel written with GCC/Clang vector extensions, so it
// runs at a useful fraction of a core's peak and stresses caches and DRAM the way a BLAS does,
// without depending on one.
#pragma once

namespace codl::victim {

// C[m x n] = A[m x k] * B[k x n], row-major with leading dimensions lda/ldb/ldc (C is overwritten).
// `threads` > 1 splits the rows of C across that many threads.
void Sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
           int threads = 1);

}  // namespace codl::victim
