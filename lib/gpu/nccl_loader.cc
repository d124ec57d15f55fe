#include "lib/gpu/nccl_loader.h"

#include "lib/common/dl_library.h"

namespace codl::gpu_loaders {

using dl::OpenFirst;
using dl::Resolve;

const NcclApi& Nccl() {
  static const NcclApi api = [] {
    NcclApi a;
    std::string why;
    void* h = OpenFirst({"libnccl.so.2", "libnccl.so"}, &why);
    if (h == nullptr) {
      a.error = "cannot load NCCL (libnccl.so.2): " + why;
      return a;
    }
    std::string missing;
    Resolve(h, "ncclGetVersion", &a.GetVersion, &missing);
    Resolve(h, "ncclGetUniqueId", &a.GetUniqueId, &missing);
    Resolve(h, "ncclCommInitRankConfig", &a.CommInitRankConfig, &missing);
    Resolve(h, "ncclCommInitAll", &a.CommInitAll, &missing);
    Resolve(h, "ncclCommGetAsyncError", &a.CommGetAsyncError, &missing);
    Resolve(h, "ncclCommFinalize", &a.CommFinalize, &missing);
    Resolve(h, "ncclCommDestroy", &a.CommDestroy, &missing);
    Resolve(h, "ncclCommAbort", &a.CommAbort, &missing);
    Resolve(h, "ncclGetErrorString", &a.GetErrorString, &missing);
    Resolve(h, "ncclGetLastError", &a.GetLastError, &missing);
    Resolve(h, "ncclAllReduce", &a.AllReduce, &missing);
    Resolve(h, "ncclAllGather", &a.AllGather, &missing);
    Resolve(h, "ncclReduceScatter", &a.ReduceScatter, &missing);
    Resolve(h, "ncclBroadcast", &a.Broadcast, &missing);
    Resolve(h, "ncclSend", &a.Send, &missing);
    Resolve(h, "ncclRecv", &a.Recv, &missing);
    Resolve(h, "ncclGroupStart", &a.GroupStart, &missing);
    Resolve(h, "ncclGroupEnd", &a.GroupEnd, &missing);
    // Older NCCLs lack some (ncclCommFinalize: 2.14, ncclCommInitRankConfig: 2.14).
    if (!missing.empty()) {
      a.error = "libnccl.so.2 is too old: it lacks " + missing + " (need NCCL 2.14 or newer)";
    }
    return a;
  }();
  return api;
}

}  // namespace codl::gpu_loaders
