// The typed events a run publishes: each has the kind views decide from, the typed fields that
// kind carries, and the text older readers print.
#include "controller/run_events.h"

#include <gtest/gtest.h>

#include "controller/trial_detail.h"

namespace codl::controller {
namespace {

TrialRecord Trial(TrialState state) {
  TrialRecord t;
  t.index = 2;
  t.pairing = "membw@0.5";
  t.state = state;
  t.value_s = 0.125;
  return t;
}

TEST(RunEvents, AFinishedTrialsKindFollowsItsState) {
  using E = v1::ExperimentEvent;
  EXPECT_EQ(events::TrialFinished(Trial(TrialState::kDone), 12).kind_case(), E::kTrialDone);
  EXPECT_EQ(events::TrialFinished(Trial(TrialState::kFailed), 12).kind_case(), E::kTrialFailed);
  EXPECT_EQ(events::TrialFinished(Trial(TrialState::kFlagged), 12).kind_case(), E::kTrialFlagged);
  EXPECT_EQ(events::TrialFinished(Trial(TrialState::kCancelled), 12).kind_case(),
            E::kTrialCancelled);
}

TEST(RunEvents, AFlaggedTrialCarriesItsReasonsAsAList) {
  TrialRecord t = Trial(TrialState::kFlagged);
  t.flag_reasons = {{FlagCode::kDidNotSettle, "did not settle: held 0.2 s of 1 s"},
                    {FlagCode::kMissedTarget, "membw reached 412 of target 1e+03 bytes/s"}};
  t.error = JoinFlagReasons(t.flag_reasons);
  const v1::ExperimentEvent ev = events::TrialFinished(t, 12);
  const v1::TrialFinished& f = ev.trial_flagged();
  EXPECT_EQ(f.index(), 2);
  EXPECT_EQ(f.total(), 12);
  EXPECT_EQ(f.pairing(), "membw@0.5");
  EXPECT_EQ(f.state(), v1::TRIAL_FLAGGED);
  EXPECT_EQ(f.metric(), 0.125);
  ASSERT_EQ(f.flag_reasons_size(), 2);
  EXPECT_EQ(f.flag_reasons(0).code(), v1::FlagReason::DID_NOT_SETTLE);
  EXPECT_EQ(f.flag_reasons(1).code(), v1::FlagReason::MISSED_TARGET);
  EXPECT_EQ(f.flag_reasons(1).detail(), "membw reached 412 of target 1e+03 bytes/s");
  EXPECT_EQ(f.error(), "") << "a flag is not an error";
  EXPECT_EQ(ev.message(),
            "trial 3/12 membw@0.5: flagged, elapsed 125.0 ms — did not settle: held 0.2 s of 1 s; "
            "membw reached 412 of target 1e+03 bytes/s");
}

// The progress line names the experiment's metric, the figure the table is made of, not the
// victim's own per-step summary (issue: "metric 0.038 s" beside an elapsed 1.16 s).
TEST(RunEvents, AFinishedTrialSaysTheExperimentsMetricByName) {
  TrialRecord t = Trial(TrialState::kDone);
  t.value_s = 0.038;  // the victim's mean step time
  for (int i = 0; i < 11; ++i) {
    VictimStep s;
    s.step = i;
    s.step_time_s = i == 0 ? 5.0 : 0.25;
    s.warmup = i == 0;
    t.steps.push_back(s);
  }
  EXPECT_EQ(events::TrialFinished(t, 4).message(), "trial 3/4 membw@0.5: done, elapsed 2.50 s");
  auto throughput = experiment::ParseTrialMetric("throughput");
  ASSERT_TRUE(throughput.ok());
  EXPECT_EQ(events::TrialFinished(t, 4, *throughput).message(),
            "trial 3/4 membw@0.5: done, throughput 4 steps/s");
  EXPECT_EQ(events::TrialFinished(t, 4).trial_done().metric(), 0.038)
      << "the typed field keeps the victim's figure";
}

TEST(RunEvents, AFailedTrialCarriesItsError) {
  TrialRecord t = Trial(TrialState::kFailed);
  t.error = "victim exited with status 3";
  t.stderr_tail =
      "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n";
  const v1::ExperimentEvent ev = events::TrialFinished(t, 4);
  EXPECT_EQ(ev.trial_failed().error(), "victim exited with status 3");
  EXPECT_EQ(ev.message(),
            "trial 3/4 membw@0.5: failed — victim exited with status 3: ModuleNotFoundError: No "
            "module named 'torch'")
      << "no metric (a failed trial has none), and why, from the victim's stderr";
}

TEST(RunEvents, StartsCalibrationsAndWarmUps) {
  const v1::ExperimentEvent started = events::TrialStarted(0, 4, "baseline");
  EXPECT_EQ(started.trial_started().index(), 0);
  EXPECT_EQ(started.trial_started().pairing(), "baseline");
  EXPECT_EQ(started.message(), "trial 1/4 baseline started");

  const v1::ExperimentEvent cal = events::Calibrating("membw", "memcpy", "n1", 5, "none cached");
  EXPECT_EQ(cal.calibrating().antagonist(), "membw");
  EXPECT_EQ(cal.calibrating().injector(), "memcpy");
  EXPECT_EQ(cal.calibrating().node(), "n1");
  EXPECT_EQ(cal.calibrating().duration_s(), 5);
  EXPECT_EQ(cal.calibrating().reason(), "none cached");
  EXPECT_EQ(cal.message(), "calibrating membw (memcpy) on n1 for 5 s (none cached)");
  EXPECT_EQ(events::Calibrating("m", "memcpy", "n1", 1.5, "").message(),
            "calibrating m (memcpy) on n1 for 1.5 s");

  const v1::ExperimentEvent w = events::WarmUpStarted(1, 2, "n1");
  EXPECT_EQ(w.warm_up().run(), 1);
  EXPECT_EQ(w.warm_up().runs(), 2);
  EXPECT_FALSE(w.warm_up().finished());
  EXPECT_EQ(w.message(), "warm-up run 1/2 on n1 (antagonists off; discarded)");
  const v1::ExperimentEvent wd = events::WarmUpFinished(1, 2, 3.25);
  EXPECT_TRUE(wd.warm_up().finished());
  EXPECT_EQ(wd.warm_up().wall_s(), 3.25);
  EXPECT_EQ(wd.message(), "warm-up run 1 done in 3.25 s");
}

TEST(RunEvents, ExperimentDatasetNoteAndWatch) {
  const v1::ExperimentEvent run = events::ExperimentChanged(ExperimentState::kRunning, "12 trials");
  EXPECT_EQ(run.experiment().state(), v1::EXPERIMENT_RUNNING);
  EXPECT_EQ(run.message(), "experiment started: 12 trials");
  const v1::ExperimentEvent failed =
      events::ExperimentChanged(ExperimentState::kFailed, "no node matches");
  EXPECT_EQ(failed.experiment().state(), v1::EXPERIMENT_FAILED);
  EXPECT_EQ(failed.experiment().error(), "no node matches");
  EXPECT_EQ(failed.message(), "experiment failed: no node matches");
  EXPECT_EQ(events::ExperimentChanged(ExperimentState::kDone, "").message(), "experiment done");

  EXPECT_EQ(events::DatasetChanged(0, 256).message(),
            "dataset: the victim is generating 256 samples");
  EXPECT_EQ(events::DatasetChanged(256, 256).dataset().generated(), 256);
  EXPECT_EQ(events::DatasetChanged(256, 256).message(),
            "dataset: the victim generated 256 samples");

  const v1::ExperimentEvent note = events::Note(v1::Note::WARNING, "trial 3: did not settle");
  EXPECT_EQ(note.note().severity(), v1::Note::WARNING);
  EXPECT_EQ(note.note().text(), "trial 3: did not settle");
  EXPECT_EQ(note.message(), "trial 3: did not settle");
  EXPECT_TRUE(events::WatchStarted().has_watch_started());
}

}  // namespace
}  // namespace codl::controller

namespace codl::controller {
namespace {

TEST(MissedTargets, SayTheRatesInTheInjectorsUnit) {
  AntagonistResult membw;
  membw.name = "membw";
  membw.unit = "bytes/s";
  membw.achieved_rate = 4.0 * (1 << 30);
  membw.target_rate = 5.0 * (1 << 30);
  membw.reached_target = false;
  AntagonistResult fine = membw;
  fine.reached_target = true;
  const auto missed = trial_detail::MissedTargets({membw, fine});
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].code, FlagCode::kMissedTarget);
  EXPECT_EQ(missed[0].detail, "membw reached 4.00 GiB/s of target 5.00 GiB/s (80%)");
}

}  // namespace
}  // namespace codl::controller
