// ExpandPlan: pairings x intensities x repetitions, with baselines interleaved and a seeded,
// portable shuffle (experiment/random.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "lib/common/random.h"
#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

// The antagonist index sets the `pairings` mode asks for, in a fixed order.
std::vector<std::vector<int>> Groups(const ExperimentSpec& spec) {
  const int n = static_cast<int>(spec.antagonists.size());
  std::vector<std::vector<int>> groups;
  switch (spec.pairings) {
    case Pairings::kSingles:
      for (int i = 0; i < n; ++i) groups.push_back({i});
      break;
    case Pairings::kPairs:
      // The singles first: a pair's interaction (S_AB against S_A x S_B) needs both singles at
      // the same intensities, measured in the same experiment under the same baselines.
      for (int i = 0; i < n; ++i) groups.push_back({i});
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) groups.push_back({i, j});
      break;
    case Pairings::kAll:
      // By size, then lexicographically: singles first, then pairs, ..., then everything.
      for (int k = 1; k <= n; ++k) {
        std::vector<int> idx(k);
        for (int i = 0; i < k; ++i) idx[i] = i;
        while (true) {
          groups.push_back(idx);
          int i = k - 1;
          while (i >= 0 && idx[i] == n - k + i) --i;
          if (i < 0) break;
          ++idx[i];
          for (int j = i + 1; j < k; ++j) idx[j] = idx[j - 1] + 1;
        }
      }
      break;
    case Pairings::kExplicit:
      for (const auto& names : spec.explicit_pairings) {
        std::vector<int> g;
        for (const auto& name : names) {
          for (int i = 0; i < n; ++i) {
            if (spec.antagonists[i].name == name) g.push_back(i);
          }
        }
        std::sort(g.begin(), g.end());
        groups.push_back(std::move(g));
      }
      break;
  }
  return groups;
}

double CountCombinations(const ExperimentSpec& spec) {
  const size_t n = spec.antagonists.size();
  auto k = [&](size_t i) { return static_cast<double>(spec.antagonists[i].intensities.size()); };
  double c = 0;
  switch (spec.pairings) {
    case Pairings::kSingles:
      for (size_t i = 0; i < n; ++i) c += k(i);
      break;
    case Pairings::kPairs:
      for (size_t i = 0; i < n; ++i) {
        c += k(i);  // the singles
        for (size_t j = i + 1; j < n; ++j) c += k(i) * k(j);
      }
      break;
    case Pairings::kAll: {
      double prod = 1;  // every antagonist absent or at one of its intensities, minus "none"
      for (size_t i = 0; i < n; ++i) prod *= 1 + k(i);
      c = prod - 1;
      break;
    }
    case Pairings::kExplicit:
      for (const auto& g : Groups(spec)) {
        double prod = 1;
        for (int i : g) prod *= k(static_cast<size_t>(i));
        c += prod;
      }
      break;
  }
  return c;
}

double BaselinesFor(double combinations) { return std::max(1.0, std::ceil(combinations / 4.0)); }

}  // namespace

int BaselinesPerBlock(int combinations) { return static_cast<int>(BaselinesFor(combinations)); }

std::vector<int> WorkloadAntagonists(const ExperimentSpec& spec) {
  std::vector<int> w;
  for (size_t i = 0; i < spec.antagonists.size(); ++i) {
    if (spec.antagonists[i].workload) w.push_back(static_cast<int>(i));
  }
  return w;
}

double CountPlannedTrials(const ExperimentSpec& spec) {
  double c = CountCombinations(spec);
  const double solos = static_cast<double>(WorkloadAntagonists(spec).size());
  return spec.repetitions * (c + BaselinesFor(c) + solos);
}

std::vector<std::vector<PlannedPart>> ExpandCombinations(const ExperimentSpec& spec) {
  std::vector<std::vector<PlannedPart>> combos;
  for (const auto& group : Groups(spec)) {
    bool empty = false;  // an antagonist without intensities contributes no combination
    for (int i : group) empty = empty || spec.antagonists[i].intensities.empty();
    if (empty) continue;
    // Cross product of the group's intensities, last antagonist varying fastest.
    std::vector<size_t> pos(group.size(), 0);
    while (true) {
      std::vector<PlannedPart> parts;
      for (size_t g = 0; g < group.size(); ++g) {
        parts.push_back({group[g], spec.antagonists[group[g]].intensities[pos[g]]});
      }
      combos.push_back(std::move(parts));
      size_t g = group.size();
      while (g > 0 && ++pos[g - 1] == spec.antagonists[group[g - 1]].intensities.size()) {
        pos[g - 1] = 0;
        --g;
      }
      if (g == 0) break;
    }
  }
  return combos;
}

std::vector<PlannedTrial> ExpandPlan(const ExperimentSpec& spec) {
  const auto combos = ExpandCombinations(spec);
  const size_t c = combos.size();
  const size_t b = static_cast<size_t>(BaselinesPerBlock(static_cast<int>(c)));
  std::mt19937_64 rng(spec.seed);
  std::vector<PlannedTrial> plan;
  constexpr int kBaseline = -1;
  // Solo trial of workload k: kSolo - k (below every other item).
  constexpr int kSolo = -2;
  const std::vector<int> workloads = WorkloadAntagonists(spec);
  for (int rep = 0; rep < spec.repetitions; ++rep) {
    // Every combination once per block. The block is cut into b segments of ~c/b combinations,
    // each with one baseline, so baselines are spread evenly through time (drift hits both
    // sides alike) whether or not the order is randomized.
    std::vector<int> order(c);
    for (size_t i = 0; i < c; ++i) order[i] = static_cast<int>(i);
    if (spec.randomize) Shuffle(order, rng);
    for (size_t s = 0; s < b; ++s) {
      std::vector<int> segment{kBaseline};
      segment.insert(segment.end(), order.begin() + s * c / b, order.begin() + (s + 1) * c / b);
      // The solo runs are spread over the segments like the baselines they stand beside.
      for (size_t k = s; k < workloads.size(); k += b)
        segment.push_back(kSolo - static_cast<int>(k));
      if (spec.randomize) Shuffle(segment, rng);
      for (int item : segment) {
        PlannedTrial t;
        t.index = static_cast<int>(plan.size());
        t.repetition = rep;
        t.baseline = item == kBaseline;
        t.solo = item <= kSolo;
        if (t.solo) {
          PlannedPart alone{workloads[static_cast<size_t>(kSolo - item)], {}};
          alone.intensity = spec.antagonists[alone.antagonist].intensities.at(0);
          alone.intensity.label = kWorkloadSoloLabel;
          t.parts.push_back(alone);
        } else if (!t.baseline) {
          t.parts = combos[item];
        }
        t.pairing = PairingKey(spec, t.parts);
        plan.push_back(std::move(t));
      }
    }
  }
  return plan;
}

double EstimateDurationSeconds(const ExperimentSpec& spec, const std::vector<PlannedTrial>& plan,
                               double victim_estimate_s) {
  // One calibration per antagonist that uses levels (absolute rates need no peak).
  double total = 0;
  for (const auto& a : spec.antagonists) {
    if (a.workload) continue;  // a real command is not calibrated
    bool needs_peak = false;
    for (const auto& in : a.intensities) needs_peak = needs_peak || !in.absolute;
    if (needs_peak) total += spec.calibration_s;
  }
  total += spec.warmup_trials * victim_estimate_s;
  for (const auto& t : plan) {
    if (!t.baseline) total += spec.settle_s;
    total += victim_estimate_s + spec.cooldown_s;  // a solo run lasts as long as the victim
  }
  return total;
}

std::string ShortVictimWarning(const ExperimentSpec& spec, double victim_s, bool measured) {
  if (spec.antagonists.empty()) return "";
  const double needed_s = spec.min_antagonist_samples * kAntagonistSampleIntervalS;
  const bool capped = spec.victim.timeout_s < victim_s;
  const double likely_s = capped ? spec.victim.timeout_s : victim_s;
  if (likely_s >= needed_s) return "";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the victim likely runs %.3g s (%s), shorter than the %.3g s that %d antagonist "
                "samples take (min_antagonist_samples, one per %.1f s): its interference trials "
                "will be flagged \"too short to judge\"; give it more steps",
                likely_s,
                capped     ? "victim.timeout"
                : measured ? "median of the last run"
                           : "estimate",
                needed_s, spec.min_antagonist_samples, kAntagonistSampleIntervalS);
  return buf;
}

std::string MissingSinglesWarning(const ExperimentSpec& spec) {
  if (spec.pairings != Pairings::kExplicit) return "";  // singles, pairs and all plan them
  std::vector<bool> single(spec.antagonists.size(), false),
      combined(spec.antagonists.size(), false);
  for (const auto& g : Groups(spec)) {
    for (int i : g) (g.size() == 1 ? single : combined)[static_cast<size_t>(i)] = true;
  }
  std::string missing;
  for (size_t i = 0; i < spec.antagonists.size(); ++i) {
    if (combined[i] && !single[i])
      missing += (missing.empty() ? "" : ", ") + spec.antagonists[i].name;
  }
  if (missing.empty()) return "";
  return "no singles of " + missing +
         ": the combinations' interaction (combined vs product of singles) cannot be computed; "
         "list each alone too (`- [" +
         missing.substr(0, missing.find(',')) + "]`) or use `pairings: pairs`";
}

std::string PairingKey(const ExperimentSpec& spec, const std::vector<PlannedPart>& parts) {
  if (parts.empty()) return "baseline";
  std::vector<std::pair<std::string, std::string>> named;
  for (const auto& p : parts) {
    std::string value;
    if (p.intensity.absolute || p.intensity.max) {
      value = p.intensity.label;  // "2GiB/s", "max"
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", p.intensity.level);
      value = buf;
    }
    const std::string name =
        p.antagonist >= 0 && p.antagonist < static_cast<int>(spec.antagonists.size())
            ? spec.antagonists[p.antagonist].name
            : "#" + std::to_string(p.antagonist);
    named.emplace_back(name, value);
  }
  std::sort(named.begin(), named.end());
  std::string key;
  for (const auto& [name, value] : named) {
    if (!key.empty()) key += "+";
    key += name + "@" + value;
  }
  return key;
}

}  // namespace codl::experiment
