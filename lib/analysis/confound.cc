// Confounds: see confound.h.
#include "lib/analysis/confound.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "lib/analysis/results.h"

namespace codl::experiment {

std::string ResourceOf(const std::string& injector) {
  static const std::map<std::string, std::string> kResources = {
      {"memcpy", "memory bandwidth"},  {"io_uring", "storage"},
      {"llc", "the last-level cache"}, {"pagecache", "the page cache"},
      {"net", "the network"},          {"rdma", "RDMA"},
      {"cuda_memcpy", "PCIe"},         {"nccl", "the GPU interconnect"},
      {"mps_cotenant", "the GPU"},     {"noop", "nothing (a no-op)"}};
  auto it = kResources.find(injector);
  return it == kResources.end() ? "" : it->second;
}

std::vector<std::string> CpuConfounds(const PairingSummary& p) {
  std::vector<std::string> out;
  if (p.baseline || !(p.victim_cores > 0)) return out;
  for (const AntagonistSummary& a : p.antagonists) {
    if (a.injector == "cpu" || !std::isfinite(a.cores)) continue;
    const double share = a.cores / p.victim_cores;
    if (share <= kCpuConfoundShare) continue;
    const std::string resource = ResourceOf(a.injector);
    char figures[160];
    std::snprintf(figures, sizeof figures,
                  " used %.2f CPU cores beside the victim's %.2f (%.0f%%, over %.0f%%)", a.cores,
                  p.victim_cores, 100 * share, 100 * kCpuConfoundShare);
    out.push_back(a.name + " (" + a.injector + ")" + figures +
                  ": part of this slowdown may be CPU contention" +
                  (resource.empty() ? "" : ", not " + resource) +
                  "; give it its own cores (cpus:) to separate them");
  }
  return out;
}

}  // namespace codl::experiment
