#include "lib/analysis/pairing_samples.h"

#include <cmath>

#include "lib/analysis/stats.h"

namespace codl::experiment {

std::map<std::string, std::string> ParsePairingKey(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t plus = key.find('+', start);
    std::string piece =
        key.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    if (piece.find('@') == std::string::npos && !parts.empty()) parts.back() += "+" + piece;
    else parts.push_back(piece);
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  std::map<std::string, std::string> out;
  for (const auto& p : parts) {
    const size_t at = p.find('@');
    if (at != std::string::npos) out[p.substr(0, at)] = p.substr(at + 1);
  }
  return out;
}

std::string JoinPairingKey(const std::map<std::string, std::string>& parts) {
  if (parts.empty()) return "baseline";
  std::string key;
  for (const auto& [name, value] : parts) key += (key.empty() ? "" : "+") + name + "@" + value;
  return key;
}

bool IsBaselineTrial(const TrialRecord& t) { return t.baseline || t.pairing == "baseline"; }

double SlowdownFromMedians(double median, double base_median, bool higher_is_faster) {
  const double num = higher_is_faster ? base_median : median;
  const double den = higher_is_faster ? median : base_median;
  return den > 0 ? num / den : kNaN;
}

std::map<std::string, std::vector<double>> MeasuredSamples(const std::vector<TrialRecord>& trials,
                                                           const TrialMetric& metric,
                                                           bool include_flagged) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& t : trials) {
    const bool counts =
        t.state == TrialState::kDone || (include_flagged && t.state == TrialState::kFlagged);
    if (!counts) continue;
    const double x = TrialMetricValue(t, metric);
    if (!std::isfinite(x)) continue;
    out[IsBaselineTrial(t) ? "baseline" : t.pairing].push_back(x);
  }
  return out;
}

uint64_t PairingSeed(uint64_t experiment_seed, const std::string& purpose, const std::string& key) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : purpose + ":" + key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return experiment_seed ^ h;
}

}  // namespace codl::experiment
