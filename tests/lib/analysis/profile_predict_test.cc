// Prediction from profiles (codlctl predict --victim-profile P --neighbour N): a victim's
// sensitivity curves per injector at a neighbour's pressure per injector, on hand-made numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/predict.h"
#include "lib/analysis/predict_format.h"

namespace codl::experiment {
namespace {

std::vector<double> Near(double center) {
  std::vector<double> v;
  for (double f : {1.00, 1.01, 0.99, 1.02, 0.98}) v.push_back(center * f);
  return v;
}

// The victim's profile: membw (memcpy) 1 + 0.4 x, cpu (cpu) 1 + 0.2 x; medians exact.
std::map<std::string, std::vector<double>> ProfileSamples() {
  return {{"baseline", Near(1.0)},
          {"membw@0.5", Near(1.2)},
          {"membw@1", Near(1.4)},
          {"cpu@0.5", Near(1.1)},
          {"cpu@1", Near(1.2)}};
}

TrialRecord WithAntagonist(const std::string& pairing, const std::string& name,
                           const std::string& injector) {
  TrialRecord t;
  t.pairing = pairing;
  t.state = TrialState::kDone;
  AntagonistResult a;
  a.name = name;
  a.injector = injector;
  t.antagonists.push_back(a);
  return t;
}

std::vector<TrialRecord> ProfileTrials() {
  return {WithAntagonist("membw@0.5", "membw", "memcpy"), WithAntagonist("cpu@0.5", "cpu", "cpu")};
}

// The neighbour's pressure: memcpy 0.25 (fractions around 0.75), cpu 0.5, and fio, which the
// profile never swept.
std::vector<VictimPressureSamples> NeighbourPressure() {
  return {{"bw", "memcpy", "bytes/s", "max", {0.7, 0.75, 0.8}},
          {"c", "cpu", "ops/s", "max", {0.5, 0.5, 0.5}},
          {"disk", "fio", "IOPS", "max", {0.9, 0.9, 0.9}}};
}

ProfilePredictOptions Options(CombinationModel model = CombinationModel::kMultiplicative) {
  ProfilePredictOptions o;
  o.predict.model = model;
  o.predict.resamples = 500;
  o.predict.seed = 5;
  o.profile_id = "P1";
  o.neighbour_id = "N1";
  return o;
}

TEST(ProfilePredictTest, PredictsTheProductOfTheCurvesAtThePressures) {
  auto r = PredictFromProfile(ProfileTrials(), ProfileSamples(), NeighbourPressure(), Options());
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->resources.size(), 2u);
  // By injector: cpu, then memcpy.
  EXPECT_EQ(r->resources[0].injector, "cpu");
  EXPECT_EQ(r->resources[0].antagonist, "cpu");
  EXPECT_EQ(r->resources[0].neighbour_antagonist, "c");
  EXPECT_NEAR(r->resources[0].pressure, 0.5, 1e-12);
  EXPECT_NEAR(r->resources[0].slowdown, 1.1, 1e-9);
  EXPECT_EQ(r->resources[1].injector, "memcpy");
  EXPECT_EQ(r->resources[1].n_pressure, 3);
  EXPECT_NEAR(r->resources[1].pressure, 0.25, 1e-12);
  EXPECT_NEAR(r->resources[1].slowdown, 1.1, 1e-9);
  EXPECT_NEAR(r->predicted, 1.1 * 1.1, 1e-9);
  EXPECT_FALSE(r->extrapolated);
  ASSERT_TRUE(std::isfinite(r->ci_low) && std::isfinite(r->ci_high));
  EXPECT_LE(r->ci_low, r->predicted);
  EXPECT_GE(r->ci_high, r->predicted);
  EXPECT_GT(r->ci_low, 1.1);  // both curves rise by construction
  EXPECT_LT(r->ci_high, 1.35);
  // fio: pressed on by the neighbour, never swept in the profile.
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_NE(r->skipped[0].find("fio (disk)"), std::string::npos) << r->skipped[0];
  EXPECT_NE(r->skipped[0].find("no singles"), std::string::npos) << r->skipped[0];
  EXPECT_EQ(r->model, "multiplicative");

  // Reproducible.
  auto again =
      PredictFromProfile(ProfileTrials(), ProfileSamples(), NeighbourPressure(), Options());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ci_low, r->ci_low);
  EXPECT_EQ(again->ci_high, r->ci_high);
}

TEST(ProfilePredictTest, AdditiveModelSumsTheExtraSlowdowns) {
  auto r = PredictFromProfile(ProfileTrials(), ProfileSamples(), NeighbourPressure(),
                              Options(CombinationModel::kAdditive));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_NEAR(r->predicted, 1 + 0.1 + 0.1, 1e-9);
  EXPECT_EQ(r->model, "additive");
}

TEST(ProfilePredictTest, ACurveTheNeighbourDoesNotPressIsSkippedWithWhy) {
  auto pressure = NeighbourPressure();
  pressure.erase(pressure.begin() + 1);  // no cpu pressure
  auto r = PredictFromProfile(ProfileTrials(), ProfileSamples(), pressure, Options());
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->resources.size(), 1u);
  EXPECT_NEAR(r->predicted, 1.1, 1e-9);
  bool said = false;
  for (const auto& s : r->skipped) {
    said = said || s.find("cpu (cpu): the neighbour N1 has no pressure on it") == 0;
  }
  EXPECT_TRUE(said);
}

TEST(ProfilePredictTest, ErrorsNameTheExperiment) {
  // No singles in the profile.
  auto r = PredictFromProfile({}, {{"baseline", Near(1.0)}}, NeighbourPressure(), Options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("victim profile P1"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("no measured singles"), std::string::npos) << r.error();
  // No baseline.
  r = PredictFromProfile({}, {{"membw@1", Near(1.4)}}, NeighbourPressure(), Options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("victim profile P1"), std::string::npos) << r.error();
  // No pressure in the neighbour.
  r = PredictFromProfile(ProfileTrials(), ProfileSamples(), {}, Options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("neighbour N1: no pressure"), std::string::npos) << r.error();
  // Nothing in common.
  r = PredictFromProfile(ProfileTrials(), ProfileSamples(), {{"disk", "fio", "IOPS", "max", {0.9}}},
                         Options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no resource in common"), std::string::npos) << r.error();
}

TEST(ProfilePredictTest, MapeAgainstMeasuredPairs) {
  auto r = PredictFromProfile(ProfileTrials(), ProfileSamples(), NeighbourPressure(), Options());
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_NEAR(r->predicted, 1.21, 1e-9);
  // A measured pair from the trials' metric values: NAME@run's median against the baseline's.
  const MeasuredPair m1 = MeasuredPairOf(
      "M1", {{"baseline", {1.0, 1.0, 1.0}}, {"job2@run", {1.1, 1.0, 1.2}}}, "job2", false);
  EXPECT_EQ(m1.n, 3);
  EXPECT_NEAR(m1.measured, 1.1, 1e-12);
  // Throughput: baseline / measured.
  const MeasuredPair m2 =
      MeasuredPairOf("M2", {{"baseline", {1.331, 1.331}}, {"job2@run", {1.0, 1.0}}}, "job2", true);
  EXPECT_NEAR(m2.measured, 1.331, 1e-12);
  EXPECT_EQ(MeasuredPairOf("M3", {{"baseline", {1.0}}}, "job2", false).n, 0);

  CompareWithMeasured({m1, m2}, &*r);
  ASSERT_EQ(r->measured.size(), 2u);
  EXPECT_NEAR(r->measured[0].error, 1.21 / 1.1 - 1, 1e-9);    // +10 %
  EXPECT_NEAR(r->measured[1].error, 1.21 / 1.331 - 1, 1e-9);  // -9.09 %
  EXPECT_EQ(r->n_compared, 2);
  EXPECT_NEAR(r->mape, 100 * (0.1 + (1 - 1.21 / 1.331)) / 2, 1e-9);

  ProfilePredictionSource src{"P1", "profile", "N1", "neighbour", "elapsed", 0.95, false, ""};
  const std::string table = FormatProfilePredictionTable(*r, src);
  EXPECT_NE(table.find("predicted slowdown: 1.210x ["), std::string::npos) << table;
  EXPECT_NE(table.find("MAPE 9.5% over 2 measured pairs"), std::string::npos) << table;
  const std::string json = FormatProfilePredictionJson(*r, src);
  EXPECT_NE(json.find("\"n_compared\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"injector\": \"memcpy\""), std::string::npos) << json;
  const std::string csv = FormatProfilePredictionCsv(*r, src);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;  // header + 2 pairs
}

TEST(ProfilePredictTest, NoMeasuredPairIsSaid) {
  auto r = PredictFromProfile(ProfileTrials(), ProfileSamples(), NeighbourPressure(), Options());
  ASSERT_TRUE(r.ok()) << r.error();
  CompareWithMeasured({}, &*r);
  EXPECT_EQ(r->n_compared, 0);
  EXPECT_TRUE(std::isnan(r->mape));
  ProfilePredictionSource src{"P1", "profile", "N1", "neighbour", "elapsed", 0.95, false, ""};
  EXPECT_NE(FormatProfilePredictionTable(*r, src).find("no measured pair"), std::string::npos);
  src.not_searched = "give --db FILE";
  EXPECT_NE(FormatProfilePredictionTable(*r, src).find("measured pairs: not searched"),
            std::string::npos);
}

}  // namespace
}  // namespace codl::experiment
