#include "lib/analysis/trial_metric.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <numeric>

#include "lib/analysis/stats.h"

namespace codl::experiment {

double TrialMetricValue(const TrialRecord& t, const TrialMetric& metric) {
  if (t.solo) return kNaN;  // a workload's solo run: no victim ran
  std::vector<double> times;
  for (const VictimStep& s : t.steps) {
    if (!s.warmup && std::isfinite(s.step_time_s)) times.push_back(s.step_time_s);
  }
  if (times.empty() && std::isfinite(t.value_s) && t.value_s > 0) times.push_back(t.value_s);
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

std::string MetricLooksWrong(const TrialRecord& t, const ProgressSpec& progress) {
  if (progress.format == ProgressSpec::Format::kWall || !(t.wall_s > 0)) return "";
  std::vector<double> values;
  for (const VictimStep& s : t.steps) {
    if (!s.warmup && std::isfinite(s.step_time_s)) values.push_back(s.step_time_s);
  }
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  if (values.empty() || sum <= 2 * t.wall_s) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "the %zu measured steps add up to %.4g s, %.1fx the victim's "
                "wall time of %.3g s",
                values.size(), sum, sum / t.wall_s, t.wall_s);
  std::string why = buf;
  why += progress.format == ProgressSpec::Format::kRegex
             ? "; progress.pattern '" + progress.pattern + "' captures "
             : "; progress.field '" + progress.field + "' reads ";
  for (size_t i = 0; i < values.size() && i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6g", i ? ", " : "", values[i]);
    why += buf;
  }
  if (values.size() > 4) why += ", ...";
  bool increasing = values.size() >= 3;
  for (size_t i = 1; i < values.size() && increasing; ++i) increasing = values[i] > values[i - 1];
  if (increasing) why += " (only increasing: a counter, not a step time)";
  return why + "; it must be each step's time in seconds";
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
