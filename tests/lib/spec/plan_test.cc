#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

Intensity Level(double l) {
  Intensity in;
  in.level = l;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", l);
  in.label = buf;
  return in;
}

Intensity RateOf(double r, const std::string& label) {
  Intensity in;
  in.absolute = true;
  in.rate = r;
  in.label = label;
  return in;
}

// Antagonists a, b, c with 2, 1 and 3 intensities.
ExperimentSpec ThreeAntagonists(Pairings p) {
  ExperimentSpec s;
  s.name = "t";
  s.victim.command = {"v"};
  AntagonistSpec a{"a", "memcpy", {}, {Level(0.5), Level(1)}, {}, {}, {}, {}};
  AntagonistSpec b{"b", "memcpy", {}, {RateOf(2.0 * (1 << 30), "2GiB/s")}, {}, {}, {}, {}};
  AntagonistSpec c{"c", "memcpy", {}, {Level(0.25), Level(0.5), Level(1)}, {}, {}, {}, {}};
  s.antagonists = {a, b, c};
  s.pairings = p;
  s.repetitions = 3;
  return s;
}

int CountBaselines(const std::vector<PlannedTrial>& plan) {
  return static_cast<int>(
      std::count_if(plan.begin(), plan.end(), [](const PlannedTrial& t) { return t.baseline; }));
}

TEST(BaselinesPerBlockTest, Rule) {
  EXPECT_EQ(BaselinesPerBlock(0), 1);
  EXPECT_EQ(BaselinesPerBlock(1), 1);
  EXPECT_EQ(BaselinesPerBlock(4), 1);
  EXPECT_EQ(BaselinesPerBlock(5), 2);
  EXPECT_EQ(BaselinesPerBlock(12), 3);
}

TEST(ExpandPlanTest, NoAntagonistsGivesBaselinesOnly) {
  ExperimentSpec s;
  s.repetitions = 4;
  auto plan = ExpandPlan(s);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(CountBaselines(plan), 4);
  EXPECT_EQ(plan[3].repetition, 3);
  EXPECT_EQ(plan[3].pairing, "baseline");
}

TEST(ExpandPlanTest, Singles) {
  auto s = ThreeAntagonists(Pairings::kSingles);
  EXPECT_EQ(ExpandCombinations(s).size(), 6u);  // 2 + 1 + 3
  auto plan = ExpandPlan(s);
  EXPECT_EQ(plan.size(), 3u * (6 + 2));
  EXPECT_EQ(CountBaselines(plan), 6);
  EXPECT_DOUBLE_EQ(CountPlannedTrials(s), plan.size());
}

TEST(ExpandPlanTest, PairsIncludeTheSinglesAtTheSameIntensities) {
  auto s = ThreeAntagonists(Pairings::kPairs);
  // singles: 2 + 1 + 3; pairs: ab 2*1, ac 2*3, bc 1*3
  const auto combos = ExpandCombinations(s);
  EXPECT_EQ(combos.size(), 6u + 11u);
  std::set<std::string> keys;
  for (const auto& c : combos) keys.insert(PairingKey(s, c));
  for (const auto& c : combos) {
    if (c.size() != 2) continue;
    for (const auto& part : c) EXPECT_TRUE(keys.count(PairingKey(s, {part}))) << PairingKey(s, c);
  }
  auto plan = ExpandPlan(s);
  EXPECT_EQ(plan.size(), 3u * (17 + 5));
  EXPECT_DOUBLE_EQ(CountPlannedTrials(s), plan.size());
  std::map<size_t, int> by_size;
  for (const auto& t : plan) ++by_size[t.parts.size()];
  EXPECT_EQ(by_size[1], 3 * 6);
  EXPECT_EQ(by_size[2], 3 * 11);
  EXPECT_EQ(MissingSinglesWarning(s), "");
}

TEST(ExpandPlanTest, ExplicitPairsWithoutTheirSinglesWarn) {
  auto s = ThreeAntagonists(Pairings::kExplicit);
  s.explicit_pairings = {{s.antagonists[0].name, s.antagonists[1].name}, {s.antagonists[0].name}};
  const std::string w = MissingSinglesWarning(s);
  EXPECT_NE(w.find("no singles of " + s.antagonists[1].name), std::string::npos) << w;
  EXPECT_EQ(w.find(s.antagonists[0].name + ","), std::string::npos) << w;
  s.explicit_pairings.push_back({s.antagonists[1].name});
  EXPECT_EQ(MissingSinglesWarning(s), "");
}

TEST(ExpandPlanTest, All) {
  auto s = ThreeAntagonists(Pairings::kAll);
  // (1+2)(1+1)(1+3) - 1 = 23: 6 singles, 11 pairs, 6 triples
  auto combos = ExpandCombinations(s);
  EXPECT_EQ(combos.size(), 23u);
  std::map<size_t, int> by_size;
  for (const auto& c : combos) ++by_size[c.size()];
  EXPECT_EQ(by_size[1], 6);
  EXPECT_EQ(by_size[2], 11);
  EXPECT_EQ(by_size[3], 6);
  auto plan = ExpandPlan(s);
  EXPECT_EQ(plan.size(), 3u * (23 + 6));
  EXPECT_DOUBLE_EQ(CountPlannedTrials(s), plan.size());
}

TEST(ExpandPlanTest, Explicit) {
  auto s = ThreeAntagonists(Pairings::kExplicit);
  s.explicit_pairings = {{"c", "a"}, {"b"}};
  auto combos = ExpandCombinations(s);
  ASSERT_EQ(combos.size(), 7u);           // 2*3 + 1
  EXPECT_EQ(combos[0][0].antagonist, 0);  // parts sorted by antagonist index
  EXPECT_EQ(combos[0][1].antagonist, 2);
  EXPECT_EQ(PairingKey(s, combos[0]), "a@0.5+c@0.25");
  EXPECT_EQ(PairingKey(s, combos[6]), "b@2GiB/s");
  auto plan = ExpandPlan(s);
  EXPECT_EQ(plan.size(), 3u * (7 + 2));
}

TEST(ExpandPlanTest, EveryCombinationOncePerRepetition) {
  auto s = ThreeAntagonists(Pairings::kAll);
  auto plan = ExpandPlan(s);
  std::map<std::string, std::set<int>> reps;
  std::map<std::string, int> count;
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].index, static_cast<int>(i));
    ++count[plan[i].pairing];
    reps[plan[i].pairing].insert(plan[i].repetition);
  }
  EXPECT_EQ(count.size(), 24u);  // 23 combinations + baseline
  for (const auto& [key, n] : count) {
    if (key == "baseline") continue;
    EXPECT_EQ(n, 3) << key;
    EXPECT_EQ(reps[key].size(), 3u) << key;
  }
  EXPECT_EQ(count["baseline"], 18);
}

TEST(ExpandPlanTest, DeterministicForASeed) {
  auto s = ThreeAntagonists(Pairings::kAll);
  auto order = [](const std::vector<PlannedTrial>& plan) {
    std::vector<std::string> keys;
    for (const auto& t : plan) keys.push_back(t.pairing);
    return keys;
  };
  auto first = order(ExpandPlan(s));
  EXPECT_EQ(first, order(ExpandPlan(s)));
  s.seed = 43;
  EXPECT_NE(first, order(ExpandPlan(s)));
  s.randomize = false;
  auto fixed = order(ExpandPlan(s));
  s.seed = 7;
  EXPECT_EQ(fixed, order(ExpandPlan(s)));  // the seed only matters when randomizing
}

// Pins the portable shuffle: a change here changes every recorded experiment's order.
TEST(ExpandPlanTest, OrderIsPinned) {
  auto s = ThreeAntagonists(Pairings::kSingles);
  s.repetitions = 1;
  std::vector<std::string> keys;
  for (const auto& t : ExpandPlan(s)) keys.push_back(t.pairing);
  std::vector<std::string> expected = {"a@1",      "c@1",   "c@0.25",   "baseline",
                                       "baseline", "a@0.5", "b@2GiB/s", "c@0.5"};
  EXPECT_EQ(keys, expected);
}

TEST(ExpandPlanTest, FixedOrderInterleavesBaselines) {
  auto s = ThreeAntagonists(Pairings::kSingles);
  s.randomize = false;
  s.repetitions = 1;
  std::vector<std::string> keys;
  for (const auto& t : ExpandPlan(s)) keys.push_back(t.pairing);
  EXPECT_EQ(keys, (std::vector<std::string>{"baseline", "a@0.5", "a@1", "b@2GiB/s", "baseline",
                                            "c@0.25", "c@0.5", "c@1"}));
}

TEST(ExpandPlanTest, BaselinesSpreadThroughTheOrder) {
  auto s = ThreeAntagonists(Pairings::kAll);
  s.repetitions = 5;
  for (uint64_t seed : {1, 2, 3, 42}) {
    s.seed = seed;
    auto plan = ExpandPlan(s);
    std::vector<int> at;
    for (const auto& t : plan) {
      if (t.baseline) at.push_back(t.index);
    }
    ASSERT_EQ(at.size(), 30u);
    // Not bunched at the start: every block of the order has its baselines, and no gap between
    // consecutive baselines exceeds two segments (a segment holds <= 4 combinations + 1 baseline).
    EXPECT_GT(at.back(), static_cast<int>(plan.size()) * 3 / 4);
    int prev = -1;
    for (int i : at) {
      EXPECT_LE(i - prev, 2 * 5) << "seed " << seed;
      prev = i;
    }
    EXPECT_LE(static_cast<int>(plan.size()) - 1 - at.back(), 2 * 5);
  }
}

TEST(PairingKeyTest, SortedNamesAndLabels) {
  auto s = ThreeAntagonists(Pairings::kSingles);
  EXPECT_EQ(PairingKey(s, {}), "baseline");
  std::vector<PlannedPart> parts{
      {2, Level(1)}, {1, s.antagonists[1].intensities[0]}, {0, Level(0.5)}};
  EXPECT_EQ(PairingKey(s, parts), "a@0.5+b@2GiB/s+c@1");
  Intensity max = Level(1);
  max.label = "max";
  EXPECT_EQ(PairingKey(s, {{0, max}}), "a@1");  // levels print with %g, not as written
  max.max = true;  // `max` is its own intensity (open loop), named as such
  EXPECT_EQ(PairingKey(s, {{0, max}}), "a@max");
}

TEST(EstimateDurationTest, CountsCalibrationWarmupSettleVictimAndCooldown) {
  auto s = ThreeAntagonists(Pairings::kSingles);
  s.repetitions = 1;
  s.calibration_s = 2;
  s.settle_s = 1;
  s.cooldown_s = 0.5;
  s.warmup_trials = 2;
  auto plan = ExpandPlan(s);  // 6 interference + 2 baselines
  // a and c use levels (2 calibrations); b is an absolute rate. Warm-ups are victim runs.
  EXPECT_DOUBLE_EQ(EstimateDurationSeconds(s, plan, 10), 2 * 2 + 2 * 10 + 6 * 1 + 8 * (10 + 0.5));
}

TEST(ShortVictimWarningTest, WarnsWhenTheVictimLeavesTooFewAntagonistSamples) {
  auto s = ThreeAntagonists(Pairings::kSingles);
  s.min_antagonist_samples = 5;  // 5 samples x 0.2 s = 1 s
  EXPECT_EQ(ShortVictimWarning(s, 10, false), "");
  const std::string w = ShortVictimWarning(s, 0.6, true);
  EXPECT_NE(w.find("likely runs 0.6 s (median of the last run)"), std::string::npos) << w;
  EXPECT_NE(w.find("too short to judge"), std::string::npos) << w;
  s.victim.timeout_s = 0.5;  // a timeout shorter than the estimate caps it
  EXPECT_NE(ShortVictimWarning(s, 10, false).find("(victim.timeout)"), std::string::npos);
  s.antagonists.clear();  // nothing to judge: no warning
  EXPECT_EQ(ShortVictimWarning(s, 0.1, false), "");
}

}  // namespace
}  // namespace codl::experiment
