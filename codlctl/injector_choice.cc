// What `codlctl profile` and `codlctl crosstalk` share (see commands.h): which injectors to use
// when --injectors is not given (what the nodes report they support), their --levels and
// --injectors checks, the options FILE gives each injector, and --show's source.
#include <optional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "agent/agent.h"
#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/injector_choice.h"
#include "codlctl/results_output.h"
#include "injectors/core/registry.h"
#include "lib/common/utf8.h"
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

Status CheckLevelsAndInjectors(const std::vector<std::string>& levels,
                               const std::vector<std::string>& names, const char* example) {
  if (levels.empty()) return Err(std::string("--levels: give at least one level, e.g. ") + example);
  for (const std::string& l : levels) {
    if (l == "max") continue;
    char* end = nullptr;
    const double v = strtod(l.c_str(), &end);
    if (end == l.c_str() || *end != '\0' || !(v > 0 && v <= 1))
      return Err("--levels: '" + l + "' is not a level in (0, 1] or max");
  }
  for (const std::string& n : names) {
    if (Status s = injectors::ValidateInjectorName(n); !s.ok())
      return Err("--injectors: " + s.error());
  }
  return Status::Ok();
}

std::map<std::string, YAML::Node> InjectorOptionsIn(const YAML::Node& root) {
  std::map<std::string, YAML::Node> options;
  if (const YAML::Node given = root["antagonists"]; given && given.IsSequence()) {
    for (const auto& a : given) {
      if (a.IsMap() && a["injector"] && a["injector"].IsScalar() && a["options"] &&
          !options.count(a["injector"].Scalar()))
        options[a["injector"].Scalar()] = YAML::Clone(a["options"]);
    }
  }
  return options;
}

Result<std::vector<std::string>> PlanInjectors(const GlobalOptions& g,
                                               const std::vector<std::string>& given,
                                               const experiment::NodeSelector& nodes) {
  if (!given.empty()) return given;
  if (ConfiguredController(g.controller).empty()) {
    std::vector<std::string> names = HostInjectors();
    if (names.empty())
      return Err(
          "codl-inject --list reports no injector available on this host (noop excepted): "
          "name some with --injectors");
    return names;
  }
  auto c = ConnectController(g);
  if (!c.ok()) return Error{c.error(), StatusCode::kInvalidArgument};
  return NodeInjectors(c->get(), nodes);
}

int ShowStored(const GlobalOptions& g, const std::string& verb, const std::string& db,
               const std::string& id, const std::string& output, const ShowPrinter& print) {
  if (output != "table" && output != "json" && output != "csv") {
    fprintf(stderr, "codlctl %s: -o '%s': expected table, json or csv\n", verb.c_str(),
            TerminalSafe(output).c_str());
    return kExitBadInput;
  }
  std::unique_ptr<ControllerClient> client;
  std::string from = db;
  if (!ConfiguredController(g.controller).empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) {
      fprintf(stderr, "codlctl %s: %s\n", verb.c_str(), TerminalSafe(c.error()).c_str());
      return kExitBadInput;
    }
    client = std::move(c.value());
    from.clear();
  }
  return print(client.get(), from, id, output, stdout);
}

}  // namespace codl::cli
