// The per-trial policies of RunPlaced (controller/trial_policies.h), each on its own.
#include "controller/trial_policies.h"

#include <gtest/gtest.h>

namespace codl::controller {
namespace {

TrialRecord StreakTrial(TrialState state) {
  TrialRecord t;
  t.state = state;
  return t;
}

TEST(FailureStreak, StopsAfterTheFirstThreeTrialsAllFailed) {
  FailureStreak s;
  s.Add(StreakTrial(TrialState::kFailed));
  EXPECT_FALSE(s.StopsAt(0));
  s.Add(StreakTrial(TrialState::kFailed));
  EXPECT_FALSE(s.StopsAt(1));
  s.Add(StreakTrial(TrialState::kFailed));
  EXPECT_TRUE(s.StopsAt(2));
}

TEST(FailureStreak, FailuresAfterAGoodTrialNeverStopTheExperiment) {
  // A victim that ran once can run: later failures are its trials', not a bad command's.
  FailureStreak s;
  s.Add(StreakTrial(TrialState::kDone));
  for (int i = 1; i <= 5; ++i) {
    s.Add(StreakTrial(TrialState::kFailed));
    EXPECT_FALSE(s.StopsAt(i)) << "trial " << i;
  }
}

TEST(FailureStreak, AFlaggedTrialBreaksTheStreak) {
  FailureStreak s;
  s.Add(StreakTrial(TrialState::kFailed));
  s.Add(StreakTrial(TrialState::kFlagged));
  s.Add(StreakTrial(TrialState::kFailed));
  EXPECT_FALSE(s.StopsAt(2));
}

experiment::PlannedTrial TracePlanned(int index, const std::string& pairing) {
  experiment::PlannedTrial t;
  t.index = index;
  t.pairing = pairing;
  t.baseline = pairing == "baseline";
  return t;
}

TEST(TracePolicy, TheFirstListedTrialOfEachPairingIsTracedTheRestRunUntraced) {
  experiment::ExperimentSpec spec;
  spec.victim.trace_steps = 5;
  const std::vector<experiment::PlannedTrial> listed = {
      TracePlanned(0, "baseline"), TracePlanned(1, "membw@1"), TracePlanned(2, "membw@1"),
      TracePlanned(3, "baseline"), TracePlanned(4, "cpu@0.5")};
  const TracePolicy p(spec, listed);
  std::vector<bool> traced;
  for (const auto& t : listed) traced.push_back(p.Traced(t));
  EXPECT_EQ(traced, (std::vector<bool>{true, true, false, false, true}));
  EXPECT_EQ(p.SpecFor(listed[0]).victim.trace_steps, 5);
  EXPECT_EQ(p.SpecFor(listed[2]).victim.trace_steps, 0);
  // A tolerance search's step (not in the listed plan) is never traced.
  EXPECT_FALSE(p.Traced(TracePlanned(9, "membw@0.25")));
  EXPECT_EQ(p.SpecFor(TracePlanned(9, "membw@0.25")).victim.trace_steps, 0);
}

TEST(TracePolicy, WithoutVictimTraceNothingIsTracedAndTheSpecIsTheExperiments) {
  experiment::ExperimentSpec spec;
  spec.name = "plain";
  const std::vector<experiment::PlannedTrial> listed = {TracePlanned(0, "baseline")};
  const TracePolicy p(spec, listed);
  EXPECT_FALSE(p.Traced(listed[0]));
  EXPECT_EQ(&p.SpecFor(listed[0]), &spec);
}

}  // namespace
}  // namespace codl::controller
