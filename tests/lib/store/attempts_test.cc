// Trial attempts (migration 18, issue 55): a trial's row is its counted, last attempt (attempt,
// failure kind); the attempts that did not count are kept beside it and read back in order; a
// store from before them reads every trial as its first attempt.
#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

AttemptRecord Dropped(int index, int attempt, FailureKind why) {
  AttemptRecord a;
  a.index = index;
  a.attempt = attempt;
  a.state = why == FailureKind::kControllerRestart ? TrialState::kCancelled : TrialState::kFailed;
  a.failure = why;
  a.error = std::string("attempt ") + std::to_string(attempt) + ": " + ToString(why);
  a.victim_node = "n1";
  a.started_unix_ms = 1000 * attempt;
  a.finished_unix_ms = 1000 * attempt + 500;
  return a;
}

TEST(AttemptsTest, TheCountedAttemptAndTheDroppedOnesReadBackInOrder) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  Store& s = **store;
  ASSERT_TRUE(s.CreateExperiment(MakeExperiment("e1", 1)).ok());
  TrialRecord t = MakeTrial("e1", 4, 1, 1, 1);
  t.attempt = 3;
  t.failure = FailureKind::kVictim;
  ASSERT_TRUE(s.SaveTrial(t).ok());
  // Saved out of order, and attempt 2 twice (a second crash at the same attempt): one row.
  ASSERT_TRUE(s.SaveAttempt("e1", Dropped(4, 2, FailureKind::kAgentLost)).ok());
  ASSERT_TRUE(s.SaveAttempt("e1", Dropped(4, 1, FailureKind::kAntagonistStart)).ok());
  ASSERT_TRUE(s.SaveAttempt("e1", Dropped(4, 2, FailureKind::kControllerRestart)).ok());

  auto trials = s.GetTrials("e1");
  ASSERT_TRUE(trials.ok()) << trials.error();
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ(trials->front().attempt, 3);
  EXPECT_EQ(trials->front().failure, FailureKind::kVictim);
  EXPECT_EQ(
      trials->front().earlier_failures,
      (std::vector<FailureKind>{FailureKind::kAntagonistStart, FailureKind::kControllerRestart}));
  auto attempts = s.GetAttempts("latest");
  ASSERT_TRUE(attempts.ok()) << attempts.error();
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].attempt, 1);
  EXPECT_EQ((*attempts)[0].failure, FailureKind::kAntagonistStart);
  EXPECT_EQ((*attempts)[0].error, "attempt 1: antagonist_start");
  EXPECT_EQ((*attempts)[1].attempt, 2);
  EXPECT_EQ((*attempts)[1].state, TrialState::kCancelled);
  EXPECT_EQ((*attempts)[1].failure, FailureKind::kControllerRestart);
  EXPECT_EQ((*attempts)[1].started_unix_ms, 2000);
  EXPECT_EQ((*attempts)[1].finished_unix_ms, 2500);
  EXPECT_FALSE(s.SaveAttempt("nope", Dropped(0, 1, FailureKind::kVictim)).ok());
  EXPECT_FALSE(s.GetAttempts("nope").ok());
}

// The row a killed controller left running is cut off with the error a resume reads as a
// controller restart; its attempt number stays.
TEST(AttemptsTest, ARunningAttemptLeftByADeadControllerIsCutOffWithItsAttempt) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  Store& s = **store;
  ExperimentRecord e = MakeExperiment("e1", 1, ExperimentState::kRunning);
  ASSERT_TRUE(s.CreateExperiment(e).ok());
  TrialRecord t = MakeTrial("e1", 0, 1, 1, 1);
  t.state = TrialState::kRunning;
  t.error = "";
  t.attempt = 2;
  ASSERT_TRUE(s.SaveTrial(t).ok());
  ASSERT_TRUE(s.MarkUnfinishedInterrupted().ok());
  auto trials = s.GetTrials("e1");
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ(trials->front().state, TrialState::kCancelled);
  EXPECT_EQ(trials->front().error, Store::kTrialCutOffError);
  EXPECT_EQ(trials->front().attempt, 2);
}

TEST(AttemptsTest, AStoreFromBeforeAttemptsReadsFirstAttemptsAndKeepsNoDroppedOnes) {
  testing::TempDir dir;
  const std::string path = dir.File("v17.db");
  auto v17 = Store::OpenAtSchemaVersionForTesting(path, 17);
  ASSERT_TRUE(v17.ok()) << v17.error();
  ASSERT_TRUE((*v17)->CreateExperiment(MakeExperiment("old", 3, ExperimentState::kDone)).ok());
  TrialRecord t = MakeTrial("old", 0, 1, 1, 1);
  t.attempt = 2;  // not kept: no column for it
  ASSERT_TRUE((*v17)->SaveTrial(t).ok());
  ASSERT_TRUE((*v17)->SaveAttempt("old", Dropped(0, 1, FailureKind::kVictim)).ok());
  EXPECT_EQ((*v17)->GetTrials("old")->front().attempt, 1);
  EXPECT_TRUE((*v17)->GetAttempts("old")->empty());
  v17->reset();
  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ((*latest)->GetTrials("old")->front().attempt, 1);
  EXPECT_EQ((*latest)->GetTrials("old")->front().failure, FailureKind::kNone);
}

}  // namespace
}  // namespace codl::store
