#include "injectors/gpu/loaders/cublas_loader.h"

#include <dlfcn.h>

namespace codl::gpu_loaders {

const CublasApi& Cublas() {
  static const CublasApi api = [] {
    CublasApi a;
    void* h = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (h == nullptr) {
      a.error = std::string("cannot load cuBLAS (libcublas.so): ") + dlerror();
      return a;
    }
    a.create = reinterpret_cast<decltype(a.create)>(dlsym(h, "cublasCreate_v2"));
    a.set_stream = reinterpret_cast<decltype(a.set_stream)>(dlsym(h, "cublasSetStream_v2"));
    a.sgemm = reinterpret_cast<decltype(a.sgemm)>(dlsym(h, "cublasSgemm_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(dlsym(h, "cublasDestroy_v2"));
    a.status_string =
        reinterpret_cast<decltype(a.status_string)>(dlsym(h, "cublasGetStatusString"));
    if (!a.create || !a.set_stream || !a.sgemm || !a.destroy || !a.status_string) {
      a.error = "libcublas lacks the v2 API";
    }
    return a;
  }();
  return api;
}

}  // namespace codl::gpu_loaders
