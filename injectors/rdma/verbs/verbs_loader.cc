#include "injectors/rdma/verbs/verbs_loader.h"

#include <cstring>

#include "lib/common/dl_library.h"

namespace codl::rdma_loaders {

using dl::OpenFirst;
using dl::Resolve;

int VerbsApi::QueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) const {
  std::memset(attr, 0, sizeof *attr);
  if (verbs_context* v = verbs_get_ctx_op(ctx, query_port)) {
    return v->query_port(ctx, port, attr, sizeof *attr);
  }
  return query_port_compat(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

const VerbsApi& Verbs() {
  static const VerbsApi api = [] {
    VerbsApi a;
    std::string why;
    // Never dlclose'd: libibverbs loads provider plug-ins that must not be unmapped under it.
    void* h = OpenFirst({"libibverbs.so.1"}, &why);
    if (h == nullptr) {
      a.error = "libibverbs.so.1 does not load (" + why + "; Debian: libibverbs1)";
      return a;
    }
    std::string missing;
    Resolve(h, "ibv_get_device_list", &a.get_device_list, &missing);
    Resolve(h, "ibv_free_device_list", &a.free_device_list, &missing);
    Resolve(h, "ibv_get_device_name", &a.get_device_name, &missing);
    Resolve(h, "ibv_open_device", &a.open_device, &missing);
    Resolve(h, "ibv_close_device", &a.close_device, &missing);
    Resolve(h, "ibv_query_device", &a.query_device, &missing);
    Resolve(h, "ibv_query_port", &a.query_port_compat, &missing);
    Resolve(h, "ibv_query_gid", &a.query_gid, &missing);
    Resolve(h, "ibv_alloc_pd", &a.alloc_pd, &missing);
    Resolve(h, "ibv_dealloc_pd", &a.dealloc_pd, &missing);
    Resolve(h, "ibv_reg_mr", &a.reg_mr, &missing);
    Resolve(h, "ibv_dereg_mr", &a.dereg_mr, &missing);
    Resolve(h, "ibv_create_comp_channel", &a.create_comp_channel, &missing);
    Resolve(h, "ibv_destroy_comp_channel", &a.destroy_comp_channel, &missing);
    Resolve(h, "ibv_create_cq", &a.create_cq, &missing);
    Resolve(h, "ibv_destroy_cq", &a.destroy_cq, &missing);
    Resolve(h, "ibv_get_cq_event", &a.get_cq_event, &missing);
    Resolve(h, "ibv_ack_cq_events", &a.ack_cq_events, &missing);
    Resolve(h, "ibv_create_qp", &a.create_qp, &missing);
    Resolve(h, "ibv_modify_qp", &a.modify_qp, &missing);
    Resolve(h, "ibv_destroy_qp", &a.destroy_qp, &missing);
    Resolve(h, "ibv_wc_status_str", &a.wc_status_str, &missing);
    if (!missing.empty()) a.error = "libibverbs.so.1 lacks " + missing;
    return a;
  }();
  return api;
}

}  // namespace codl::rdma_loaders
