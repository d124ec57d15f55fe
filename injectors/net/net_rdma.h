// Whether this host could carry a network flood over RDMA, in words, for `net --help` and the
// resource column of `codl-inject --list`. The net injector streams TCP; the RDMA flood is the
// rdma injector (rdma.cc), whose probe this is (rdma/rdma_host.h).
#pragma once

#include <string>

namespace codl::injectors {

// "RDMA: no device (/sys/class/infiniband absent: no RDMA driver loaded)",
// "RDMA: mlx5_0 port 1 (InfiniBand, ACTIVE): injector rdma".
std::string RdmaStatus();

}  // namespace codl::injectors
