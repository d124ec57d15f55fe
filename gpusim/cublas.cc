// libcublas.so.13 for a gpusim node: cublasSgemm with a real result (computed on the host, on
// the handle's stream) that takes the model's time on the SMs (2mnk FLOP at the device's FP32
// rate, at this process's share). Only what lib/gpu/cublas_loader.h resolves.
#include <cublas_v2.h>

#include <cstring>
#include <vector>

#include "gpusim/runtime.h"

using codl::gpusim::Allocation;
using codl::gpusim::Node;
using codl::gpusim::Runtime;

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
};

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Runtime& rt = Runtime::Get();
  if (!rt.valid(rt.current()) || rt.DeviceError(rt.current()) != cudaSuccess)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = new cublasContext{rt.current(), nullptr};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return "unknown cuBLAS status";
  }
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const float* alpha, const float* A, int lda,
                              const float* B, int ldb, const float* beta, float* C, int ldc) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool tA = ta != CUBLAS_OP_N, tB = tb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || alpha == nullptr || beta == nullptr ||
      lda < (tA ? std::max(1, k) : std::max(1, m)) ||
      ldb < (tB ? std::max(1, n) : std::max(1, k)) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  Runtime& rt = Runtime::Get();
  const int device = handle->device;
  // The matrices must be this device's memory, whole (a host pointer would fault on a GPU).
  Allocation a;
  const size_t a_len = static_cast<size_t>(lda) * static_cast<size_t>(tA ? m : k);
  const size_t b_len = static_cast<size_t>(ldb) * static_cast<size_t>(tB ? k : n);
  const size_t c_len = static_cast<size_t>(ldc) * static_cast<size_t>(n);
  if (!rt.Find(A, a_len * sizeof(float), &a) || a.device != device ||
      !rt.Find(B, b_len * sizeof(float), &a) || a.device != device ||
      !rt.Find(C, c_len * sizeof(float), &a) || a.device != device)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (rt.Operate(device) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  CUstream_st* s = rt.Resolve(handle->stream);
  if (s == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *alpha, be = *beta;  // host pointer mode: read at the call
  const double flop = 2.0 * m * n * static_cast<double>(k);
  const double rate = rt.spec(device).fp32_flops;
  const float weight = rt.SmWeight();
  rt.Enqueue(s, [=] {
    auto columns = [=](double lo, double hi) {
      const int j0 = static_cast<int>(lo * n), j1 = hi >= 1.0 ? n : static_cast<int>(hi * n);
      std::vector<float> acc(static_cast<size_t>(m));
      for (int j = j0; j < j1; ++j) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int l = 0; l < k; ++l) {
          const float b =
              tB ? B[j + static_cast<size_t>(l) * ldb] : B[l + static_cast<size_t>(j) * ldb];
          if (!tA) {
            const float* col = A + static_cast<size_t>(l) * lda;
            for (int i = 0; i < m; ++i) acc[static_cast<size_t>(i)] += col[i] * b;
          } else {
            for (int i = 0; i < m; ++i)
              acc[static_cast<size_t>(i)] += A[l + static_cast<size_t>(i) * lda] * b;
          }
        }
        float* c = C + static_cast<size_t>(j) * ldc;
        for (int i = 0; i < m; ++i)
          c[i] = al * acc[static_cast<size_t>(i)] + (be == 0.0f ? 0.0f : be * c[i]);
      }
    };
    Node::Get().Consume(device, codl::gpusim::kSm, flop, rate, weight, columns);
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
