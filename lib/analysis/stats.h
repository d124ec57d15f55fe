// Small, deterministic statistics for slowdown summaries: medians, coefficient of variation, a
// seeded bootstrap CI of a ratio of medians, and the Mann-Whitney U test. std-only; every
// function returns NaN (never throws) when its input is too small to say anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "lib/common/statistics.h"

namespace codl::experiment {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Median(std::vector<double> values);  // NaN when empty
// Mean, SampleStdDev and CoefficientOfVariation: lib/common/statistics.h (one definition).
using codl::CoefficientOfVariation;
using codl::Mean;
using codl::SampleStdDev;
// Linear interpolation between order statistics (R type 7, numpy's default); q in [0, 1].
double Quantile(std::vector<double> values, double q);

struct ConfidenceInterval {
  double low = kNaN;
  double high = kNaN;
  bool exact = false;     // every resample enumerated (no Monte Carlo error)
  int64_t resamples = 0;  // resamples the bounds rest on (exact: all ordered resamples)
};

// The percentile interval of bootstrap draws at `confidence` (clamped to [0, 1]); no bounds
// (NaN) when there are no draws.
ConfidenceInterval PercentileInterval(const std::vector<double>& draws, double confidence);

struct BootstrapOptions {
  int resamples = 10000;  // Monte Carlo resamples when enumeration is too large
  double confidence = 0.95;
  uint64_t seed = 42;
  // Enumerate every resample of a side when its count, n^n, is at most this (n <= 7 at the
  // default): the exact bootstrap distribution, with no Monte Carlo error.
  int64_t exact_limit = 1'000'000;
};

// Percentile-bootstrap CI of median(treatment) / median(control).
//  * exact when n^n <= options.exact_limit for both samples: the distribution of each side's
//    resampled median is enumerated over all n^n equally likely ordered resamples, the ratio
//    distribution is their product, and the bounds are its R-type-7 quantiles;
//  * otherwise options.resamples Monte Carlo resamples draw both samples with replacement
//    (sizes kept) from a std::mt19937_64 seeded with options.seed, with a portable
//    uniform-integer mapping, so the interval is identical on every platform.
// Resamples whose control median is 0 are skipped. NaN bounds when either sample is empty.
// With one value per side the interval has zero width: it cannot mean anything, and callers
// should report it as unavailable (n < 3).
ConfidenceInterval BootstrapMedianRatioCI(const std::vector<double>& treatment,
                                          const std::vector<double>& control,
                                          const BootstrapOptions& options = {});
// The same resampling (exact or Monte Carlo, the same seed) for median(treatment) -
// median(control): e.g. the milliseconds a phase adds per step (lib/analysis/attribution.h).
ConfidenceInterval BootstrapMedianDifferenceCI(const std::vector<double>& treatment,
                                               const std::vector<double>& control,
                                               const BootstrapOptions& options = {});

enum class MannWhitneyMethod { kNone, kExact, kNormal };
const char* ToString(MannWhitneyMethod m);  // "", "exact", "normal"

struct MannWhitneyResult {
  double u = kNaN;        // U of `a`: pairs with a > b, plus half the tied pairs
  double p_value = kNaN;  // two-sided
  MannWhitneyMethod method = MannWhitneyMethod::kNone;
};

// Two-sided Mann-Whitney U test of `a` against `b`.
//  * exact: no ties and n_a + n_b <= 50. The null distribution of U is counted exactly (the
//    coefficients of the Gaussian binomial [n_a+n_b choose n_a]_q); p = min(1, 2 * min(P(U <= u),
//    P(U >= u))).
//  * normal otherwise: z = (|U - n_a n_b / 2| - 0.5) / sigma with the tie-corrected
//    sigma^2 = n_a n_b / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), p = erfc(z / sqrt 2);
//    p = 1 when every value is tied.
// NaN p (method kNone) when either sample is empty.
MannWhitneyResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

// The smallest two-sided p the exact test can give for samples of these sizes:
// min(1, 2 / C(n_a + n_b, n_a)) — 0.1 for 3 against 3, 0.333 for 2 against 2. When it exceeds
// alpha, no outcome of the experiment can be significant. NaN when either size is 0.
double MannWhitneyMinP(size_t n_a, size_t n_b);

}  // namespace codl::experiment
