// cuBLAS loaded at run time (dlopen), not linked. Why: libcublas carries a large static TLS block,
// so any process linking it fails to start threads with small fixed stacks (civetweb's /metrics
// server gets EINVAL from pthread_create); and codl-victim must start, and fall back to the CPU,
// on hosts without it. Only the functions codl calls are resolved.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace codl::gpu_loaders {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string error;  // "" when every pointer above is set
};

// Loaded once (thread-safe); check `error` before calling through it.
const CublasApi& Cublas();

}  // namespace codl::gpu_loaders
