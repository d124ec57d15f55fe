#include "lib/analysis/trial_metric.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>

#include "lib/analysis/stats.h"

namespace codl::experiment {

std::string TrialMetric::Name() const {
  switch (kind) {
    case Kind::kThroughput: return "throughput";
    case Kind::kMean: return "mean";
    case Kind::kMedian: return "median";
    case Kind::kPercentile: return "p" + std::to_string(percentile);
    default: return "elapsed";
  }
}

std::string TrialMetric::Unit() const { return kind == Kind::kThroughput ? "steps/s" : "s"; }

Result<TrialMetric> ParseTrialMetric(std::string_view text) {
  TrialMetric m;
  if (text == "elapsed") return m;
  if (text == "throughput") m.kind = TrialMetric::Kind::kThroughput;
  else if (text == "mean") m.kind = TrialMetric::Kind::kMean;
  else if (text == "median") m.kind = TrialMetric::Kind::kMedian;
  else {
    // pNN: exactly one or two digits, 1..99 ("p5", "p95"); no signs, spaces or fractions.
    const bool digits =
        text.size() >= 2 && text.size() <= 3 && text[0] == 'p' &&
        std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int nn = digits ? std::stoi(std::string(text.substr(1))) : 0;
    if (nn < 1 || nn > 99) {
      return InvalidArgument("'" + std::string(text) +
                             "' is not a metric; allowed: " + kAllowedMetrics);
    }
    m.kind = TrialMetric::Kind::kPercentile;
    m.percentile = nn;
  }
  return m;
}

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
