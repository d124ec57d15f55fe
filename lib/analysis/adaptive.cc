#include "lib/analysis/adaptive.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace codl::experiment {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Standard normal quantile by bisection on erfc: only a handful of calls per table, and exact
// to well below what a "smallest detectable slowdown" needs.
double NormalQuantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::string PrecisionPercent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a (no CI yet)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", fraction * 100);
  return buf;
}

}  // namespace

double RelativeHalfWidth(const PairingSummary& p) {
  if (!std::isfinite(p.ci_low) || !std::isfinite(p.ci_high) || !(p.slowdown > 0)) return kInf;
  return (p.ci_high - p.ci_low) / 2 / p.slowdown;
}

PrecisionCheck CheckPrecision(const ExperimentResults& results, double target) {
  PrecisionCheck c;
  c.reached = true;
  for (const auto& p : results.pairings) {
    if (p.baseline) continue;
    const double h = RelativeHalfWidth(p);
    if (!(h <= target)) c.reached = false;
    if (c.widest_pairing.empty() || h > c.widest) {
      c.widest = h;
      c.widest_pairing = p.pairing;
    }
  }
  return c;
}

std::string TargetReachedReason(int blocks) {
  return "target reached after " + std::to_string(blocks) + " blocks";
}

std::string MaxReachedReason(int blocks, const PrecisionCheck& check) {
  return "max reached (" + std::to_string(blocks) + ") with widest half-width " +
         PrecisionPercent(check.widest) + " at pairing " + check.widest_pairing;
}

std::string PrecisionLine(int blocks, const AdaptiveRepetitions& a, const PrecisionCheck& check) {
  return "block " + std::to_string(blocks) + " (min " + std::to_string(a.min) + ", max " +
         std::to_string(a.max) + "): widest half-width " + PrecisionPercent(check.widest) + " at " +
         check.widest_pairing + ", target " + PrecisionPercent(a.ci_halfwidth);
}

double RobustRelativeSpread(const std::vector<double>& baseline) {
  if (baseline.size() < 2) return kNaN;
  const double median = Median(baseline);
  if (!(median > 0)) return kNaN;
  std::vector<double> deviations;
  for (double x : baseline) deviations.push_back(std::fabs(x - median));
  // 1.4826 = 1 / Phi^-1(3/4): the MAD of normal data times this is its SD.
  return 1.4826 * Median(std::move(deviations)) / median;
}

double MinimumDetectableSlowdown(double relative_spread, size_t n, size_t n_base, double alpha,
                                 double power) {
  if (n < 2 || n_base < 2 || !std::isfinite(relative_spread)) return kNaN;
  const double z = NormalQuantile(1 - alpha / 2) + NormalQuantile(power);
  return 1 + z * relative_spread * std::sqrt(1.0 / n + 1.0 / n_base);
}

std::optional<BlocksEstimate> EstimateBlocks(const ExperimentResults& previous,
                                             const AdaptiveRepetitions& a) {
  std::optional<BlocksEstimate> best;
  for (const auto& p : previous.pairings) {
    const double h = RelativeHalfWidth(p);
    if (p.baseline || !std::isfinite(h) || p.n <= 0) continue;
    // One trial of each pairing per block; the half-width shrinks as 1/sqrt(n).
    // (Less a hair before rounding up: 4 % -> 2 % is 4x the trials, not 4x + 1.)
    const double needed = std::ceil(p.n * (h / a.ci_halfwidth) * (h / a.ci_halfwidth) - 1e-9);
    const int blocks = static_cast<int>(std::max<double>(a.min, std::min(needed, 1e6)));
    if (!best || blocks > best->blocks) best = BlocksEstimate{blocks, h, p.n, p.pairing};
  }
  return best;
}

}  // namespace codl::experiment
