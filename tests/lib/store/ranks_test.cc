// trial_ranks (migration 10): every rank of a victim run as several ranks comes back with its
// summary, and with series its steps (a later rank's in its RankRecord, rank 0's in the trial);
// a store at version 9 saves and reads such a trial without its ranks.
#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

VictimStep Step(int64_t n, double seconds, double comm_s) {
  VictimStep s;
  s.step = n;
  s.step_time_s = seconds;
  s.t_s = 0.1 * static_cast<double>(n);
  s.phases = {{"comm_s", comm_s}, {"compute_s", seconds - comm_s}};
  return s;
}

TrialRecord TwoRankTrial() {
  TrialRecord t = MakeTrial("e1", 0, 0, 0, 0);
  t.steps = {Step(0, 0.2, 0.15), Step(1, 0.2, 0.16)};
  RankRecord zero;
  zero.rank = 0;
  zero.node = "a";
  zero.wall_s = 1.5;
  zero.step_median_s = 0.2;
  zero.busy_median_s = 0.045;
  zero.phase_medians = {{"comm_s", 0.155}, {"compute_s", 0.045}};
  RankRecord one;
  one.rank = 1;
  one.node = "b";
  one.exit_code = 0;
  one.wall_s = 1.6;
  one.step_median_s = 0.2;
  one.busy_median_s = 0.19;
  one.phase_medians = {{"comm_s", 0.01}, {"compute_s", 0.19}};
  one.steps = {Step(0, 0.2, 0.01), Step(1, 0.2, 0.01), Step(2, 0.21, 0.02)};
  t.ranks = {zero, one};
  return t;
}

TEST(RanksTest, EveryRankRoundTripsAndItsStepsComeWithSeries) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  const TrialRecord t = TwoRankTrial();
  ASSERT_TRUE((*store)->SaveTrial(t).ok());

  auto summary = (*store)->GetTrials("e1", /*with_series=*/false);
  ASSERT_TRUE(summary.ok()) << summary.error();
  ASSERT_EQ(summary->at(0).ranks.size(), 2u);
  const RankRecord& one = summary->at(0).ranks[1];
  EXPECT_EQ(one.rank, 1);
  EXPECT_EQ(one.node, "b");
  EXPECT_DOUBLE_EQ(one.wall_s, 1.6);
  EXPECT_DOUBLE_EQ(one.busy_median_s, 0.19);
  EXPECT_EQ(one.phase_medians, t.ranks[1].phase_medians);
  EXPECT_TRUE(one.steps.empty()) << "no series asked for";

  auto full = (*store)->GetTrials("e1", /*with_series=*/true);
  ASSERT_TRUE(full.ok()) << full.error();
  const TrialRecord& got = full->at(0);
  ASSERT_EQ(got.steps.size(), 2u) << "rank 0's steps stay the trial's";
  EXPECT_DOUBLE_EQ(got.steps[1].phases.at("comm_s"), 0.16);
  ASSERT_EQ(got.ranks.size(), 2u);
  EXPECT_TRUE(got.ranks[0].steps.empty());
  ASSERT_EQ(got.ranks[1].steps.size(), 3u);
  EXPECT_EQ(got.ranks[1].steps[2].step, 2);
  EXPECT_DOUBLE_EQ(got.ranks[1].steps[2].step_time_s, 0.21);

  // Re-saved with one rank fewer: the old rows go with the old trial.
  TrialRecord fewer = t;
  fewer.ranks.clear();
  ASSERT_TRUE((*store)->SaveTrial(fewer).ok());
  auto again = (*store)->GetTrials("e1", true);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->at(0).ranks.empty());
  EXPECT_EQ(again->at(0).steps.size(), 2u);
}

TEST(RanksTest, AVersion9StoreKeepsRankZeroOnly) {
  testing::TempDir dir;
  auto v9 = Store::OpenAtSchemaVersionForTesting(dir.File("v9.db"), 9);
  ASSERT_TRUE(v9.ok()) << v9.error();
  ASSERT_TRUE((*v9)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  ASSERT_TRUE((*v9)->SaveTrial(TwoRankTrial()).ok());
  auto got = (*v9)->GetTrials("e1", true);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_TRUE(got->at(0).ranks.empty());
  EXPECT_EQ(got->at(0).steps.size(), 2u);
}

}  // namespace
}  // namespace codl::store
