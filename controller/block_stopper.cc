#include "controller/block_stopper.h"

#include "lib/analysis/adaptive.h"
#include "lib/analysis/results.h"
#include "lib/spec/trial_metric.h"

namespace codl::controller {

BlockStopper::BlockStopper(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec)
    : exp_(exp), adaptive_(spec.adaptive), metric_(spec.victim.metric) {}

bool BlockStopper::ClosesBlock(const std::vector<experiment::PlannedTrial>& plan, size_t i) {
  return i + 1 >= plan.size() || plan[i + 1].repetition != plan[i].repetition;
}

BlockStopper::Verdict BlockStopper::AfterBlock(int blocks) const {
  Verdict v;
  if (blocks < adaptive_.min) return v;
  // The figures `codlctl results` will show: same metric, same seeded bootstrap, so the
  // precision the run stopped at is the precision the user reads.
  experiment::SummarizeOptions options;
  options.metric = metric_;
  const auto results = experiment::Summarize(exp_, trials_, options);
  const auto check = experiment::CheckPrecision(results, adaptive_.ci_halfwidth);
  v.checked = true;
  v.precision = experiment::PrecisionLine(blocks, adaptive_, check);
  if (check.reached) {
    v.stop = true;
    v.reason = experiment::TargetReachedReason(blocks);
  } else if (blocks >= adaptive_.max) {
    v.stop = true;
    v.reason = experiment::MaxReachedReason(blocks, check);
  }
  return v;
}

}  // namespace codl::controller
