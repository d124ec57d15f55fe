// DutyWindow with a fake clock: windows phased on Unix time (shared across ranks), and only
// operations that end inside the window are queued (no overshoot from queued work).
#include "injectors/gpu/duty_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>

namespace codl::injectors::gpu {
namespace {

// Moves the clock to the start of the next on-window. Periods here are binary fractions, so
// the Unix-time phase is exact.
void AdvanceToWindowStart(FakeClock& clock, const DutyWindow& w) {
  const double now = w.Now();
  double wait = w.duty().WaitAt(now);
  if (wait == 0) wait = w.duty().WindowEndAt(now) - now + w.duty().period() * (1 - w.duty().duty());
  clock.Advance(wait);
  ASSERT_EQ(w.duty().WaitAt(w.Now()), 0);
}

TEST(DutyWindowTest, WorkersStartedAtDifferentTimesShareThePhase) {
  FakeClock clock;
  const DutyCycle duty(0.5, 0.25);
  DutyWindow first(duty, clock);
  AdvanceToWindowStart(clock, first);
  clock.Advance(0.03);  // a second rank starts its loop 30 ms later
  DutyWindow second(duty, clock);
  for (double step : {0.0, 0.05, 0.1, 0.07}) {
    clock.Advance(step);
    EXPECT_DOUBLE_EQ(first.WaitFor(0.001), second.WaitFor(0.001)) << "at +" << step;
  }
}

TEST(DutyWindowTest, QueuesOnlyWhatEndsInsideTheWindow) {
  FakeClock clock;
  DutyWindow w(DutyCycle(0.5, 0.25), clock);  // on for 125 ms
  AdvanceToWindowStart(clock, w);
  int queued = 0;
  while (w.WaitFor(0.03) == 0 && queued < 100) {
    w.Issued(0.03);
    ++queued;
  }
  EXPECT_EQ(queued, 4);                      // 4 × 30 ms fit in 125 ms, a 5th would end at 150 ms
  EXPECT_NEAR(w.WaitFor(0.03), 0.25, 1e-9);  // the next window opens one period later
  clock.Advance(0.1);                        // the GPU works through the queue
  EXPECT_GT(w.WaitFor(0.01), 0);             // 20 ms still queued: 10 more do not fit
  EXPECT_EQ(w.WaitFor(0.004), 0);            // ... but 4 ms do (ends at 124 ms)
}

TEST(DutyWindowTest, UnknownDurationRunsAloneUntilIdle) {
  FakeClock clock;
  DutyWindow w(DutyCycle(0.5, 0.25), clock);
  AdvanceToWindowStart(clock, w);
  ASSERT_EQ(w.WaitFor(0), 0);
  w.Issued(0);  // not measured yet: books the rest of the window
  EXPECT_GT(w.WaitFor(0), 0);
  EXPECT_GT(w.WaitFor(0.001), 0);
  clock.Advance(0.01);
  w.Idle();  // it finished: the window is free again
  EXPECT_EQ(w.WaitFor(0.001), 0);
}

TEST(DutyWindowTest, AlwaysOnNeverWaits) {
  FakeClock clock;
  DutyWindow w(DutyCycle(1, 0.1), clock);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(w.WaitFor(0.5), 0);
    w.Issued(0.5);
  }
}

// A worker keeping up to `depth` operations queued on a serial GPU, for many periods: all GPU
// time falls inside the on-windows and the busy fraction is the duty (the review measured 0.14
// for duty 0.1 and ~0.9 for duty 0.5 with a 10 ms period when only issuing was gated).
double SimulatedBusyFraction(double duty, double period, double op_s, int depth,
                             double* busy_outside) {
  FakeClock clock;
  DutyWindow w(DutyCycle(duty, period), clock);
  AdvanceToWindowStart(clock, w);
  const double t0 = w.Now(), t_end = t0 + 200 * period;
  std::deque<double> ends;  // completion times of queued operations
  double gpu_free = t0, busy = 0;
  *busy_outside = 0;
  while (w.Now() < t_end) {
    const double now = w.Now();
    while (!ends.empty() && ends.front() <= now) ends.pop_front();
    if (ends.empty()) w.Idle();
    if (static_cast<int>(ends.size()) < depth && w.WaitFor(op_s) == 0) {
      const double start = std::max(now, gpu_free);
      gpu_free = start + op_s;
      ends.push_back(gpu_free);
      busy += op_s;
      // GPU time past the end of the window the operation started in.
      const double end = w.duty().WindowEndAt(start);
      *busy_outside += std::max(0.0, gpu_free - std::max(end, start));
      w.Issued(op_s);
      continue;
    }
    clock.Advance(50e-6);  // a poll
  }
  return busy / (t_end - t0);
}

TEST(DutyWindowTest, SimulatedGpuBusyMatchesTheDuty) {
  struct Case {
    double duty, period, op_s;
  } cases[] = {{0.1, 0.125, 0.002}, {0.5, 0.015625, 0.002}, {0.25, 0.5, 0.01}};
  for (const Case& c : cases) {
    double outside = 0;
    const double busy = SimulatedBusyFraction(c.duty, c.period, c.op_s, 8, &outside);
    EXPECT_LE(busy, c.duty + 1e-9) << "duty " << c.duty << " period " << c.period;
    EXPECT_GE(busy, c.duty - c.op_s / c.period - 1e-9) << "duty " << c.duty;
    EXPECT_NEAR(outside, 0, 1e-9) << "duty " << c.duty;
  }
}

TEST(DutyWindowTest, RejectsPeriodsTooShortForTheOperations) {
  EXPECT_EQ(CheckDutyWindow(DutyCycle(0.5, 0.1), 0.002).message(), "");
  EXPECT_EQ(CheckDutyWindow(DutyCycle(1, 0.001), 0.5).message(), "");  // always on: no window
  EXPECT_EQ(CheckDutyWindow(DutyCycle(0.5, 0.001), 0).message(), "");  // not measured yet
  const std::string e =
      CheckDutyWindow(DutyCycle(0.5, 0.01), 0.004).message();  // 2.5 ops per period
  EXPECT_NE(e.find("option 'period': 10 ms with duty 0.5 is too short for operations of 4 ms"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("period >= 20 ms"), std::string::npos) << e;
  // 5 ops per period, but the 1 ms on-window is shorter than one 2 ms operation.
  const std::string on = CheckDutyWindow(DutyCycle(0.01, 0.1), 0.002).message();
  EXPECT_NE(on.find("period >= 200 ms"), std::string::npos) << on;
}

TEST(DutyCycleTest, WindowEnd) {
  const DutyCycle d(0.25, 0.5);
  EXPECT_DOUBLE_EQ(d.WindowEndAt(10.0), 10.125);
  EXPECT_DOUBLE_EQ(d.WindowEndAt(10.1), 10.125);
  EXPECT_DOUBLE_EQ(d.WindowEndAt(10.2), 10.2);  // closed
  EXPECT_TRUE(std::isinf(DutyCycle(1, 0.5).WindowEndAt(3)));
}

}  // namespace
}  // namespace codl::injectors::gpu
