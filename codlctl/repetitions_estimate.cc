#include "codlctl/repetitions_estimate.h"

#include <cstdio>
#include <optional>

#include "lib/analysis/adaptive.h"
#include "lib/analysis/results.h"
#include "lib/store/store.h"

namespace codl::cli {
namespace {

const experiment::NodeSelector& VictimNodes(const experiment::ExperimentSpec& s) {
  return s.victim.nodes.kind == experiment::NodeSelector::Kind::kAll ? s.nodes : s.victim.nodes;
}

bool SameSelector(const experiment::NodeSelector& a, const experiment::NodeSelector& b) {
  return a.kind == b.kind && a.labels == b.labels && a.hosts == b.hosts && a.count == b.count;
}

struct Previous {
  std::string id;
  experiment::BlocksEstimate estimate;
};

// The newest done experiment of the same victim on the same nodes that had a CI to go by.
std::optional<Previous> FindPrevious(const experiment::ExperimentSpec& spec,
                                     const std::string& db) {
  auto store = store::Store::OpenExisting(db);
  if (!store.ok()) return std::nullopt;
  auto experiments = (*store)->ListExperiments();  // newest first
  if (!experiments.ok()) return std::nullopt;
  for (const auto& e : *experiments) {
    if (e.state != ExperimentState::kDone) continue;
    const experiment::StoredExperiment old = experiment::ReadStoredExperiment(e);
    if (!old.spec || !SameVictimOnSameNodes(spec, *old.spec)) continue;
    auto trials = (*store)->GetTrials(e.id, /*with_series=*/true);
    if (!trials.ok()) continue;
    // Judged by the new experiment's metric: that is the precision it will be run to.
    auto estimate = experiment::EstimateBlocks(
        experiment::Summarize(e, *trials, old.Options(&spec.victim.metric)), spec.adaptive);
    if (estimate) return Previous{e.id, *estimate};
  }
  return std::nullopt;
}

}  // namespace

bool SameVictimOnSameNodes(const experiment::ExperimentSpec& a,
                           const experiment::ExperimentSpec& b) {
  return a.victim.command == b.victim.command && SameSelector(VictimNodes(a), VictimNodes(b));
}

std::string AdaptiveRepetitionsEstimate(const experiment::ExperimentSpec& spec,
                                        const std::string& db) {
  const auto& a = spec.adaptive;
  if (!a.enabled) return "";
  char head[160];
  std::snprintf(head, sizeof head,
                "adaptive repetitions: min %d, max %d blocks, target CI half-width %.3g%%: ", a.min,
                a.max, a.ci_halfwidth * 100);
  const auto previous = FindPrevious(spec, db);
  if (!previous) {
    return head +
           std::string(
               "no estimate of the blocks needed (no finished experiment with "
               "the same victim command on the same nodes in ") +
           db + ")";
  }
  const auto& e = previous->estimate;
  char body[512];
  std::snprintf(body, sizeof body,
                "about %d blocks%s, estimated from experiment %s in %s (same victim on the same "
                "nodes): its widest pairing %s had a half-width of %.3g%% at n = %d, and the "
                "half-width shrinks as 1/sqrt(n)",
                e.blocks, e.blocks > a.max ? " — more than max: expect \"max reached\"" : "",
                previous->id.c_str(), db.c_str(), e.pairing.c_str(), e.half_width * 100, e.n);
  return head + std::string(body);
}

}  // namespace codl::cli
