// Adaptive repetitions: precision of a pairing, the stop rule's verdict and reasons, the
// minimal detectable effect, and the blocks estimate from a previous run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "lib/analysis/adaptive.h"
#include "lib/analysis/stats.h"

namespace codl::experiment {
namespace {

PairingSummary Pairing(const std::string& key, double slowdown, double low, double high,
                       int n = 5) {
  PairingSummary p;
  p.pairing = key;
  p.slowdown = slowdown;
  p.ci_low = low;
  p.ci_high = high;
  p.n = n;
  return p;
}

ExperimentResults Results(std::vector<PairingSummary> pairings) {
  ExperimentResults r;
  PairingSummary base;
  base.pairing = "baseline";
  base.baseline = true;
  base.slowdown = 1;
  r.pairings.push_back(base);
  for (auto& p : pairings) r.pairings.push_back(std::move(p));
  return r;
}

TEST(RelativeHalfWidth, HalfTheIntervalOverTheSlowdown) {
  EXPECT_NEAR(RelativeHalfWidth(Pairing("m@1", 2.0, 1.9, 2.1)), 0.05, 1e-12);
  EXPECT_TRUE(std::isinf(RelativeHalfWidth(Pairing("m@1", 2.0, kNaN, kNaN))));
}

TEST(CheckPrecision, ReachedOnlyWhenEveryPairingIsNarrowEnough) {
  auto narrow = Results({Pairing("a@1", 2.0, 1.98, 2.02), Pairing("b@1", 1.0, 0.99, 1.01)});
  EXPECT_TRUE(CheckPrecision(narrow, 0.02).reached);
  auto one_wide = Results({Pairing("a@1", 2.0, 1.98, 2.02), Pairing("b@1", 1.0, 0.9, 1.1)});
  const PrecisionCheck c = CheckPrecision(one_wide, 0.02);
  EXPECT_FALSE(c.reached);
  EXPECT_EQ(c.widest_pairing, "b@1");
  EXPECT_NEAR(c.widest, 0.1, 1e-12);
  EXPECT_EQ(MaxReachedReason(40, c), "max reached (40) with widest half-width 10% at pairing b@1");
  auto no_ci = Results({Pairing("a@1", 2.0, kNaN, kNaN)});
  EXPECT_FALSE(CheckPrecision(no_ci, 0.5).reached);
  EXPECT_EQ(TargetReachedReason(7), "target reached after 7 blocks");
}

TEST(MinimumDetectableEffect, KnownByConstruction) {
  // Median 10, absolute deviations {1, 1, 0, 1, 1} -> MAD 1, robust SD 1.4826, relative 0.14826.
  const std::vector<double> baseline = {9, 11, 10, 9, 11};
  EXPECT_NEAR(RobustRelativeSpread(baseline), 0.14826, 1e-12);
  // z(0.975) + z(0.8) = 1.959964 + 0.841621 = 2.801585; sqrt(1/8 + 1/8) = 0.5.
  EXPECT_NEAR(MinimumDetectableSlowdown(0.14826, 8, 8), 1 + 2.801585 * 0.14826 * 0.5, 1e-6);
  // Four times the trials halve it.
  EXPECT_NEAR(MinimumDetectableSlowdown(0.1, 32, 32) - 1,
              (MinimumDetectableSlowdown(0.1, 8, 8) - 1) / 2, 1e-12);
  EXPECT_TRUE(std::isnan(MinimumDetectableSlowdown(0.1, 1, 8)));
  EXPECT_TRUE(std::isnan(RobustRelativeSpread({10})));
}

TEST(MinimumDetectableEffect, DetectedAboutFourTimesInFiveBySimulation) {
  // Normal trials with SD 5 % of the mean, slowed by exactly the MDE for 20 against 20: the
  // rank test (efficiency 3/pi of the t test's) finds it close to the promised 80 % of the time.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.05);
  const double mde = MinimumDetectableSlowdown(0.05, 20, 20);
  int detected = 0;
  const int runs = 2000;
  for (int r = 0; r < runs; ++r) {
    std::vector<double> base, slow;
    for (int i = 0; i < 20; ++i) base.push_back(1 + noise(rng));
    for (int i = 0; i < 20; ++i) slow.push_back(mde + noise(rng));
    detected += MannWhitneyU(slow, base).p_value < 0.05;
  }
  EXPECT_NEAR(static_cast<double>(detected) / runs, 0.78, 0.04);
}

TEST(EstimateBlocks, ScalesTheWidestPairingByOneOverRootN) {
  AdaptiveRepetitions a;
  a.enabled = true;
  a.min = 3;
  a.max = 40;
  a.ci_halfwidth = 0.02;
  // +-4 % at n = 5 needs (4/2)^2 = 4 times the trials: 20 blocks; +-1 % is already there.
  auto previous = Results({Pairing("a@1", 2.0, 1.92, 2.08, 5), Pairing("b@1", 1, 0.99, 1.01, 5)});
  auto e = EstimateBlocks(previous, a);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->blocks, 20);
  EXPECT_EQ(e->pairing, "a@1");
  EXPECT_EQ(e->n, 5);
  // Never fewer than min.
  auto tight = Results({Pairing("a@1", 2.0, 1.99, 2.01, 5)});
  EXPECT_EQ(EstimateBlocks(tight, a)->blocks, 3);
  EXPECT_FALSE(EstimateBlocks(Results({Pairing("a@1", 2.0, kNaN, kNaN)}), a).has_value());
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

// Baselines {9, 11, 10, 9, 11} (relative robust spread 0.14826) against 5 slowed trials.
std::vector<TrialRecord> FiveAgainstFive() {
  std::vector<TrialRecord> trials;
  const double base[] = {9, 11, 10, 9, 11};
  for (int i = 0; i < 5; ++i) {
    TrialRecord b;
    b.index = 2 * i;
    b.pairing = "baseline";
    b.baseline = true;
    b.state = TrialState::kDone;
    b.value_s = b.wall_s = base[i];
    TrialRecord t = b;
    t.index = 2 * i + 1;
    t.pairing = "membw@1";
    t.baseline = false;
    t.value_s = t.wall_s = 2 * base[i];
    trials.push_back(b);
    trials.push_back(t);
  }
  return trials;
}

TEST(AdaptiveOutput, MdeAndStopReasonInTableCsvAndJson) {
  ExperimentRecord e;
  e.id = "e1";
  e.stop_reason = "target reached after 5 blocks";
  const ExperimentResults r = Summarize(e, FiveAgainstFive());
  const PairingSummary& p = r.pairings.at(1);
  // 5 against 5: sqrt(1/5 + 1/5) = 0.632456.
  EXPECT_NEAR(p.mde, 1 + 2.801585 * 0.14826 * 0.632456, 1e-5);
  EXPECT_TRUE(std::isnan(r.pairings.at(0).mde)) << "the baseline is not compared to itself";
  const std::string table = FormatTable(r, /*wide=*/true);
  EXPECT_NE(table.find("adaptive repetitions: target reached after 5 blocks"), std::string::npos)
      << table;
  EXPECT_NE(table.find("1.26x"), std::string::npos) << table;  // the mde cell
  const std::string csv = FormatCsv(r);
  EXPECT_NE(csv.find(",mde,stop_reason\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",target reached after 5 blocks\n"), std::string::npos) << csv;
  auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_EQ(j["stop_reason"], "target reached after 5 blocks");
  EXPECT_NEAR(j["pairings"][1]["mde"].get<double>(), p.mde, 1e-12);
  EXPECT_TRUE(j["pairings"][0]["mde"].is_null());
}

TEST(AdaptiveOutput, NoMdeWhenNoOutcomeCouldBeSignificant) {
  // 2 against 2: the exact test's smallest p is 1/3, so nothing is detectable at 5 %.
  auto trials = FiveAgainstFive();
  trials.resize(4);
  ExperimentRecord e;
  const ExperimentResults r = Summarize(e, trials);
  EXPECT_TRUE(std::isnan(r.pairings.at(1).mde));
  EXPECT_EQ(FormatJson(r).find("\"stop_reason\": \"\""), FormatJson(r).find("\"stop_reason\""));
}

}  // namespace
}  // namespace codl::experiment
