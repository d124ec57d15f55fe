#include "lib/analysis/trial_metric.h"

#include <cmath>
#include <initializer_list>
#include <numeric>

#include "lib/analysis/stats.h"

namespace codl::experiment {

double TrialMetricValue(const TrialRecord& t, const TrialMetric& metric) {
  std::vector<double> times;
  for (const VictimStep& s : t.steps) {
    if (!s.warmup && std::isfinite(s.step_time_s)) times.push_back(s.step_time_s);
  }
  if (times.empty() && std::isfinite(t.metric) && t.metric > 0) times.push_back(t.metric);
  if (times.empty()) return kNaN;
  const double elapsed = std::accumulate(times.begin(), times.end(), 0.0);
  switch (metric.kind) {
    case TrialMetric::Kind::kThroughput:
      return elapsed > 0 ? static_cast<double>(times.size()) / elapsed : kNaN;
    case TrialMetric::Kind::kMean: return elapsed / static_cast<double>(times.size());
    case TrialMetric::Kind::kMedian: return Median(std::move(times));
    case TrialMetric::Kind::kPercentile:
      return Quantile(std::move(times), metric.percentile / 100.0);
    default: return elapsed;
  }
}

std::vector<TrialMetric> StoredTrialMetrics() {
  std::vector<TrialMetric> out;
  for (const char* name : {"elapsed", "throughput", "mean", "median", "p90", "p99"}) {
    out.push_back(*ParseTrialMetric(name));
  }
  return out;
}

std::vector<std::pair<std::string, double>> AllTrialMetricValues(const TrialRecord& t) {
  std::vector<std::pair<std::string, double>> out;
  for (const TrialMetric& m : StoredTrialMetrics())
    out.emplace_back(m.Name(), TrialMetricValue(t, m));
  return out;
}

}  // namespace codl::experiment
