// Ranks of a distributed victim: busy time is step time minus comm_s; the slowest rank is named
// only past kSlowestRankBehind; the long exports carry every rank.
#include "lib/analysis/rank_summary.h"

#include <gtest/gtest.h>

#include "lib/analysis/results.h"
#include "lib/analysis/trial_rows.h"

namespace codl::experiment {
namespace {

VictimStep Step(double seconds, double comm_s, bool warmup = false) {
  VictimStep s;
  s.step_time_s = seconds;
  if (comm_s >= 0) s.phases["comm_s"] = comm_s;
  s.warmup = warmup;
  return s;
}

TEST(RankSummaryTest, BusyIsStepMinusCommOverMeasuredSteps) {
  RankRecord r;
  SummarizeRankSteps({Step(9, 0, true), Step(0.2, 0.15), Step(0.3, 0.2), Step(0.25, 0.15)}, &r);
  EXPECT_DOUBLE_EQ(r.step_median_s, 0.25);
  EXPECT_DOUBLE_EQ(r.busy_median_s, 0.1) << "median of 0.05, 0.1, 0.1; the warm-up left out";
  RankRecord no_comm;
  SummarizeRankSteps({Step(0.2, -1), Step(0.4, -1)}, &no_comm);
  EXPECT_DOUBLE_EQ(no_comm.busy_median_s, no_comm.step_median_s) << "all of it is busy time";
  RankRecord none;
  SummarizeRankSteps({}, &none);
  EXPECT_EQ(none.step_median_s, 0);
}

// A trial of `busy.size()` ranks with these busy medians (step time 1 s each).
TrialRecord Trial(int index, const std::vector<double>& busy,
                  TrialState state = TrialState::kDone) {
  TrialRecord t;
  t.index = index;
  t.pairing = "baseline";
  t.baseline = true;
  t.state = state;
  t.wall_s = t.value_s = 1;
  for (size_t i = 0; i < busy.size(); ++i) {
    RankRecord r;
    r.rank = static_cast<int>(i);
    r.node = std::string(1, static_cast<char>('a' + i));
    r.step_median_s = 1;
    r.busy_median_s = busy[i];
    t.ranks.push_back(r);
  }
  return t;
}

TEST(RankSummaryTest, TheSlowestRankIsNamedOnlyPastTheThreshold) {
  const TrialRecord a = Trial(0, {0.4, 0.5, 0.8}), b = Trial(1, {0.4, 0.5, 0.9});
  const TrialRecord failed = Trial(2, {0.1, 5, 0.1}, TrialState::kFailed);
  RankSpread s = SpreadOfRanks({&a, &b, &failed});
  ASSERT_EQ(s.ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(s.ranks[2].busy_median_s, 0.85);
  EXPECT_EQ(s.ranks[2].trials, 2) << "the failed trial does not count";
  EXPECT_DOUBLE_EQ(s.median_busy_s, 0.5);
  EXPECT_DOUBLE_EQ(s.spread, (0.85 - 0.4) / 0.5);
  EXPECT_EQ(s.slowest, 2);
  EXPECT_NEAR(s.behind, 0.7, 1e-12);
  EXPECT_TRUE(s.SlowestNamed());

  const TrialRecord even = Trial(0, {0.50, 0.51});  // 1 % apart: nobody is named
  s = SpreadOfRanks({&even});
  EXPECT_EQ(s.slowest, 1);
  EXPECT_FALSE(s.SlowestNamed());

  const TrialRecord single = Trial(0, {});
  EXPECT_TRUE(SpreadOfRanks({&single}).ranks.empty());
}

TEST(RankSummaryTest, ResultsCarryTheRanksInTableAndJson) {
  ExperimentRecord e;
  e.id = "x";
  std::vector<TrialRecord> trials = {Trial(0, {0.2, 0.6}), Trial(1, {0.21, 0.62}),
                                     Trial(2, {0.19, 0.58})};
  const ExperimentResults r = Summarize(e, trials);
  const std::string table = FormatTable(r, /*wide=*/true);
  EXPECT_NE(table.find("ranks (busy time: step minus comm_s): 0@a 200.0 ms, 1@b 600.0 ms"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("slowest: rank 1 (b), 50% behind the median rank"), std::string::npos)
      << table;
  const std::string json = FormatJson(r);
  EXPECT_NE(json.find("\"slowest_rank\": 1"), std::string::npos) << json;
}

TEST(RankSummaryTest, LongExportsHaveARowPerRank) {
  ExperimentRecord e;
  e.id = "x";
  TrialRecord t = Trial(0, {0.2, 0.6});
  t.phase_medians = {{"comm_s", 0.8}};
  t.ranks[1].phase_medians = {{"comm_s", 0.4}};
  const TidyTable ranks = RanksTable(e, {t});
  ASSERT_EQ(ranks.rows.size(), 2u);
  const TidyTable phases = PhasesTable(e, {t});
  ASSERT_EQ(phases.rows.size(), 2u) << "comm_s of rank 0 and of rank 1";
  TrialRecord one;
  one.pairing = "baseline";
  one.state = TrialState::kDone;
  one.steps = {Step(0.3, 0.1)};
  const TidyTable single = RanksTable(e, {one});
  ASSERT_EQ(single.rows.size(), 1u) << "a single instance is rank 0";
}

}  // namespace
}  // namespace codl::experiment
