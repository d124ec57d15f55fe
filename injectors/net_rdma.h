// Whether this host could carry the net flood over RDMA, in words, for `codl-inject --list` and
// `net --help`. The net injector streams TCP only; this says why RDMA is not in use here.
#pragma once

#include <string>

namespace codl::injectors {

// Looks in /sys/class/infiniband first (no device: libibverbs is never loaded, so hosts of the
// catalog such as the controller stay free of it); with devices there, dlopen()s
// libibverbs.so.1 and asks ibv_get_device_list, so no binary links against libibverbs.
// Examples: "RDMA: no device (/sys/class/infiniband absent: no RDMA driver loaded)",
// "RDMA: mlx5_0 found by libibverbs, not used (net streams TCP)".
std::string RdmaStatus();

}  // namespace codl::injectors
