#include "lib/analysis/phase_order.h"

#include <algorithm>
#include <set>

namespace codl::experiment {
namespace {

constexpr const char* kPipeline[] = {"data_wait_s", "read_s",    "decode_s",
                                     "h2d_s",       "compute_s", "comm_s"};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

std::vector<std::string> ReportedPhases(const TrialRecord& trial) {
  std::vector<std::string> names;
  std::set<std::string> listed;
  for (const auto& name : trial.phase_order) {
    // Only phases with a median; a name listed twice (a hand-edited record) counts once.
    if (trial.phase_medians.count(name) && listed.insert(name).second) names.push_back(name);
  }
  for (const auto& [name, v] : trial.phase_medians) {
    if (!listed.count(name)) names.push_back(name);
  }
  return names;
}

std::vector<std::string> OrderPhases(const std::vector<const TrialRecord*>& trials) {
  std::vector<std::string> seen;
  std::set<std::string> have;
  for (const TrialRecord* t : trials) {
    for (auto& name : ReportedPhases(*t)) {
      if (have.insert(name).second) seen.push_back(std::move(name));
    }
  }
  std::vector<std::string> order;
  for (const char* p : kPipeline) {
    if (have.count(p)) order.push_back(p);
  }
  for (auto& name : seen) {
    if (!Contains(order, name)) order.push_back(std::move(name));
  }
  return order;
}

std::string PhaseLabel(const std::string& phase) {
  if (phase.size() > 2 && phase.compare(phase.size() - 2, 2, "_s") == 0) {
    return phase.substr(0, phase.size() - 2);
  }
  return phase;
}

}  // namespace codl::experiment
