#include "lib/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "lib/common/random.h"

namespace codl::experiment {
namespace {

constexpr size_t kExactMaxTotal = 50;

// Number of ways each U = 0..m*n arises among the C(m+n, m) equally likely rankings: the
// coefficients of the Gaussian binomial prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i). After every
// full step the polynomial is again a Gaussian binomial, so integer arithmetic stays exact
// (C(50, 25) ~ 1.3e14 fits comfortably in int64).
std::vector<int64_t> UDistribution(size_t m, size_t n) {
  std::vector<int64_t> c(m * n + 1, 0);
  c[0] = 1;
  for (size_t i = 1; i <= m; ++i) {
    const size_t up = n + i;
    for (size_t k = c.size(); k-- > up;) c[k] -= c[k - up];  // * (1 - q^(n+i))
    for (size_t k = i; k < c.size(); ++k) c[k] += c[k - i];  // / (1 - q^i)
  }
  return c;
}

}  // namespace

double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double h = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

ConfidenceInterval PercentileInterval(const std::vector<double>& draws, double confidence) {
  ConfidenceInterval ci;
  if (draws.empty()) return ci;
  const double alpha = 1 - std::clamp(confidence, 0.0, 1.0);
  ci.low = Quantile(draws, alpha / 2);
  ci.high = Quantile(draws, 1 - alpha / 2);
  ci.resamples = static_cast<int64_t>(draws.size());
  return ci;
}

namespace {

// n^n, or limit + 1 once it exceeds limit (no overflow).
int64_t OrderedResamples(size_t n, int64_t limit) {
  int64_t count = 1;
  for (size_t i = 0; i < n; ++i) {
    if (count > limit / static_cast<int64_t>(n)) return limit + 1;
    count *= static_cast<int64_t>(n);
  }
  return count;
}

// The resampled median's distribution over all n^n ordered resamples: value -> count.
std::map<double, int64_t> MedianDistribution(const std::vector<double>& values) {
  const size_t n = values.size();
  std::map<double, int64_t> dist;
  std::vector<size_t> index(n, 0);
  std::vector<double> sample(n);
  while (true) {
    for (size_t i = 0; i < n; ++i) sample[i] = values[index[i]];
    ++dist[Median(sample)];
    size_t pos = 0;  // odometer over index
    while (pos < n && ++index[pos] == n) index[pos++] = 0;
    if (pos == n) break;
  }
  return dist;
}

// R-type-7 quantile of a weighted multiset given as sorted (value, count) pairs.
double WeightedQuantile(const std::vector<std::pair<double, int64_t>>& sorted, int64_t total,
                        double q) {
  const double h = std::clamp(q, 0.0, 1.0) * static_cast<double>(total - 1);
  const auto lo = static_cast<int64_t>(std::floor(h));
  auto at = [&](int64_t k) {  // the k-th smallest (0-based) of the expanded multiset
    int64_t seen = 0;
    for (const auto& [v, c] : sorted) {
      seen += c;
      if (k < seen) return v;
    }
    return sorted.back().first;
  };
  const double a = at(lo), b = at(std::min(lo + 1, total - 1));
  return a + (h - static_cast<double>(lo)) * (b - a);
}

// The exact distribution of op(median(resampled treatment), median(resampled control)); a
// pair op refuses (returns NaN) is left out, as a zero control median is for the ratio.
template <typename Op>
ConfidenceInterval ExactCI(const std::vector<double>& treatment, const std::vector<double>& control,
                           double confidence, Op op) {
  ConfidenceInterval ci;
  const auto t = MedianDistribution(treatment), c = MedianDistribution(control);
  std::map<double, int64_t> values;
  int64_t total = 0;
  for (const auto& [ct, nc] : c) {
    for (const auto& [tv, nt] : t) {
      const double v = op(tv, ct);
      if (std::isnan(v)) continue;
      values[v] += nt * nc;
      total += nt * nc;
    }
  }
  if (total == 0) return ci;
  const std::vector<std::pair<double, int64_t>> sorted(values.begin(), values.end());
  const double alpha = 1 - std::clamp(confidence, 0.0, 1.0);
  ci.low = WeightedQuantile(sorted, total, alpha / 2);
  ci.high = WeightedQuantile(sorted, total, 1 - alpha / 2);
  ci.exact = true;
  ci.resamples = total;
  return ci;
}

// Both intervals: exact enumeration when both sides are small enough, else seeded Monte Carlo.
template <typename Op>
ConfidenceInterval BootstrapMedianCI(const std::vector<double>& treatment,
                                     const std::vector<double>& control,
                                     const BootstrapOptions& options, Op op) {
  if (treatment.empty() || control.empty()) return {};
  if (OrderedResamples(treatment.size(), options.exact_limit) <= options.exact_limit &&
      OrderedResamples(control.size(), options.exact_limit) <= options.exact_limit) {
    return ExactCI(treatment, control, options.confidence, op);
  }
  if (options.resamples <= 0) return {};
  std::mt19937_64 rng(options.seed);
  std::vector<double> draws;
  draws.reserve(static_cast<size_t>(options.resamples));
  std::vector<double> t(treatment.size()), c(control.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (auto& x : t) x = treatment[UniformBelow(rng, treatment.size())];
    for (auto& x : c) x = control[UniformBelow(rng, control.size())];
    const double v = op(Median(t), Median(c));
    if (!std::isnan(v)) draws.push_back(v);
  }
  return PercentileInterval(draws, options.confidence);
}

}  // namespace

ConfidenceInterval BootstrapMedianRatioCI(const std::vector<double>& treatment,
                                          const std::vector<double>& control,
                                          const BootstrapOptions& options) {
  return BootstrapMedianCI(treatment, control, options,
                           [](double t, double c) { return c != 0 ? t / c : kNaN; });
}

ConfidenceInterval BootstrapMedianDifferenceCI(const std::vector<double>& treatment,
                                               const std::vector<double>& control,
                                               const BootstrapOptions& options) {
  return BootstrapMedianCI(treatment, control, options, [](double t, double c) { return t - c; });
}

double MannWhitneyMinP(size_t n_a, size_t n_b) {
  if (n_a == 0 || n_b == 0) return kNaN;
  // C(n_a + n_b, n_a) in floating point: exact enough, and no overflow for large samples.
  double ways = 1;
  for (size_t i = 1; i <= n_a; ++i)
    ways = ways * static_cast<double>(n_b + i) / static_cast<double>(i);
  return std::min(1.0, 2.0 / ways);
}

const char* ToString(MannWhitneyMethod m) {
  switch (m) {
    case MannWhitneyMethod::kExact: return "exact";
    case MannWhitneyMethod::kNormal: return "normal";
    default: return "";
  }
}

MannWhitneyResult MannWhitneyU(const std::vector<double>& a_in, const std::vector<double>& b_in) {
  MannWhitneyResult r;
  // NaN has no rank (and would never end a tie group below): drop non-finite values.
  auto finite = [](const std::vector<double>& v) {
    std::vector<double> out;
    for (double x : v)
      if (std::isfinite(x)) out.push_back(x);
    return out;
  };
  const std::vector<double> a = finite(a_in), b = finite(b_in);
  if (a.empty() || b.empty()) return r;
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;

  // Midranks of the pooled sample, and the tie groups' sizes for the variance correction.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.emplace_back(x, 0);
  for (double x : b) pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& rr) { return l.first < rr.first; });
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += midrank;
    }
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2);
  const double dn = static_cast<double>(n);
  r.u = rank_sum_a - d1 * (d1 + 1) / 2;

  if (!ties && n <= kExactMaxTotal) {
    const std::vector<int64_t> counts = UDistribution(n1, n2);
    const auto u = static_cast<size_t>(std::llround(r.u));
    double total = 0, le = 0, ge = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      const double c = static_cast<double>(counts[k]);
      total += c;
      if (k <= u) le += c;
      if (k >= u) ge += c;
    }
    r.p_value = std::min(1.0, 2 * std::min(le, ge) / total);
    r.method = MannWhitneyMethod::kExact;
    return r;
  }

  r.method = MannWhitneyMethod::kNormal;
  const double mu = d1 * d2 / 2;
  const double var = d1 * d2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (var <= 0) {
    r.p_value = 1;  // every value tied: no evidence of a difference
    return r;
  }
  const double z = std::max(0.0, std::fabs(r.u - mu) - 0.5) / std::sqrt(var);
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

}  // namespace codl::experiment
