#include "injectors/net/net_rdma.h"

#include "injectors/rdma/rdma_host.h"

namespace codl::injectors {

std::string RdmaStatus() {
  const rdma::Availability& a = rdma::HostAvailability();
  if (!a.reason.empty()) return "RDMA: " + a.reason;
  return "RDMA: " + rdma::DescribePorts(a.ports) + ": injector rdma";
}

}  // namespace codl::injectors
