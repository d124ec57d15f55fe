#include "lib/analysis/rank_summary.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace codl::experiment {

void SummarizeRankSteps(const std::vector<VictimStep>& steps, RankRecord* r) {
  std::vector<double> step_times, busy;
  for (const VictimStep& s : steps) {
    if (s.warmup) continue;
    step_times.push_back(s.step_time_s);
    auto comm = s.phases.find("comm_s");
    const double waited = comm == s.phases.end() ? 0 : comm->second;
    busy.push_back(std::max(0.0, s.step_time_s - waited));
  }
  r->step_median_s = step_times.empty() ? 0 : Median(step_times);
  r->busy_median_s = busy.empty() ? 0 : Median(busy);
}

RankSpread SpreadOfRanks(const std::vector<const TrialRecord*>& trials) {
  struct Values {
    std::string node;
    std::vector<double> busy, step;
  };
  std::map<int, Values> by_rank;
  for (const TrialRecord* t : trials) {
    if (t->state != TrialState::kDone || t->ranks.size() < 2) continue;
    for (const RankRecord& r : t->ranks) {
      if (r.step_median_s <= 0) continue;  // reported no steps
      Values& v = by_rank[r.rank];
      if (v.node.empty()) v.node = r.node;
      v.busy.push_back(r.busy_median_s);
      v.step.push_back(r.step_median_s);
    }
  }
  RankSpread out;
  if (by_rank.size() < 2) return out;
  std::vector<double> medians;
  for (auto& [rank, v] : by_rank) {
    RankFigure f{rank, v.node, static_cast<int>(v.busy.size()), Median(v.busy), Median(v.step)};
    medians.push_back(f.busy_median_s);
    out.ranks.push_back(std::move(f));
  }
  out.median_busy_s = Median(medians);
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  if (!(out.median_busy_s > 0)) return out;
  out.spread = (*hi - *lo) / out.median_busy_s;
  const RankFigure& slowest = out.ranks[static_cast<size_t>(hi - medians.begin())];
  out.slowest = slowest.rank;
  out.behind = slowest.busy_median_s / out.median_busy_s - 1;
  return out;
}

}  // namespace codl::experiment
