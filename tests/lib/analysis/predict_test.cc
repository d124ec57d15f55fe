// Sensitivity curves and predicted slowdowns (codlctl predict).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lib/analysis/predict.h"

namespace codl::experiment {
namespace {

std::vector<double> Around(double center) {
  std::vector<double> v;
  for (double f : {1.00, 1.01, 0.99, 1.02, 0.98}) v.push_back(center * f);
  return v;
}

TEST(SensitivityCurveTest, InterpolatesLinearlyFromOneAtZeroAndExtendsTheLastSegment) {
  const auto c = SensitivityCurve::Fit({{0.5, 1.3, 5}, {0.25, 1.1, 5}, {1.0, 1.5, 5}});
  EXPECT_DOUBLE_EQ(c.At(0), 1.0);
  EXPECT_NEAR(c.At(0.125), 1.05, 1e-12);
  EXPECT_NEAR(c.At(0.375), 1.2, 1e-12);
  EXPECT_NEAR(c.At(1.0), 1.5, 1e-12);
  EXPECT_FALSE(c.Extrapolates(1.0));
  EXPECT_TRUE(c.Extrapolates(1.5));
  EXPECT_NEAR(c.At(1.5), 1.7, 1e-12);
  EXPECT_TRUE(std::isnan(c.At(-0.1)));
}

TEST(SensitivityCurveTest, PoolsAViolationSoTheCurveNeverFalls) {
  // Noise made 0.5 look faster than 0.25: both become their weighted mean.
  const auto c = SensitivityCurve::Fit({{0.25, 1.3, 1}, {0.5, 1.1, 3}});
  EXPECT_NEAR(c.At(0.25), 1.15, 1e-12);
  EXPECT_NEAR(c.At(0.5), 1.15, 1e-12);
  EXPECT_NEAR(c.At(0.4), 1.15, 1e-12);
  // A "speed-up" under interference is noise against the fixed (0, 1).
  EXPECT_NEAR(SensitivityCurve::Fit({{0.25, 0.95, 5}}).At(0.25), 1.0, 1e-9);
}

// Two antagonists with linear sensitivities (a: 1 + 0.6x, b: 1 + 0.3x) whose pair combines
// multiplicatively: every prediction is exact by construction.
std::map<std::string, std::vector<double>> Profile() {
  std::map<std::string, std::vector<double>> s = {{"baseline", Around(1.0)}};
  for (double x : {0.25, 0.5, 1.0}) {
    char key[32];
    std::snprintf(key, sizeof key, "a@%g", x);
    s[key] = Around(1 + 0.6 * x);
    std::snprintf(key, sizeof key, "b@%g", x);
    s[key] = Around(1 + 0.3 * x);
  }
  s["a@0.5+b@0.5"] = Around(1.3 * 1.15);
  s["a@1+b@0.25"] = Around(1.6 * 1.075);
  return s;
}

TEST(PredictTest, DefaultQueriesCompareEveryMeasuredCombinationAndLeftOutSingle) {
  auto r = PredictSlowdowns(Profile(), {});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->model, "multiplicative");
  ASSERT_EQ(r->predictions.size(), 8u);  // 2 combinations + 6 singles
  const Prediction& pair = r->predictions[0];
  EXPECT_EQ(pair.combination, "a@0.5+b@0.5");
  EXPECT_NEAR(pair.predicted, 1.3 * 1.15, 1e-9);
  EXPECT_NEAR(pair.measured, 1.3 * 1.15, 1e-9);
  EXPECT_EQ(pair.n_measured, 5);
  EXPECT_LE(pair.ci_low, pair.predicted);
  EXPECT_GE(pair.ci_high, pair.predicted);
  EXPECT_LT(pair.ci_high - pair.ci_low, 0.2);
  // a@0.5 left out: interpolated between a@0.25 and a@1 on a straight line.
  const Prediction& single = r->predictions[3];
  EXPECT_EQ(single.combination, "a@0.5");
  EXPECT_TRUE(single.left_out);
  EXPECT_NEAR(single.predicted, 1.3, 1e-9);
  // a@1 left out: extrapolated from 0.25 and 0.5.
  EXPECT_TRUE(r->predictions[4].extrapolated);
  EXPECT_EQ(r->n_compared, 8);
  EXPECT_NEAR(r->mape, 0, 1e-6);
  EXPECT_NEAR(r->mape_combinations, 0, 1e-6);
}

TEST(PredictTest, UnmeasuredIntensitiesAreInterpolatedAndNormalized) {
  auto profile = Profile();
  profile.erase("b@1");  // so that b@1 lies past b's curve
  auto r = PredictSlowdowns(profile, {"a@0.750+b@0.75", "b@1"});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->predictions[0].combination, "a@0.75+b@0.75");
  EXPECT_NEAR(r->predictions[0].predicted, 1.45 * 1.225, 1e-9);
  EXPECT_TRUE(r->predictions[0].extrapolated);  // b@0.75 > b@0.5
  EXPECT_EQ(r->predictions[0].n_measured, 0);
  EXPECT_TRUE(std::isnan(r->predictions[0].error));
  EXPECT_TRUE(r->predictions[1].extrapolated);
  EXPECT_NEAR(r->predictions[1].predicted, 1.3, 1e-9);
  EXPECT_TRUE(std::isnan(r->mape));
}

TEST(PredictTest, AdditiveModelSumsTheExtraSlowdowns) {
  PredictOptions o;
  o.model = CombinationModel::kAdditive;
  auto r = PredictSlowdowns(Profile(), {"a@0.5+b@0.5"}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_NEAR(r->predictions[0].predicted, 1.45, 1e-9);
  EXPECT_NEAR(r->predictions[0].error, 1.45 / 1.495 - 1, 1e-9);
  EXPECT_NEAR(r->mape, 100 * (1 - 1.45 / 1.495), 1e-6);
}

TEST(PredictTest, ThroughputMetricsInvertTheRatio) {
  std::map<std::string, std::vector<double>> s = {
      {"baseline", Around(100)}, {"a@0.5", Around(100 / 1.2)}, {"b@0.5", Around(100 / 1.5)}};
  PredictOptions o;
  o.higher_is_faster = true;
  auto r = PredictSlowdowns(s, {"a@0.5+b@0.5"}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_NEAR(r->predictions[0].predicted, 1.8, 1e-9);
}

TEST(PredictTest, RefusesWhatTheProfileCannotAnswer) {
  auto unknown = PredictSlowdowns(Profile(), {"a@0.5+net@0.5"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("no singles of 'net'"), std::string::npos) << unknown.error();
  EXPECT_NE(unknown.error().find("a, b"), std::string::npos);
  EXPECT_FALSE(PredictSlowdowns(Profile(), {"a@max"}).ok());
  EXPECT_FALSE(PredictSlowdowns(Profile(), {"a@2GiB/s"}).ok());
  EXPECT_FALSE(PredictSlowdowns(Profile(), {"a@1.5"}).ok());
  EXPECT_FALSE(PredictSlowdowns(Profile(), {"garbage"}).ok());
  EXPECT_FALSE(PredictSlowdowns({{"a@0.5", Around(1.2)}}, {}).ok());     // no baseline
  EXPECT_FALSE(PredictSlowdowns({{"baseline", Around(1.0)}}, {}).ok());  // no singles
  // Singles at `max` only: said by name, with why, not "no measured singles".
  auto max_only = PredictSlowdowns(
      {{"baseline", Around(1.0)}, {"membw@max", Around(1.4)}, {"membw@max+cpu@max", Around(2)}},
      {});
  ASSERT_FALSE(max_only.ok());
  EXPECT_NE(max_only.error().find("the only measured singles are at `max` (membw@max)"),
            std::string::npos)
      << max_only.error();
  EXPECT_NE(max_only.error().find("recorded no achieved rate"), std::string::npos);
  EXPECT_EQ(max_only.error().find("no measured singles"), std::string::npos);
}

// `max` is placed where it was measured: a (1 + 0.6x) reached 0.75 of its peak alone at max.
TEST(PredictTest, MaxSitsAtItsAchievedLevel) {
  std::map<std::string, std::vector<double>> s = {{"baseline", Around(1.0)},
                                                  {"a@0.25", Around(1.15)},
                                                  {"a@0.5", Around(1.3)},
                                                  {"a@max", Around(1.45)}};
  PredictOptions o;
  o.resamples = 50;
  o.at_max["a"] = {0.75, 7.5e9};
  auto r = PredictSlowdowns(s, {}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->curves.size(), 1u);
  const auto& measured = r->curves[0].measured;
  ASSERT_EQ(measured.size(), 3u);
  const auto max = std::find_if(measured.begin(), measured.end(), [](auto& p) { return p.at_max; });
  ASSERT_NE(max, measured.end());
  EXPECT_DOUBLE_EQ(max->x, 0.75);
  // Every single is left out in turn: a@max from 0.25 and 0.5 (extrapolated), exact here.
  bool saw_max = false;
  for (const auto& p : r->predictions) {
    if (p.combination != "a@max") continue;
    saw_max = true;
    EXPECT_TRUE(p.left_out);
    EXPECT_TRUE(p.extrapolated);
    EXPECT_NEAR(p.predicted, 1.45, 1e-9);
  }
  EXPECT_TRUE(saw_max);
  // A level between 0.5 and the achieved 0.75 interpolates toward the max point.
  auto between = PredictSlowdowns(s, {"a@0.625"}, o);
  ASSERT_TRUE(between.ok()) << between.error();
  EXPECT_NEAR(between->predictions[0].predicted, 1.375, 1e-9);
  EXPECT_FALSE(between->predictions[0].extrapolated);
}

// An experiment of singles and pairs at max only (the quickstart's shape) predicts its pairs.
TEST(PredictTest, MaxOnlySinglesPredictTheirCombinations) {
  std::map<std::string, std::vector<double>> s = {{"baseline", Around(1.0)},
                                                  {"membw@max", Around(1.4)},
                                                  {"cpu@max", Around(1.25)},
                                                  {"cpu@max+membw@max", Around(1.75)}};
  PredictOptions o;
  o.resamples = 50;
  o.at_max["membw"] = {0.9, 9e9};
  o.at_max["cpu"] = {kNaN, 2};  // no calibrated peak: placed at its rate
  auto r = PredictSlowdowns(s, {}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->predictions.size(), 1u);
  EXPECT_EQ(r->predictions[0].combination, "cpu@max+membw@max");
  EXPECT_NEAR(r->predictions[0].predicted, 1.4 * 1.25, 1e-9);
  EXPECT_NEAR(r->predictions[0].error, 1.4 * 1.25 / 1.75 - 1, 1e-9);
  // Without an achieved intensity for one of them, the combination is skipped, saying why.
  o.at_max.erase("cpu");
  auto skipped = PredictSlowdowns(s, {}, o);
  ASSERT_TRUE(skipped.ok()) << skipped.error();
  EXPECT_TRUE(skipped->predictions.empty());
  ASSERT_EQ(skipped->skipped.size(), 1u);
  EXPECT_NE(skipped->skipped[0].find("cpu@max"), std::string::npos) << skipped->skipped[0];
}

TEST(PredictTest, AchievedAtMaxAveragesTheMeasuredTrialsOfEachMaxSingle) {
  auto trial = [](const std::string& pairing, TrialState state, double achieved, double peak) {
    TrialRecord t;
    t.pairing = pairing;
    t.state = state;
    AntagonistResult a;
    a.name = pairing.substr(0, pairing.find('@'));
    a.achieved_rate = achieved;
    a.peak_rate = peak;
    t.antagonists.push_back(a);
    return t;
  };
  const std::vector<TrialRecord> trials = {
      trial("membw@max", TrialState::kDone, 8e9, 10e9),
      trial("membw@max", TrialState::kDone, 9e9, 10e9),
      trial("membw@max", TrialState::kFailed, 1e9, 10e9),   // not measured
      trial("membw@0.5", TrialState::kDone, 5e9, 10e9),     // not at max
      trial("membw@max", TrialState::kFlagged, 2e9, 10e9),  // only with include_flagged
      trial("cpu@max", TrialState::kDone, 2, 0),            // no peak: a rate, no level
  };
  const auto m = AchievedAtMaxOf(trials);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NEAR(m.at("membw").level, 0.85, 1e-12);
  EXPECT_NEAR(m.at("membw").rate, 8.5e9, 1);
  EXPECT_TRUE(std::isnan(m.at("cpu").level));
  EXPECT_DOUBLE_EQ(m.at("cpu").rate, 2);
  EXPECT_NEAR(AchievedAtMaxOf(trials, true).at("membw").level, 19.0 / 30, 1e-12);
}

TEST(PredictTest, DefaultQueriesSkipCombinationsWithoutCurvesAndSayWhy) {
  auto s = Profile();
  s["a@0.5+c@0.5"] = Around(1.5);  // c never measured alone
  auto r = PredictSlowdowns(s, {});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->predictions.size(), 8u);
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_NE(r->skipped[0].find("a@0.5+c@0.5: no singles of 'c'"), std::string::npos)
      << r->skipped[0];
}

TEST(PredictTest, RatesMakeTheirOwnCurve) {
  std::map<std::string, std::vector<double>> s = {
      {"baseline", Around(1.0)}, {"io@1GiB/s", Around(1.2)}, {"io@2GiB/s", Around(1.4)}};
  auto r = PredictSlowdowns(s, {"io@1536MiB/s"});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_NEAR(r->predictions[0].predicted, 1.3, 1e-9);
  EXPECT_TRUE(r->curves[0].absolute);
}

}  // namespace
}  // namespace codl::experiment
