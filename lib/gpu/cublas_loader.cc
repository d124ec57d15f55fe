#include "lib/gpu/cublas_loader.h"

#include "lib/common/dl_library.h"

namespace codl::gpu_loaders {

using dl::OpenFirst;
using dl::Resolve;

const CublasApi& Cublas() {
  static const CublasApi api = [] {
    CublasApi a;
    std::string why;
    void* h = OpenFirst({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, &why);
    if (h == nullptr) {
      a.error = "cannot load cuBLAS (libcublas.so): " + why;
      return a;
    }
    std::string missing;
    Resolve(h, "cublasCreate_v2", &a.create, &missing);
    Resolve(h, "cublasSetStream_v2", &a.set_stream, &missing);
    Resolve(h, "cublasSgemm_v2", &a.sgemm, &missing);
    Resolve(h, "cublasDestroy_v2", &a.destroy, &missing);
    Resolve(h, "cublasGetStatusString", &a.status_string, &missing);
    if (!missing.empty()) a.error = "libcublas lacks " + missing + " (the v2 API)";
    return a;
  }();
  return api;
}

}  // namespace codl::gpu_loaders
