// The measured singles and their places on the curves (predict_singles.h).
#include "lib/analysis/predict_singles.h"

#include <cmath>
#include <cstdio>

#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/stats.h"
#include "lib/common/units.h"

namespace codl::experiment::predict_singles {
namespace {

// `max` (open loop, no requested intensity) sits where the antagonist's single at max was
// measured: its achieved level on a curve of levels, its achieved rate on a curve of rates.
// `absolute`: the curve's kind, unknown when the antagonist has no other single (a level then,
// where one was recorded).
Result<Position> MaxPosition(const std::string& name, const AtMax& at_max,
                             std::optional<bool> absolute) {
  const auto it = at_max.find(name);
  if (it == at_max.end()) {
    return InvalidArgument(name + "@max: an open-loop intensity is placed where its single " +
                           name + "@max was measured, and no measured trial of that single " +
                           "recorded what it achieved");
  }
  const bool has_level = std::isfinite(it->second.level) && it->second.level > 0;
  const bool has_rate = std::isfinite(it->second.rate) && it->second.rate > 0;
  Position p;
  p.label = "max";
  if (absolute.value_or(!has_level)) {
    if (!has_rate) {
      return InvalidArgument(name + "@max: its single's trials recorded no achieved rate, so " +
                             "it has no place on a curve of rates");
    }
    p.x = it->second.rate;
    p.absolute = true;
    return p;
  }
  if (!has_level) {
    return InvalidArgument(name + "@max: its single's trials recorded no calibrated peak, so " +
                           "its achieved level (a fraction of peak) is unknown");
  }
  p.x = it->second.level;
  return p;
}

}  // namespace

Result<Position> PositionOf(const std::string& name, const std::string& label, const AtMax& at_max,
                            std::optional<bool> absolute) {
  if (label == "max") return MaxPosition(name, at_max, absolute);
  Position p;
  if (auto level = ParseNumber(label); level.ok()) {
    if (*level < 0 || *level > 1) {
      return InvalidArgument(name + "@" + label + ": a level is a fraction of peak in [0, 1]");
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *level);
    p.x = *level;
    p.label = buf;
    return p;
  }
  auto rate = ParseRate(label);
  if (!rate.ok()) {
    return InvalidArgument(name + "@" + label + ": neither a level (0.5) nor a rate (2GiB/s)");
  }
  p.x = rate->value;
  p.absolute = true;
  p.label = label;
  return p;
}

// The singles at a level or rate, then those at `max` placed on their curve's kind (singles
// at max without a recorded achieved intensity are left out: PredictSlowdowns says why).
std::vector<Single> CollectSingles(const std::map<std::string, std::vector<double>>& samples,
                                   const AtMax& at_max) {
  std::vector<Single> out;
  std::map<std::string, bool> kind;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [key, values] : samples) {
      const auto parts = ParsePairingKey(key);
      if (parts.size() != 1 || values.empty()) continue;
      const auto& [name, label] = *parts.begin();
      if ((label == "max") != (pass == 1)) continue;
      const auto k = kind.find(name);
      auto at = PositionOf(name, label, at_max,
                           k == kind.end() ? std::nullopt : std::optional<bool>(k->second));
      if (!at.ok()) continue;
      if (pass == 0) kind.emplace(name, at->absolute);
      out.push_back({name, key, *at});
    }
  }
  return out;
}

Status CheckKinds(const std::vector<Single>& singles) {
  std::map<std::string, bool> kind;
  for (const auto& s : singles) {
    auto [it, fresh] = kind.emplace(s.name, s.at.absolute);
    if (!fresh && it->second != s.at.absolute) {
      return InvalidArgument("'" + s.name +
                             "' has singles at both levels and rates: one curve cannot hold both");
    }
  }
  return Status::Ok();
}

std::map<std::string, double> MediansOf(const std::map<std::string, std::vector<double>>& s) {
  std::map<std::string, double> m;
  for (const auto& [key, values] : s) m[key] = Median(values);
  return m;
}

double MeanAbsPercent(const std::vector<double>& errors) {
  if (errors.empty()) return kNaN;
  double sum = 0;
  for (double e : errors) sum += std::fabs(e);
  return 100 * sum / static_cast<double>(errors.size());
}

}  // namespace codl::experiment::predict_singles
