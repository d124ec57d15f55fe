// EtaModel: the time left in a running experiment. Before any trial has finished it is the
// plan's estimate counting down; after that each remaining trial costs what finished trials of
// its kind (baseline or with antagonists: the latter include the settle wait) measured, so a
// slow calibration or dataset generation before trial 1 does not inflate every later trial
// (the old elapsed/completed × remaining was 6× off after the first trial of the quickstart).
#pragma once

#include <vector>

#include "lib/spec/spec.h"

namespace codl::controller {

class EtaModel {
 public:
  // `estimate_s`: the plan's estimate of the whole experiment; `settle_s`: the settle wait a
  // trial with antagonists adds over a baseline.
  EtaModel(std::vector<experiment::PlannedTrial> plan, double estimate_s, double settle_s);

  // Trial `index` (plan order) took `seconds` from start to end.
  void OnTrialDone(int index, double seconds);

  // Seconds left, `elapsed_s` after the experiment started; 0 when nothing is left.
  double RemainingSeconds(double elapsed_s) const;

 private:
  double MeanOf(bool baseline) const;  // < 0 when no trial of that kind has finished

  std::vector<experiment::PlannedTrial> plan_;
  std::vector<bool> done_;
  double estimate_s_;
  double settle_s_;
  double sum_[2] = {0, 0};  // [baseline]
  int count_[2] = {0, 0};
};

}  // namespace codl::controller
