// Where the victim runs: one instance, or one rank per node (victim.distributed), and the
// torch.distributed environment each rank gets.
#include <array>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

// The torch.distributed variables (env:// initialisation) and CoDL's own two.
constexpr std::array<const char*, 7> kDistributedVariables = {"RANK",
                                                              "WORLD_SIZE",
                                                              "LOCAL_RANK",
                                                              "MASTER_ADDR",
                                                              "MASTER_PORT",
                                                              "CODL_VICTIM_RANK",
                                                              "CODL_VICTIM_WORLD_SIZE"};

}  // namespace

std::map<std::string, std::string> DistributedEnvironment(int rank, int world_size,
                                                          const std::string& master_addr,
                                                          int master_port) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"LOCAL_RANK", "0"},  // one instance per node
          {"MASTER_ADDR", master_addr},
          {"MASTER_PORT", std::to_string(master_port)},
          {"CODL_VICTIM_RANK", std::to_string(rank)},
          {"CODL_VICTIM_WORLD_SIZE", std::to_string(world_size)}};
}

bool IsDistributedVariable(const std::string& name) {
  for (const char* v : kDistributedVariables) {
    if (name == v) return true;
  }
  return false;
}

std::string DescribeNodeSelector(const NodeSelector& sel) {
  using K = NodeSelector::Kind;
  std::string s;
  switch (sel.kind) {
    case K::kAll: return "all";
    case K::kCount: return "count: " + std::to_string(sel.count);
    case K::kHosts:
      for (const auto& h : sel.hosts) s += (s.empty() ? "" : ", ") + h;
      return "hosts: [" + s + "]";
    case K::kLabels:
      for (const auto& [k, v] : sel.labels) s += (s.empty() ? "" : ", ") + k + ": " + v;
      return "labels: {" + s + "}";
  }
  return "?";
}

std::string VictimPlacementLine(const ExperimentSpec& spec) {
  const std::string nodes = DescribeNodeSelector(spec.victim.nodes);
  if (!spec.victim.distributed) return "victim: one instance on the first node of " + nodes;
  return "victim: distributed, one rank per node of " + nodes +
         " (ranks 0..N-1 in agent-id order; rank 0's node is MASTER_ADDR), master port " +
         std::to_string(spec.victim.master_port);
}

}  // namespace codl::experiment
