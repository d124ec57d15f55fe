// Which injectors `codlctl profile` and `codlctl crosstalk` use when --injectors is not given:
// what the nodes report they support (see commands.h).
#include <optional>
#include <set>
#include <sstream>

#include "agent/agent.h"
#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "injectors/core/registry.h"
#include "lib/spec/node_selector_match.h"

namespace codl::cli {
namespace {

// Left out unless named: noop pressures nothing (a test double).
const std::set<std::string> kNotChosen = {"noop"};

std::vector<std::string> SplitInjectorList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// `available`, less kNotChosen, in registry order.
std::vector<std::string> InRegistryOrder(const std::set<std::string>& available) {
  std::vector<std::string> out;
  for (const auto& n : injectors::InjectorNames()) {
    if (available.count(n) && !kNotChosen.count(n)) out.push_back(n);
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> NodeInjectors(ControllerClient* client,
                                               const experiment::NodeSelector& nodes) {
  auto agents = client->ListAgents();
  if (!agents.ok()) return Error{agents.error(), StatusCode::kUnavailable};
  std::optional<std::set<std::string>> common;
  std::vector<std::string> names;
  for (const auto& a : *agents) {
    if (!a.alive() || !experiment::NodeSelectorMatches(nodes, a.agent_id(), a.labels())) continue;
    names.push_back(a.agent_id());
    std::set<std::string> here;
    if (auto it = a.labels().find("injectors"); it != a.labels().end()) {
      for (const auto& n : SplitInjectorList(it->second)) here.insert(n);
    }
    if (!common) {
      common = here;
    } else {
      std::set<std::string> both;
      for (const auto& n : *common) {
        if (here.count(n)) both.insert(n);
      }
      common = both;
    }
  }
  if (!common) {
    return Err(
        "no live agent matches the experiment's nodes: nothing to ask which injectors it "
        "supports (codlctl agents lists them)");
  }
  std::vector<std::string> out = InRegistryOrder(*common);
  if (out.empty()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return Err("the experiment's nodes (" + list +
               ") report no injector they all support: name some with --injectors");
  }
  return out;
}

std::vector<std::string> HostInjectors() {
  std::set<std::string> here;
  for (const auto& n : SplitInjectorList(agent::DetectHostLabels("codl-inject")["injectors"]))
    here.insert(n);
  return InRegistryOrder(here);
}

}  // namespace codl::cli
