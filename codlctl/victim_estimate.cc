#include "codlctl/victim_estimate.h"

#include <algorithm>
#include <vector>

#include "lib/store/store.h"

namespace codl::cli {

std::optional<double> PreviousVictimSeconds(const std::string& db, const std::string& name) {
  auto store = store::Store::OpenExisting(db);
  if (!store.ok()) return std::nullopt;
  auto experiments = (*store)->ListExperiments();  // newest first
  if (!experiments.ok()) return std::nullopt;
  for (const auto& e : *experiments) {
    if (e.name != name) continue;
    auto trials = (*store)->GetTrials(e.id, false);
    if (!trials.ok()) return std::nullopt;
    std::vector<double> walls;
    for (const auto& t : *trials) {
      if (t.state == TrialState::kDone || t.state == TrialState::kFlagged)
        walls.push_back(t.wall_s);
    }
    if (walls.empty()) continue;  // an earlier run of the same name may have measured some
    std::nth_element(walls.begin(), walls.begin() + walls.size() / 2, walls.end());
    return walls[walls.size() / 2];
  }
  return std::nullopt;
}

}  // namespace codl::cli
