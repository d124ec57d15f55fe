#include "controller/tolerance_search.h"

#include <cstdio>
#include <random>

#include "lib/analysis/results.h"
#include "lib/analysis/tolerance.h"
#include "lib/common/random.h"

namespace codl::controller {

bool HasToleranceSearch(const experiment::ExperimentSpec& spec) {
  for (const auto& a : spec.antagonists) {
    if (a.tolerance.enabled && !a.workload) return true;
  }
  return false;
}

ToleranceExtension NextToleranceTrials(const ExperimentRecord& exp,
                                       const experiment::ExperimentSpec& spec, size_t planned,
                                       const std::vector<TrialRecord>& done, int next_index,
                                       std::set<std::string>* announced) {
  ToleranceExtension out;
  if (!HasToleranceSearch(spec)) return out;
  experiment::SummarizeOptions options;
  options.metric = spec.victim.metric;
  ExperimentRecord bare = exp;
  bare.yaml.clear();  // the searches are judged below; Summarize need not parse the YAML
  const auto results = experiment::Summarize(bare, done, options);
  int block = 0;
  for (const auto& t : done) block = std::max(block, t.repetition + 1);
  for (size_t i = 0; i < spec.antagonists.size(); ++i) {
    const auto& a = spec.antagonists[i];
    if (!a.tolerance.enabled || a.workload) continue;
    const int used = experiment::SearchTrials(done, a.name, static_cast<int>(planned));
    const experiment::ToleranceStep step = experiment::NextToleranceStep(results.pairings, a, used);
    if (step.done) {
      if (announced->insert(a.name).second)
        out.finished.push_back(experiment::ToleranceLine(step.result));
      continue;
    }
    // One step: a baseline and the level's trials, in a block of their own, shuffled.
    experiment::PlannedPart part;
    part.antagonist = static_cast<int>(i);
    part.intensity.level = step.level;
    char label[32];
    std::snprintf(label, sizeof label, "%g", step.level);
    part.intensity.label = label;
    std::vector<experiment::PlannedTrial> trials;
    experiment::PlannedTrial baseline;
    baseline.baseline = true;
    baseline.pairing = "baseline";
    trials.push_back(baseline);
    for (int k = 0; k < step.trials; ++k) {
      experiment::PlannedTrial t;
      t.parts = {part};
      t.pairing = experiment::PairingKey(spec, t.parts);
      trials.push_back(t);
    }
    if (spec.randomize) {
      std::mt19937_64 rng(spec.seed ^ static_cast<uint64_t>(next_index));
      experiment::Shuffle(trials, rng);
    }
    for (auto& t : trials) {
      t.index = next_index++;
      t.repetition = block;
    }
    out.trials = std::move(trials);
    return out;  // one search step at a time: the next is decided on its results
  }
  return out;
}

}  // namespace codl::controller
