#include "lib/spec/trial_metric.h"

#include <algorithm>

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

}  // namespace codl::experiment
