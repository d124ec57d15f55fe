// codl-prediction-bench: the known-by-construction half of the prediction benchmark
// (docs/validity.md, "Interaction and prediction"). Simulated victims with known sensitivity
// curves -- membw-like linear S_A(x) = 1 + 0.8x, cpu-like convex S_B(y) = 1 + 0.6y^2 -- and a
// known combination rule are measured as an experiment would be (baseline, singles at 0.25,
// 0.5 and 1, every pair; lognormal trial noise), then predicted by the real PredictSlowdowns
// (multiplicative model). Prints CSV: per rule and noise, the MAPE of the pair predictions
// against the measured and the true slowdowns, of left-out singles (interpolation), and how
// often the 95% CI of a pair prediction holds the truth.
// Usage: codl-prediction-bench [EXPERIMENTS [SEED]]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/predict.h"

namespace {

using codl::experiment::ParsePairingKey;

enum class Rule { kMultiplicative, kAdditive, kSuperAdditive };
const char* Name(Rule r) {
  return r == Rule::kMultiplicative ? "multiplicative"
         : r == Rule::kAdditive     ? "additive"
                                    : "super-additive(+10%xy)";
}

double SA(double x) { return 1 + 0.8 * x; }
double SB(double y) { return 1 + 0.6 * y * y; }

// The true slowdown of a pairing key ("a@0.5+b@0.25", "a@1", "baseline").
double Truth(const std::string& key, Rule rule) {
  const auto parts = ParsePairingKey(key);
  const double x = parts.count("a") ? std::atof(parts.at("a").c_str()) : 0;
  const double y = parts.count("b") ? std::atof(parts.at("b").c_str()) : 0;
  switch (rule) {
    case Rule::kAdditive: return SA(x) + SB(y) - 1;
    case Rule::kSuperAdditive: return SA(x) * SB(y) * (1 + 0.1 * x * y);
    default: return SA(x) * SB(y);
  }
}

std::string Key(double x, double y) {
  char buf[64];
  if (x > 0 && y > 0) std::snprintf(buf, sizeof buf, "a@%g+b@%g", x, y);
  else if (x > 0) std::snprintf(buf, sizeof buf, "a@%g", x);
  else std::snprintf(buf, sizeof buf, "b@%g", y);
  return buf;
}

// One simulated experiment: `reps` trials per pairing, `reps` * 3 baselines; base time 10 s.
std::map<std::string, std::vector<double>> Simulate(Rule rule, double cov, int reps,
                                                    std::mt19937_64& rng) {
  const double sigma = std::sqrt(std::log(1 + cov * cov));
  std::normal_distribution<double> noise(0, sigma);
  auto trials = [&](double slowdown, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(10 * slowdown * std::exp(noise(rng)));
    return v;
  };
  std::map<std::string, std::vector<double>> s;
  s["baseline"] = trials(1, reps * 3);
  const double levels[] = {0.25, 0.5, 1.0};
  for (double x : levels) {
    s[Key(x, 0)] = trials(Truth(Key(x, 0), rule), reps);
    s[Key(0, x)] = trials(Truth(Key(0, x), rule), reps);
    for (double y : levels) s[Key(x, y)] = trials(Truth(Key(x, y), rule), reps);
  }
  return s;
}

struct Score {
  std::vector<double> vs_measured, vs_truth, interp_vs_truth;
  int covered = 0, pairs = 0;
};

void Add(const codl::experiment::PredictionReport& r, Rule rule, Score* s) {
  for (const auto& p : r.predictions) {
    const double truth = Truth(p.combination, rule);
    if (p.left_out) {
      s->interp_vs_truth.push_back(std::fabs(p.predicted / truth - 1));
      continue;
    }
    s->vs_measured.push_back(std::fabs(p.error));
    s->vs_truth.push_back(std::fabs(p.predicted / truth - 1));
    s->covered += p.ci_low <= truth && truth <= p.ci_high;
    ++s->pairs;
  }
}

double MeanPercent(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? NAN : 100 * sum / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  const int experiments = argc > 1 ? std::atoi(argv[1]) : 100;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::printf(
      "rule,trial_cov,repetitions,experiments,pairs_mape_vs_measured,pairs_mape_vs_truth,"
      "singles_left_out_mape_vs_truth,pair_ci_coverage_of_truth\n");
  for (Rule rule : {Rule::kMultiplicative, Rule::kAdditive, Rule::kSuperAdditive}) {
    for (double cov : {0.01, 0.03, 0.05}) {
      const int reps = 5;
      std::mt19937_64 rng(seed);
      Score score;
      for (int e = 0; e < experiments; ++e) {
        codl::experiment::PredictOptions o;
        o.resamples = 500;
        o.seed = seed + static_cast<uint64_t>(e);
        auto r = codl::experiment::PredictSlowdowns(Simulate(rule, cov, reps, rng), {}, o);
        if (!r.ok()) {
          std::fprintf(stderr, "codl-prediction-bench: %s\n", r.error().c_str());
          return 1;
        }
        Add(*r, rule, &score);
      }
      std::printf("%s,%.2f,%d,%d,%.2f,%.2f,%.2f,%.3f\n", Name(rule), cov, reps, experiments,
                  MeanPercent(score.vs_measured), MeanPercent(score.vs_truth),
                  MeanPercent(score.interp_vs_truth),
                  score.pairs ? static_cast<double>(score.covered) / score.pairs : NAN);
      std::fflush(stdout);
    }
  }
  return 0;
}
