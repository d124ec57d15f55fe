// Interaction figures: combined slowdown against the singles' product and sum, the joint
// bootstrap CI of S_AB / (S_A S_B), and its verdict.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "lib/analysis/interaction.h"
#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

// Five trials around `center` with +-2 % spread, the same pattern for every group.
std::vector<double> Around(double center) {
  std::vector<double> v;
  for (double f : {1.00, 1.01, 0.99, 1.02, 0.98}) v.push_back(center * f);
  return v;
}

TEST(InteractionTest, MultiplicativeCombinationHasRatioOneAndNoVerdict) {
  const InteractionSummary s =
      ComputeInteraction(Around(1.0), {Around(1.2), Around(1.5)}, Around(1.8));
  EXPECT_NEAR(s.single_slowdowns[0], 1.2, 1e-12);
  EXPECT_NEAR(s.single_slowdowns[1], 1.5, 1e-12);
  EXPECT_NEAR(s.slowdown, 1.8, 1e-12);
  EXPECT_NEAR(s.multiplicative, 1.8, 1e-12);
  EXPECT_NEAR(s.additive, 1.7, 1e-12);
  EXPECT_NEAR(s.ratio, 1.0, 1e-12);
  EXPECT_LT(s.ci_low, 1.0);
  EXPECT_GT(s.ci_high, 1.0);
  EXPECT_EQ(s.verdict, InteractionVerdict::kNone);
}

TEST(InteractionTest, CombinationWorseThanTheProductIsSuperAdditive) {
  const InteractionSummary s =
      ComputeInteraction(Around(1.0), {Around(1.2), Around(1.5)}, Around(2.4));
  EXPECT_NEAR(s.ratio, 2.4 / 1.8, 1e-12);
  EXPECT_GT(s.ci_low, 1.0);
  EXPECT_EQ(s.verdict, InteractionVerdict::kSuperAdditive);
  EXPECT_STREQ(ToString(s.verdict), "super-additive");
}

TEST(InteractionTest, CombinationBetterThanTheProductIsSubAdditive) {
  const InteractionSummary s =
      ComputeInteraction(Around(1.0), {Around(1.2), Around(1.5)}, Around(1.3));
  EXPECT_LT(s.ci_high, 1.0);
  EXPECT_EQ(s.verdict, InteractionVerdict::kSubAdditive);
}

TEST(InteractionTest, ThroughputSlowdownIsBaselineOverValue) {
  InteractionOptions o;
  o.higher_is_faster = true;
  const InteractionSummary s =
      ComputeInteraction(Around(100), {Around(100 / 1.2), Around(100 / 1.5)}, Around(100 / 1.8), o);
  EXPECT_NEAR(s.slowdown, 1.8, 1e-9);
  EXPECT_NEAR(s.multiplicative, 1.8, 1e-9);
  EXPECT_NEAR(s.ratio, 1.0, 1e-9);
}

TEST(InteractionTest, FewerThanThreeTrialsGiveNoIntervalAndNoVerdict) {
  const InteractionSummary s =
      ComputeInteraction({1.0, 1.01}, {{1.2, 1.21}, {1.5, 1.49}}, {3.0, 3.1});
  EXPECT_TRUE(s.ci_small_n);
  EXPECT_TRUE(std::isnan(s.ci_low));
  EXPECT_EQ(s.verdict, InteractionVerdict::kNone);
  EXPECT_GT(s.ratio, 1.5);  // the point figures are still given
}

TEST(InteractionTest, TheIntervalIsReproducibleForOneSeed) {
  InteractionOptions a;
  const auto x = ComputeInteraction(Around(1.0), {Around(1.2), Around(1.5)}, Around(1.9), a);
  const auto y = ComputeInteraction(Around(1.0), {Around(1.2), Around(1.5)}, Around(1.9), a);
  EXPECT_EQ(x.ci_low, y.ci_low);
  EXPECT_EQ(x.ci_high, y.ci_high);
}

TEST(SummarizeInteractionsTest, ListsCombinationsAndNamesMissingSingles) {
  const std::map<std::string, std::vector<double>> samples = {{"baseline", Around(1.0)},
                                                              {"cpu@0.5", Around(1.2)},
                                                              {"membw@0.25", Around(1.5)},
                                                              {"cpu@0.5+membw@0.25", Around(1.8)},
                                                              {"cpu@0.5+membw@1", Around(2.5)}};
  const auto out = SummarizeInteractions(
      samples, {"baseline", "cpu@0.5", "membw@0.25", "cpu@0.5+membw@0.25", "cpu@0.5+membw@1"}, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].pairing, "cpu@0.5+membw@0.25");
  EXPECT_EQ(out[0].singles, (std::vector<std::string>{"cpu@0.5", "membw@0.25"}));
  EXPECT_NEAR(out[0].ratio, 1.0, 1e-12);
  EXPECT_EQ(out[1].pairing, "cpu@0.5+membw@1");
  EXPECT_EQ(out[1].missing_singles, std::vector<std::string>{"membw@1"});
  EXPECT_TRUE(std::isnan(out[1].ratio));
  EXPECT_EQ(out[1].n, 5);
}

TEST(PairingKeyTest, ParsesAndJoinsKeysWithRatesContainingPlus) {
  const auto parts = ParsePairingKey("net@1e+9/s+cpu@0.5");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts.at("net"), "1e+9/s");
  EXPECT_EQ(JoinPairingKey(parts), "cpu@0.5+net@1e+9/s");
  EXPECT_EQ(JoinPairingKey({}), "baseline");
}

TrialRecord InteractionTrial(int index, const std::string& pairing, double metric) {
  TrialRecord t;
  t.experiment_id = "e1";
  t.index = index;
  t.pairing = pairing;
  t.baseline = pairing == "baseline";
  t.state = TrialState::kDone;
  t.value_s = metric;
  return t;
}

TEST(SummarizeInteractionsTest, ResultsCarryInteractionsInTableAndJson) {
  std::vector<TrialRecord> trials;
  int index = 0;
  for (const auto& [key, center] : std::vector<std::pair<std::string, double>>{
           {"baseline", 1.0}, {"a@0.5", 1.2}, {"b@0.5", 1.5}, {"a@0.5+b@0.5", 2.4}}) {
    for (double v : Around(center)) trials.push_back(InteractionTrial(index++, key, v));
  }
  ExperimentRecord e;
  e.id = "e1";
  e.seed = 3;
  const ExperimentResults r = Summarize(e, trials);
  ASSERT_EQ(r.interactions.size(), 1u);
  EXPECT_EQ(r.interactions[0].verdict, InteractionVerdict::kSuperAdditive);
  const std::string table = FormatTable(r);
  EXPECT_NE(table.find("interaction:"), std::string::npos);
  EXPECT_NE(table.find("super-additive"), std::string::npos);
  const auto j = nlohmann::json::parse(FormatJson(r));
  ASSERT_EQ(j["interactions"].size(), 1u);
  EXPECT_EQ(j["interactions"][0]["pairing"], "a@0.5+b@0.5");
  EXPECT_NEAR(j["interactions"][0]["multiplicative"].get<double>(), 1.8, 1e-9);
  EXPECT_EQ(j["interactions"][0]["verdict"], "super-additive");
  // A combination without measured trials is a note, not a row of dashes.
  ExperimentResults none = r;
  none.interactions[0].n = 0;
  EXPECT_NE(FormatTable(none).find(
                "note: a@0.5+b@0.5: no interaction figures, no measured trials of the combination"),
            std::string::npos);
  const std::string csv = FormatInteractionsCsv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "experiment_id,pairing,n,singles,single_slowdowns,missing_singles,slowdown,"
            "multiplicative,additive,ratio,ci_low,ci_high,ci_small_n,verdict");
  EXPECT_NE(csv.find("e1,a@0.5+b@0.5,5,a@0.5;b@0.5,"), std::string::npos);
}

}  // namespace
}  // namespace codl::experiment
