// The ranks of a victim run as several ranks (victim.distributed): each rank's summary from its
// steps, and per pairing the ranks' medians, their spread and the slowest rank. A synchronous
// job's ranks all take the same step time (each waits for the slowest in its collectives), so
// ranks are compared by their busy time: step time minus comm_s, what a rank did itself. The
// rank with the largest busy time is the one the others wait for.
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/stats.h"
#include "lib/common/records.h"

namespace codl::experiment {

// The slowest rank is named when its busy median is more than this fraction above the median
// rank's (docs/results.md, "Ranks").
inline constexpr double kSlowestRankBehind = 0.05;

// Fills r->step_median_s and r->busy_median_s from `steps` (measured ones only; 0 without any).
// A step without comm_s is all busy time.
void SummarizeRankSteps(const std::vector<VictimStep>& steps, RankRecord* r);

struct RankFigure {
  int rank = 0;
  std::string node;
  int trials = 0;               // counted trials in which this rank reported steps
  double busy_median_s = kNaN;  // median over those trials of the rank's busy_median_s
  double step_median_s = kNaN;  // likewise of its step_median_s
};

struct RankSpread {
  std::vector<RankFigure> ranks;  // rank order; empty when no counted trial had several ranks
  double median_busy_s = kNaN;    // the median rank's busy time (median over ranks)
  double spread = kNaN;           // (largest - smallest busy median) / median_busy_s
  int slowest = -1;               // the rank with the largest busy median (-1: none)
  double behind = kNaN;           // its busy median / median_busy_s - 1
  // Whether the slowest rank is far enough behind to name (behind > kSlowestRankBehind).
  bool SlowestNamed() const { return slowest >= 0 && behind > kSlowestRankBehind; }
};

// Over `trials` that count (state done) and have ranks with steps.
RankSpread SpreadOfRanks(const std::vector<const TrialRecord*>& trials);

}  // namespace codl::experiment
