#include "controller/eta.h"

#include <algorithm>

namespace codl::controller {

EtaModel::EtaModel(std::vector<experiment::PlannedTrial> plan, double estimate_s, double settle_s)
    : plan_(std::move(plan)),
      done_(plan_.size(), false),
      estimate_s_(estimate_s),
      settle_s_(settle_s) {}

void EtaModel::OnTrialDone(int index, double seconds) {
  if (index < 0 || index >= static_cast<int>(plan_.size()) || done_[index]) return;
  done_[index] = true;
  const int kind = plan_[index].baseline ? 1 : 0;
  sum_[kind] += std::max(0.0, seconds);
  ++count_[kind];
}

double EtaModel::MeanOf(bool baseline) const {
  const int kind = baseline ? 1 : 0;
  return count_[kind] > 0 ? sum_[kind] / count_[kind] : -1;
}

double EtaModel::RemainingSeconds(double elapsed_s) const {
  const double baseline = MeanOf(true);
  const double loaded = MeanOf(false);
  if (baseline < 0 && loaded < 0) return std::max(0.0, estimate_s_ - elapsed_s);
  // A kind not measured yet is the other kind plus or minus the settle wait.
  const double per_baseline = baseline >= 0 ? baseline : std::max(0.0, loaded - settle_s_);
  const double per_loaded = loaded >= 0 ? loaded : baseline + settle_s_;
  double left = 0;
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (!done_[i]) left += plan_[i].baseline ? per_baseline : per_loaded;
  }
  return left;
}

}  // namespace codl::controller
