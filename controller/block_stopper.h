// BlockStopper: the stopping rule of adaptive repetitions (`repetitions: {min, max,
// ci_halfwidth}`). The plan holds max whole blocks; after each block from min on, the trials so
// far are summarized as `codlctl results` would (same metric, same seeded bootstrap) and the
// runner stops once every pairing's relative CI half-width is at most the target, or after max
// blocks. docs/validity.md, "Adaptive repetitions".
#pragma once

#include <string>
#include <vector>

#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::controller {

class BlockStopper {
 public:
  BlockStopper(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec);

  // Whether plan[i] is the last trial of its block (the plan ends, or the next trial belongs to
  // the next repetition).
  static bool ClosesBlock(const std::vector<experiment::PlannedTrial>& plan, size_t i);

  void Add(const TrialRecord& trial) { trials_.push_back(trial); }

  struct Verdict {
    bool checked = false;  // false before min blocks: nothing was computed
    bool stop = false;
    std::string reason;     // when stop: the stop reason to record
    std::string precision;  // when checked: "block 7 (min 5, max 40): widest half-width ..."
  };
  // After `blocks` whole blocks have run.
  Verdict AfterBlock(int blocks) const;

 private:
  ExperimentRecord exp_;
  experiment::AdaptiveRepetitions adaptive_;
  experiment::TrialMetric metric_;  // victim.metric
  std::vector<TrialRecord> trials_;
};

}  // namespace codl::controller
