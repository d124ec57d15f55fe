// Descriptive statistics, one definition each, for every binary (std-only, header-only). The
// coefficient of variation here is the one CoDL reports everywhere: an antagonist's
// achieved_cov (codl-inject's summary, the agent's fallback, the controller's victim window),
// a pairing's metric_cov and the noisy-baseline check (lib/analysis).
#pragma once

#include <cmath>
#include <limits>
#include <vector>

namespace codl {

// Arithmetic mean; NaN when empty.
inline double Mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (double x : values) sum += x;
  return sum / static_cast<double>(values.size());
}

// Sample standard deviation: the n - 1 denominator, because the values are a sample of a
// process (the intervals of a run, the trials of a pairing), not the whole of it. NaN when
// empty; 0 for one value.
inline double SampleStdDev(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (values.size() == 1) return 0;
  const double mean = Mean(values);
  double ss = 0;
  for (double x : values) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

// Coefficient of variation: SampleStdDev / |mean|. 0 for one value; NaN (undefined) when empty
// or when the mean is 0.
inline double CoefficientOfVariation(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double mean = Mean(values);
  if (mean == 0) return std::numeric_limits<double>::quiet_NaN();
  return SampleStdDev(values) / std::fabs(mean);
}

// The same, 0 where it is undefined: achieved_cov's convention ("no variation measured"), so
// that no NaN travels through an injector's summary, the wire and the store.
inline double CoefficientOfVariationOrZero(const std::vector<double>& values) {
  const double cov = CoefficientOfVariation(values);
  return std::isnan(cov) ? 0 : cov;
}

}  // namespace codl
