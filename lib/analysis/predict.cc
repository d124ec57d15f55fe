#include "lib/analysis/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <utility>

#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/predict_singles.h"
#include "lib/common/random.h"
#include "lib/common/units.h"
#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

struct Curve {
  bool absolute = false;
  SensitivityCurve fit;
  std::vector<CurvePoint> measured;
};

// Curves from the medians of one (possibly resampled) data set; `exclude` is left out.
std::map<std::string, Curve> FitCurves(const std::vector<predict_singles::Single>& singles,
                                       const std::map<std::string, double>& medians,
                                       const std::map<std::string, int>& counts,
                                       const std::string& exclude, bool higher_is_faster) {
  std::map<std::string, Curve> curves;
  const double base = medians.at("baseline");
  for (const auto& s : singles) {
    if (s.key == exclude) continue;
    const double slowdown = SlowdownFromMedians(medians.at(s.key), base, higher_is_faster);
    if (!std::isfinite(slowdown)) continue;
    Curve& c = curves[s.name];
    c.absolute = s.at.absolute;  // a mixed curve is refused before fitting (CheckKinds)
    c.measured.push_back({s.at.x, slowdown, counts.at(s.key), s.at.label == "max"});
  }
  for (auto& [name, c] : curves) c.fit = SensitivityCurve::Fit(c.measured);
  return curves;
}

struct Query {
  std::string key;
  std::vector<std::pair<std::string, predict_singles::Position>> parts;  // name order
};

Result<Query> ParseQuery(const std::string& text, const predict_singles::AtMax& at_max,
                         const std::map<std::string, Curve>& curves) {
  const auto parts = ParsePairingKey(text);
  if (parts.empty()) {
    return InvalidArgument("'" + text + "': expected NAME@INTENSITY[+NAME@INTENSITY...]");
  }
  Query q;
  std::map<std::string, std::string> canonical;
  for (const auto& [name, label] : parts) {
    const auto c = curves.find(name);
    auto at = predict_singles::PositionOf(
        name, label, at_max,
        c == curves.end() ? std::nullopt : std::optional<bool>(c->second.absolute));
    if (!at.ok()) return at.status();
    q.parts.emplace_back(name, *at);
    canonical[name] = at->label;
  }
  q.key = JoinPairingKey(canonical);
  return q;
}

struct Point {
  std::vector<double> singles;
  double value = kNaN;
  bool extrapolated = false;
};

Point PredictWith(const std::map<std::string, Curve>& curves, const Query& q,
                  CombinationModel model) {
  Point p;
  double product = 1, additive = 1;
  for (const auto& [name, at] : q.parts) {
    const auto it = curves.find(name);
    if (it == curves.end()) return p;  // a resample left this curve without points
    const double s = it->second.fit.At(at.x);
    p.singles.push_back(s);
    p.extrapolated = p.extrapolated || it->second.fit.Extrapolates(at.x);
    product *= s;
    additive += s - 1;
  }
  p.value = model == CombinationModel::kMultiplicative ? product : additive;
  return p;
}

// Every name a query uses must have a curve of the same kind (levels or rates).
Status CheckQuery(const Query& q, const std::map<std::string, Curve>& curves) {
  for (const auto& [name, at] : q.parts) {
    const auto it = curves.find(name);
    if (it == curves.end()) {
      std::string known;
      for (const auto& [n, c] : curves) known += (known.empty() ? "" : ", ") + n;
      return InvalidArgument(q.key + ": no singles of '" + name +
                             "' in this experiment (antagonists with singles: " +
                             (known.empty() ? "none" : known) + ")");
    }
    if (it->second.absolute != at.absolute) {
      return InvalidArgument(q.key + ": '" + name + "' was measured at " +
                             (it->second.absolute ? "rates" : "levels") + ", asked at " +
                             (at.absolute ? "a rate" : "a level"));
    }
  }
  return Status::Ok();
}

// The default questions: every measured combination, then every measured single whose curve
// has another point to predict it from (it is left out).
std::vector<std::string> DefaultQueries(const std::map<std::string, std::vector<double>>& samples,
                                        const std::vector<predict_singles::Single>& singles) {
  std::vector<std::string> out;
  for (const auto& [key, values] : samples) {
    if (ParsePairingKey(key).size() >= 2 && !values.empty()) out.push_back(key);
  }
  std::map<std::string, int> per_name;
  for (const auto& s : singles) ++per_name[s.name];
  for (const auto& s : singles) {
    if (per_name[s.name] >= 2) out.push_back(s.key);
  }
  return out;
}

// The data one experiment's predictions rest on.
struct SinglesData {
  const std::map<std::string, std::vector<double>>& samples;
  std::vector<predict_singles::Single> singles;
  std::map<std::string, int> counts;
  std::map<std::string, double> medians;
  PredictOptions options;
  std::map<std::string, Curve> curves;  // from every single

  std::map<std::string, Curve> Fit(const std::map<std::string, double>& m,
                                   const std::string& exclude) const {
    return FitCurves(singles, m, counts, exclude, options.higher_is_faster);
  }

  // The medians of one bootstrap resample of the baseline and every single.
  std::map<std::string, double> ResampledMedians(std::mt19937_64& rng) const {
    std::map<std::string, double> m = medians;
    std::vector<std::string> keys{"baseline"};
    for (const auto& s : singles) keys.push_back(s.key);
    for (const auto& key : keys) {
      const auto& v = samples.at(key);
      std::vector<double> resampled(v.size());
      for (auto& x : resampled) x = v[UniformBelow(rng, v.size())];
      m[key] = Median(std::move(resampled));
    }
    return m;
  }
};

Prediction PredictOne(const SinglesData& profile, const Query& q) {
  const PredictOptions& o = profile.options;
  Prediction p;
  p.combination = q.key;
  const auto measured = profile.samples.find(q.key);
  const bool is_measured = measured != profile.samples.end() && !measured->second.empty();
  p.left_out = is_measured && q.parts.size() == 1;
  const std::string exclude = p.left_out ? q.key : "";
  const Point point =
      PredictWith(p.left_out ? profile.Fit(profile.medians, exclude) : profile.curves, q, o.model);
  p.single_slowdowns = point.singles;
  p.predicted = point.value;
  p.extrapolated = point.extrapolated;
  std::mt19937_64 rng(PairingSeed(o.seed, "predict", q.key));
  std::vector<double> draws;
  for (int r = 0; r < o.resamples; ++r) {
    const double v =
        PredictWith(profile.Fit(profile.ResampledMedians(rng), exclude), q, o.model).value;
    if (std::isfinite(v)) draws.push_back(v);
  }
  const ConfidenceInterval ci = PercentileInterval(draws, o.confidence);
  p.ci_low = ci.low;
  p.ci_high = ci.high;
  if (is_measured) {
    p.n_measured = static_cast<int>(measured->second.size());
    p.measured = SlowdownFromMedians(profile.medians.at(q.key), profile.medians.at("baseline"),
                                     o.higher_is_faster);
    if (p.measured > 0 && std::isfinite(p.predicted)) p.error = p.predicted / p.measured - 1;
  }
  return p;
}

// MAPE over the predictions with a measurement, overall and by kind, and the largest error.
void SummarizeErrors(PredictionReport* r) {
  std::vector<double> all, combinations, interpolations;
  for (const auto& p : r->predictions) {
    if (!std::isfinite(p.error)) continue;
    all.push_back(p.error);
    (p.left_out ? interpolations : combinations).push_back(p.error);
    const double abs = 100 * std::fabs(p.error);
    r->max_abs_error = std::isfinite(r->max_abs_error) ? std::max(r->max_abs_error, abs) : abs;
  }
  r->n_compared = static_cast<int>(all.size());
  r->mape = predict_singles::MeanAbsPercent(all);
  r->mape_combinations = predict_singles::MeanAbsPercent(combinations);
  r->mape_interpolations = predict_singles::MeanAbsPercent(interpolations);
}

}  // namespace

SensitivityCurve SensitivityCurve::Fit(std::vector<CurvePoint> points) {
  // Pool points at one intensity (their weighted mean), then pool adjacent violators: a block
  // whose mean falls below the previous block's merges with it. The origin is fixed at 1: for
  // isotonic regression a lower bound is met by clamping the unbounded fit, so values below 1
  // become 1.
  std::sort(points.begin(), points.end(),
            [](const CurvePoint& a, const CurvePoint& b) { return a.x < b.x; });
  struct Block {
    double sum, weight;
    std::vector<double> xs;
    double Mean() const { return sum / weight; }
  };
  std::vector<Block> blocks;
  for (const auto& p : points) {
    if (!(p.x > 0) || !std::isfinite(p.slowdown)) continue;
    const double w = std::max(1, p.n);
    if (!blocks.empty() && blocks.back().xs.back() == p.x) {
      blocks.back().sum += w * p.slowdown;
      blocks.back().weight += w;
    } else {
      blocks.push_back({w * p.slowdown, w, {p.x}});
    }
    while (blocks.size() > 1 && blocks.back().Mean() < blocks[blocks.size() - 2].Mean()) {
      Block last = std::move(blocks.back());
      blocks.pop_back();
      blocks.back().sum += last.sum;
      blocks.back().weight += last.weight;
      blocks.back().xs.insert(blocks.back().xs.end(), last.xs.begin(), last.xs.end());
    }
  }
  SensitivityCurve c;  // starts with the knot (0, 1)
  for (const auto& b : blocks) {
    for (double x : b.xs) c.knots_.push_back({x, std::max(1.0, b.Mean()), 0});
  }
  return c;
}

double SensitivityCurve::At(double x) const {
  if (!(x >= 0)) return kNaN;
  const auto& k = knots_;
  if (k.size() == 1) return k[0].slowdown;
  size_t hi = 1;
  while (hi + 1 < k.size() && k[hi].x < x) ++hi;  // the segment holding x, or the last one
  const CurvePoint &a = k[hi - 1], &b = k[hi];
  const double slope = std::max(0.0, (b.slowdown - a.slowdown) / (b.x - a.x));
  return a.slowdown + slope * (x - a.x);
}

std::map<std::string, AchievedAtMax> AchievedAtMaxOf(const std::vector<TrialRecord>& trials,
                                                     bool include_flagged) {
  struct Sums {
    double level = 0, rate = 0;
    int n_level = 0, n_rate = 0;
  };
  std::map<std::string, Sums> sums;
  for (const auto& t : trials) {
    const bool measured =
        t.state == TrialState::kDone || (include_flagged && t.state == TrialState::kFlagged);
    if (!measured || t.antagonists.size() != 1) continue;
    const auto parts = ParsePairingKey(t.pairing);
    if (parts.size() != 1 || parts.begin()->second != "max") continue;
    const AntagonistResult& a = t.antagonists.front();
    if (a.name != parts.begin()->first) continue;
    if (!std::isfinite(a.achieved_rate) || a.achieved_rate <= 0) continue;
    Sums& s = sums[a.name];
    s.rate += a.achieved_rate;
    ++s.n_rate;
    if (std::isfinite(a.peak_rate) && a.peak_rate > 0) {
      s.level += a.achieved_rate / a.peak_rate;
      ++s.n_level;
    }
  }
  std::map<std::string, AchievedAtMax> out;
  for (const auto& [name, s] : sums) {
    AchievedAtMax& m = out[name];
    m.rate = s.rate / s.n_rate;
    if (s.n_level) m.level = s.level / s.n_level;
  }
  return out;
}

const char* ToString(CombinationModel m) {
  return m == CombinationModel::kAdditive ? "additive" : "multiplicative";
}

Result<CombinationModel> ParseCombinationModel(const std::string& name) {
  if (name == "multiplicative") return CombinationModel::kMultiplicative;
  if (name == "additive") return CombinationModel::kAdditive;
  return InvalidArgument("model '" + name + "': multiplicative | additive");
}

Result<PredictionReport> PredictSlowdowns(const std::map<std::string, std::vector<double>>& samples,
                                          const std::vector<std::string>& queries,
                                          const PredictOptions& options) {
  const auto base = samples.find("baseline");
  if (base == samples.end() || base->second.empty()) {
    return FailedPrecondition("no measured baseline trials: no slowdown to build a profile from");
  }
  auto singles = predict_singles::CollectSingles(samples, options.at_max);
  auto medians = predict_singles::MediansOf(samples);
  SinglesData profile{samples, std::move(singles), {}, std::move(medians), options, {}};
  if (profile.singles.empty()) {
    // Singles at `max` only, and none recorded what it achieved: measured, but with no place
    // on a curve. Say so by name rather than "no singles".
    std::string max_only;
    for (const auto& [key, values] : samples) {
      const auto parts = ParsePairingKey(key);
      if (parts.size() == 1 && parts.begin()->second == "max" && !values.empty())
        max_only += (max_only.empty() ? "" : ", ") + key;
    }
    if (!max_only.empty()) {
      return FailedPrecondition(
          "the only measured singles are at `max` (" + max_only +
          ") and their trials recorded no achieved rate: an open-loop intensity is placed on "
          "its sensitivity curve where it was measured, so these have no place on one; add "
          "levels or rates (e.g. `intensities: [0.25, 0.5, 1]`) to predict");
    }
    return FailedPrecondition(
        "no measured singles (one antagonist at a level or rate): run `pairings: singles` or "
        "`pairings: pairs` to build a sensitivity profile");
  }
  if (Status s = predict_singles::CheckKinds(profile.singles); !s.ok()) return s;
  for (const auto& [key, values] : samples) profile.counts[key] = static_cast<int>(values.size());
  profile.curves = profile.Fit(profile.medians, "");

  PredictionReport report;
  std::vector<Query> parsed;
  for (const auto& text : queries.empty() ? DefaultQueries(samples, profile.singles) : queries) {
    auto q = ParseQuery(text, options.at_max, profile.curves);
    if (!q.ok()) {
      if (!queries.empty()) return q.status();
      report.skipped.push_back(q.error());
      continue;
    }
    if (Status s = CheckQuery(*q, profile.curves); !s.ok()) {
      if (!queries.empty()) return s;  // asked for: an error; by default: skipped, said why
      report.skipped.push_back(s.message());
      continue;
    }
    parsed.push_back(std::move(*q));
  }

  report.model = ToString(options.model);
  for (const auto& [name, c] : profile.curves) {
    report.curves.push_back({name, c.absolute, c.measured, c.fit.knots()});
  }
  for (const auto& q : parsed) report.predictions.push_back(PredictOne(profile, q));
  SummarizeErrors(&report);
  return report;
}

}  // namespace codl::experiment

namespace codl::experiment {
namespace {

// One resource both experiments have: the profile's curve and the neighbour's fractions.
struct SharedResource {
  ProfileResource out;
  const std::vector<double>* fractions = nullptr;
};

double ClampedPressure(const std::vector<double>& fractions) {
  const double p = PressureFromFractions(fractions);
  return std::isfinite(p) ? std::clamp(p, 0.0, 1.0) : kNaN;
}

// The injector each (non-workload) antagonist of the profile ran.
std::map<std::string, std::string> InjectorsOf(const std::vector<TrialRecord>& trials) {
  std::map<std::string, std::string> out;
  for (const TrialRecord& t : trials) {
    for (const AntagonistResult& a : t.antagonists) {
      if (a.injector.empty() || a.injector == kWorkloadInjector) continue;
      out.emplace(a.name, a.injector);
    }
  }
  return out;
}

double Combine(const std::vector<double>& slowdowns, CombinationModel model) {
  double product = 1, additive = 1;
  for (double s : slowdowns) {
    product *= s;
    additive += s - 1;
  }
  return model == CombinationModel::kMultiplicative ? product : additive;
}

// The resources the profile has a curve for and the neighbour presses on, each by injector
// (the first antagonist by name where two share one); what cannot be matched, and why, goes to
// `skipped`. An error when nothing is shared.
Result<std::vector<SharedResource>> MatchResources(
    const std::vector<TrialRecord>& profile_trials, const std::map<std::string, Curve>& curves,
    const std::vector<VictimPressureSamples>& pressure, const std::string& pid,
    const std::string& nid, std::vector<std::string>* skipped) {
  // The profile's curves and the neighbour's pressure, each by injector (the first by name
  // when two antagonists share one).
  const auto injectors = InjectorsOf(profile_trials);
  std::map<std::string, std::string> curve_of;  // injector -> the profile's antagonist
  for (const auto& [name, c] : curves) {
    const auto it = injectors.find(name);
    if (it == injectors.end()) {
      skipped->push_back(name + ": the victim profile's trials record no injector for it");
      continue;
    }
    if (c.absolute) {
      skipped->push_back(it->second + " (" + name + "): the victim profile measured it at " +
                         "rates; a pressure is a fraction of peak, so it needs levels or max");
      continue;
    }
    auto [at, fresh] = curve_of.emplace(it->second, name);
    if (!fresh) {
      skipped->push_back(it->second + " (" + name + "): another antagonist of the victim " +
                         "profile with this injector is used, " + at->second);
    }
  }
  std::map<std::string, const VictimPressureSamples*> pressure_of;
  for (const VictimPressureSamples& s : pressure) {
    auto [at, fresh] = pressure_of.emplace(s.injector, &s);
    if (!fresh) {
      skipped->push_back(s.injector + " (" + s.antagonist + "): another antagonist of the " + nid +
                         " with this injector is used, " + at->second->antagonist);
    }
  }
  std::vector<SharedResource> shared;
  for (const auto& [injector, name] : curve_of) {
    const auto it = pressure_of.find(injector);
    if (it == pressure_of.end()) {
      skipped->push_back(injector + " (" + name + "): the " + nid + " has no pressure on it " +
                         "(no " + injector + " antagonist alone at max beside its victim, or " +
                         "one that holds a capacity, not a rate)");
      continue;
    }
    SharedResource s;
    s.out.injector = injector;
    s.out.antagonist = name;
    s.out.neighbour_antagonist = it->second->antagonist;
    s.out.n_pressure = static_cast<int>(it->second->fractions.size());
    s.out.pressure = ClampedPressure(it->second->fractions);
    s.fractions = &it->second->fractions;
    shared.push_back(std::move(s));
  }
  for (const auto& [injector, p] : pressure_of) {
    if (curve_of.count(injector)) continue;
    skipped->push_back(injector + " (" + p->antagonist + "): the " + nid + " presses on it, " +
                       "but the " + pid + " has no singles of it at levels or max");
  }
  if (shared.empty()) {
    std::string have, pressed;
    for (const auto& [injector, name] : curve_of) have += (have.empty() ? "" : ", ") + injector;
    for (const auto& [injector, p] : pressure_of)
      pressed += (pressed.empty() ? "" : ", ") + injector;
    return FailedPrecondition("no resource in common: the " + pid + " has curves for " +
                              (have.empty() ? "none" : have) + ", the " + nid +
                              " has pressure on " + (pressed.empty() ? "none" : pressed));
  }
  return shared;
}

// The prediction's bootstrap interval: the profile's singles and the neighbour's pressure
// samples resampled together, the curves fitted again each time.
ConfidenceInterval PredictionInterval(const SinglesData& profile,
                                      const std::vector<SharedResource>& shared,
                                      const PredictOptions& po, const std::string& neighbour_id) {
  std::mt19937_64 rng(PairingSeed(po.seed, "predict-profile", neighbour_id));
  std::vector<double> draws, resampled;
  for (int i = 0; i < po.resamples; ++i) {
    const auto curves = profile.Fit(profile.ResampledMedians(rng), "");
    std::vector<double> values;
    for (const SharedResource& s : shared) {
      resampled.resize(s.fractions->size());
      for (auto& x : resampled) x = (*s.fractions)[UniformBelow(rng, s.fractions->size())];
      const auto c = curves.find(s.out.antagonist);
      if (c == curves.end()) break;  // this resample left the curve without points
      values.push_back(c->second.fit.At(ClampedPressure(resampled)));
    }
    if (values.size() != shared.size()) continue;
    if (const double v = Combine(values, po.model); std::isfinite(v)) draws.push_back(v);
  }
  return PercentileInterval(draws, po.confidence);
}

}  // namespace

Result<ProfilePrediction> PredictFromProfile(
    const std::vector<TrialRecord>& profile_trials,
    const std::map<std::string, std::vector<double>>& profile_samples,
    const std::vector<VictimPressureSamples>& pressure, const ProfilePredictOptions& options) {
  const std::string pid = "victim profile " + options.profile_id;
  const std::string nid = "neighbour " + options.neighbour_id;
  PredictOptions po = options.predict;
  if (po.at_max.empty()) po.at_max = AchievedAtMaxOf(profile_trials);
  const auto base = profile_samples.find("baseline");
  if (base == profile_samples.end() || base->second.empty()) {
    return FailedPrecondition(pid + ": no measured baseline trials, so no slowdown to build " +
                              "sensitivity curves from");
  }
  auto singles = predict_singles::CollectSingles(profile_samples, po.at_max);
  auto medians = predict_singles::MediansOf(profile_samples);
  SinglesData profile{profile_samples, std::move(singles), {}, std::move(medians), po, {}};
  if (profile.singles.empty()) {
    return FailedPrecondition(pid + ": no measured singles (one injector antagonist alone at a " +
                              "level or at max): it is no sensitivity profile; sweep the " +
                              "victim with `pairings: singles`");
  }
  if (Status s = predict_singles::CheckKinds(profile.singles); !s.ok()) {
    return FailedPrecondition(pid + ": " + s.message());
  }
  for (const auto& [key, values] : profile_samples)
    profile.counts[key] = static_cast<int>(values.size());
  profile.curves = profile.Fit(profile.medians, "");
  if (pressure.empty()) {
    return FailedPrecondition(nid + ": no pressure: it has no measured trial of an injector " +
                              "antagonist alone at max (or level 1) with a calibrated peak " +
                              "beside its victim");
  }

  ProfilePrediction r;
  r.model = ToString(po.model);
  auto matched = MatchResources(profile_trials, profile.curves, pressure, pid, nid, &r.skipped);
  if (!matched.ok()) return matched.status();
  std::vector<SharedResource> shared = std::move(*matched);

  std::vector<double> slowdowns;
  for (SharedResource& s : shared) {
    const SensitivityCurve& fit = profile.curves.at(s.out.antagonist).fit;
    s.out.slowdown = fit.At(s.out.pressure);
    s.out.extrapolated = fit.Extrapolates(s.out.pressure);
    r.extrapolated = r.extrapolated || s.out.extrapolated;
    slowdowns.push_back(s.out.slowdown);
  }
  r.predicted = Combine(slowdowns, po.model);

  const ConfidenceInterval ci = PredictionInterval(profile, shared, po, options.neighbour_id);
  r.ci_low = ci.low;
  r.ci_high = ci.high;
  for (SharedResource& s : shared) r.resources.push_back(std::move(s.out));
  return r;
}

MeasuredPair MeasuredPairOf(const std::string& experiment_id,
                            const std::map<std::string, std::vector<double>>& samples,
                            const std::string& name, bool higher_is_faster) {
  MeasuredPair m;
  m.experiment_id = experiment_id;
  m.name = name;
  const auto with = samples.find(name + "@" + kWorkloadRunLabel);
  const auto base = samples.find("baseline");
  if (with == samples.end() || base == samples.end() || with->second.empty() ||
      base->second.empty()) {
    return m;
  }
  m.n = static_cast<int>(with->second.size());
  m.measured = SlowdownFromMedians(Median(with->second), Median(base->second), higher_is_faster);
  return m;
}

void CompareWithMeasured(std::vector<MeasuredPair> pairs, ProfilePrediction* r) {
  std::vector<double> errors;
  for (MeasuredPair& m : pairs) {
    m.error = kNaN;
    if (m.measured > 0 && std::isfinite(r->predicted)) {
      m.error = r->predicted / m.measured - 1;
      errors.push_back(m.error);
    }
  }
  r->measured = std::move(pairs);
  r->n_compared = static_cast<int>(errors.size());
  r->mape = predict_singles::MeanAbsPercent(errors);
}

}  // namespace codl::experiment
