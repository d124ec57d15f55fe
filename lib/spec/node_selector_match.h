// NodeSelectorMatches: the one rule for which agents a node selector may pick (the controller's
// AgentRegistry::Select, codlctl profile's question of what the victim's nodes support).
#pragma once

#include <string>

#include "lib/spec/spec.h"

namespace codl::experiment {

// Whether an agent (its id and labels: a std::map or a protobuf Map) is one `sel` may pick,
// before any count is applied: every label equal (kLabels), its id or `hostname` label named
// (kHosts); kAll and kCount take any.
template <typename Labels>
bool NodeSelectorMatches(const NodeSelector& sel, const std::string& agent_id,
                         const Labels& labels) {
  if (sel.kind == NodeSelector::Kind::kLabels) {
    for (const auto& [k, v] : sel.labels) {
      const auto it = labels.find(k);
      if (it == labels.end() || it->second != v) return false;
    }
    return true;
  }
  if (sel.kind == NodeSelector::Kind::kHosts) {
    const auto hostname = labels.find("hostname");
    for (const auto& h : sel.hosts) {
      if (h == agent_id || (hostname != labels.end() && hostname->second == h)) return true;
    }
    return false;
  }
  return true;
}

}  // namespace codl::experiment
