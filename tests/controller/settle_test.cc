// SettleWindow on its own: the targets must be held through one unbroken window; a dip restarts
// it; no complete window within the give-up time is "did not settle".
#include "controller/settle.h"

#include <cmath>

#include <gtest/gtest.h>

namespace codl::controller {
namespace {

using V = SettleWindow::Verdict;

TEST(SettleWindow, SettlesOnlyAfterAWholeUnbrokenWindow) {
  SettleWindow w(1.0, 11.0);
  EXPECT_EQ(w.Observe(0.0, true), V::kWaiting) << "one sample at target is not a window";
  EXPECT_EQ(w.Observe(0.5, true), V::kWaiting);
  EXPECT_EQ(w.Observe(0.9, false), V::kWaiting);  // a dip: the window starts again
  EXPECT_EQ(w.Observe(1.0, true), V::kWaiting);
  EXPECT_EQ(w.Observe(1.9, true), V::kWaiting) << "0.9 s since the dip";
  EXPECT_EQ(w.Observe(2.0, true), V::kSettled);
}

TEST(SettleWindow, ZeroWindowNeedsOnePollAtTarget) {
  SettleWindow w(0.0, 10.0);
  EXPECT_EQ(w.Observe(5.0, false), V::kWaiting);
  EXPECT_EQ(w.Observe(5.1, true), V::kSettled);
}

TEST(SettleWindow, GivesUpWithTheLongestHoldInTheReason) {
  SettleWindow w(2.0, 3.0);
  EXPECT_EQ(w.Observe(10.0, true), V::kWaiting);
  EXPECT_EQ(w.Observe(11.5, true), V::kWaiting);  // held 1.5 s
  EXPECT_EQ(w.Observe(12.0, false), V::kWaiting);
  EXPECT_EQ(w.Observe(13.0, true), V::kDidNotSettle);  // 3 s after the first poll
  EXPECT_DOUBLE_EQ(w.longest_hold_s(), 1.5);
  EXPECT_EQ(DidNotSettleReason(w, 3.0),
            "did not settle: targets held for at most 1.5 s of the 2 s settle window within 3 s");
}

TEST(SettleWindow, TooShortReasonOnlyBelowTheMinimum) {
  EXPECT_EQ(TooShortReason("membw", 5, 5), "");
  EXPECT_EQ(TooShortReason("membw", 3, 5),
            "too short to judge: membw had 3 samples in the victim's run (fewer than 5)");
}

TEST(TargetBoard, AllAtTargetOnlyWhenEveryLatestSampleIsAtItsLine) {
  TargetBoard b(1.0);
  b.Expect("a", 90);
  b.Expect("b", 45);
  EXPECT_FALSE(b.AllAtTarget(0.0)) << "no sample yet";
  EXPECT_TRUE(b.OnSample("a", 95, 0.1));
  EXPECT_FALSE(b.AllAtTarget(0.1)) << "b has not reported";
  EXPECT_TRUE(b.OnSample("b", 50, 0.2));
  EXPECT_TRUE(b.AllAtTarget(0.2));
  EXPECT_TRUE(b.OnSample("a", 80, 0.3));  // a dip below its line
  EXPECT_FALSE(b.AllAtTarget(0.3));
  EXPECT_TRUE(b.OnSample("a", 90, 0.4));  // exactly at the line counts
  EXPECT_TRUE(b.AllAtTarget(0.4));
  EXPECT_DOUBLE_EQ(b.Latest("a"), 90);
}

TEST(TargetBoard, AStaleSampleNoLongerCounts) {
  TargetBoard b(1.0);
  b.Expect("a", 10);
  b.OnSample("a", 20, 5.0);
  EXPECT_TRUE(b.AllAtTarget(6.0));
  EXPECT_FALSE(b.AllAtTarget(6.01)) << "a stream that went quiet must not hold the window";
}

TEST(TargetBoard, SampleAgeIsTimeSinceTheLatestSample) {
  TargetBoard b(1.0);
  b.Expect("a", 10);
  EXPECT_TRUE(std::isinf(b.SampleAgeS("a", 5.0))) << "no sample yet";
  EXPECT_TRUE(std::isinf(b.SampleAgeS("unknown", 5.0)));
  b.OnSample("a", 12, 5.0);
  EXPECT_DOUBLE_EQ(b.SampleAgeS("a", 5.25), 0.25);
  b.OnSample("a", 3, 6.0);
  EXPECT_DOUBLE_EQ(b.SampleAgeS("a", 6.5), 0.5);
}

TEST(TargetBoard, SamplesOfOtherAntagonistsAreIgnored) {
  TargetBoard b(1.0);
  b.Expect("t1-membw-n1", 10);
  EXPECT_FALSE(b.OnSample("t10-membw-n1", 20, 0.0));
  EXPECT_FALSE(b.AllAtTarget(0.0));
  EXPECT_DOUBLE_EQ(b.Latest("t10-membw-n1"), 0);
}

TEST(TargetBoard, AnEmptyBoardIsNeverAtTarget) {
  TargetBoard b(1.0);
  EXPECT_FALSE(b.AllAtTarget(0.0));
}

// The board and the window together, as the runner drives them: one Observe per sample.
TEST(TargetBoard, SamplesDriveTheSettleWindow) {
  TargetBoard b(1.0);
  b.Expect("a", 90);
  SettleWindow w(1.0, 11.0);
  double t = 0;
  auto feed = [&](double achieved) {
    t += 0.25;
    b.OnSample("a", achieved, t);
    return w.Observe(t, b.AllAtTarget(t));
  };
  EXPECT_EQ(feed(100), V::kWaiting);  // held from 0.25 s
  EXPECT_EQ(feed(100), V::kWaiting);
  EXPECT_EQ(feed(50), V::kWaiting);                                    // dip at 0.75 s: restart
  for (int i = 0; i < 4; ++i) EXPECT_EQ(feed(100), V::kWaiting) << i;  // 1.0 .. 1.75 s
  EXPECT_EQ(feed(100), V::kSettled) << "1 s after the first sample past the dip (1.0 s)";
}

// A start is "late because of its preparation" only when that preparation ended after the
// common start; the reason says whether the setup overran its estimate.
TEST(StartAccount, LateStartReasonNamesASetupOverrun) {
  StartAccount a;
  a.skew_ms = 212;
  a.setup_s = 0.561;
  a.setup_estimate_s = 0.35;
  EXPECT_EQ(LateStartReason("flood", "h2", a), "") << "no ready time: nothing to say";
  a.ready_ms = -3.5;
  EXPECT_EQ(LateStartReason("flood", "h2", a), "")
      << "ready before the start: woke late, if at all";
  a.ready_ms = 211.9;
  EXPECT_EQ(LateStartReason("flood", "h2", a),
            "flood on h2 started 212 ms late: its setup took 0.561 s, over the agent's estimate "
            "of 0.35 s");
  a.setup_s = 0.2;
  EXPECT_EQ(LateStartReason("flood", "h2", a),
            "flood on h2 started 212 ms late: its preparation ended 212 ms after the common "
            "start, its setup (0.2 s) within the estimate (0.35 s)");
}

TEST(StartAccount, FormatsOneParsableLine) {
  StartAccount a;
  a.skew_ms = 0.4123;
  a.ready_ms = -226.3;
  a.setup_s = 0.1234;
  a.setup_estimate_s = 0.35;
  a.first_load_ms = 0.52;
  EXPECT_EQ(FormatStartAccount("flood", "h2", a),
            "antagonist=flood node=h2 skew_ms=0.412 ready_ms=-226.300 setup_s=0.1234 "
            "setup_estimate_s=0.3500 first_load_ms=0.520 first_done_ms=-");
}

}  // namespace
}  // namespace codl::controller
