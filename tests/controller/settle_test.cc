// SettleWindow on its own: the targets must be held through one unbroken window; a dip restarts
// it; no complete window within the give-up time is "did not settle".
#include "controller/settle.h"

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

}  // namespace
}  // namespace codl::controller
