// Clock waits (lib/common/clock.h): the runner's settle polls and cooldown wait through them,
// so that a cancel ends them at once. Here because the controller is their user.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "lib/common/clock.h"

namespace codl {
namespace {

TEST(ClockWait, SystemClockReturnsAtOnceWhenAlreadyCancelled) {
  std::atomic<bool> cancel{true};
  EXPECT_FALSE(SystemClock::Get()->SleepFor(3600, cancel));  // would hang for an hour if not
}

TEST(ClockWait, SystemClockWaitEndsWhenAnotherThreadCancels) {
  std::atomic<bool> cancel{false};
  // Races the wait's start on purpose: cancelled before or during it, the wait must end.
  std::thread canceller([&] { cancel = true; });
  EXPECT_FALSE(SystemClock::Get()->SleepFor(3600, cancel));
  canceller.join();
}

TEST(ClockWait, SystemClockPastDeadlineIsReachedAtOnce) {
  std::atomic<bool> cancel{false};
  const SystemClock& clock = *SystemClock::Get();
  EXPECT_TRUE(clock.WaitUntil(clock.MonotonicSeconds() - 1, cancel));
}

TEST(ClockWait, FakeClockJumpsToTheDeadlineWithoutSleeping) {
  FakeClock clock;
  std::atomic<bool> cancel{false};
  const double t0 = clock.MonotonicSeconds();
  EXPECT_TRUE(clock.SleepFor(3600, cancel));
  EXPECT_DOUBLE_EQ(clock.MonotonicSeconds(), t0 + 3600);
  EXPECT_TRUE(clock.WaitUntil(t0, cancel)) << "a past deadline is reached";
  EXPECT_DOUBLE_EQ(clock.MonotonicSeconds(), t0 + 3600) << "time never goes back";
  EXPECT_EQ(clock.Waits(), 2);
}

TEST(ClockWait, FakeClockCancelFromTheWaitHookLeavesTimeWhereItWas) {
  FakeClock clock;
  std::atomic<bool> cancel{false};
  double seen = 0;
  clock.OnWait([&](double seconds) {
    seen = seconds;
    cancel = true;
  });
  const double t0 = clock.MonotonicSeconds();
  EXPECT_FALSE(clock.SleepFor(2.5, cancel));
  EXPECT_DOUBLE_EQ(seen, 2.5);
  EXPECT_DOUBLE_EQ(clock.MonotonicSeconds(), t0);
}

}  // namespace
}  // namespace codl
