// libibverbs loaded at run time (dlopen of libibverbs.so.1), not linked: codl-inject starts on
// hosts without it, and the rdma injector says why in `codl-inject --list`. The types come from
// Debian's libibverbs-dev at build time; only the functions the flood calls are resolved. The
// data path (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) is inline in verbs.h
// and calls the provider through the context's ops table, so it needs no symbol from here.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace codl::rdma_loaders {

struct VerbsApi {
  decltype(&ibv_get_device_list) get_device_list = nullptr;
  decltype(&ibv_free_device_list) free_device_list = nullptr;
  decltype(&ibv_get_device_name) get_device_name = nullptr;
  decltype(&ibv_open_device) open_device = nullptr;
  decltype(&ibv_close_device) close_device = nullptr;
  decltype(&ibv_query_device) query_device = nullptr;
  // The exported symbol behind the ibv_query_port macro, for providers without the extended
  // query_port op; it fills the leading, compatible part of ibv_port_attr.
  decltype(&ibv_query_port) query_port_compat = nullptr;
  decltype(&ibv_query_gid) query_gid = nullptr;
  decltype(&ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&ibv_dealloc_pd) dealloc_pd = nullptr;
  decltype(&ibv_reg_mr) reg_mr = nullptr;
  decltype(&ibv_dereg_mr) dereg_mr = nullptr;
  decltype(&ibv_create_comp_channel) create_comp_channel = nullptr;
  decltype(&ibv_destroy_comp_channel) destroy_comp_channel = nullptr;
  decltype(&ibv_create_cq) create_cq = nullptr;
  decltype(&ibv_destroy_cq) destroy_cq = nullptr;
  decltype(&ibv_get_cq_event) get_cq_event = nullptr;
  decltype(&ibv_ack_cq_events) ack_cq_events = nullptr;
  decltype(&ibv_create_qp) create_qp = nullptr;
  decltype(&ibv_modify_qp) modify_qp = nullptr;
  decltype(&ibv_destroy_qp) destroy_qp = nullptr;
  decltype(&ibv_wc_status_str) wc_status_str = nullptr;
  std::string error;  // "" when every pointer above is set

  // ibv_query_port as the header's inline does it: the provider's extended op when it has one.
  int QueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) const;
};

// Loaded once (thread-safe); check `error` before calling through it.
const VerbsApi& Verbs();

}  // namespace codl::rdma_loaders
