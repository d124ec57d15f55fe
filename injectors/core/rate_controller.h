// Closed-loop rate control shared by every injector.
//
// Open-loop throttles (sleep per chunk, fio `rate`, stress-ng memrate) undershoot whenever a
// worker is descheduled or a completion is late, and burst to catch up. CoDL splits the job:
//   * Pacer: a virtual-time token bucket that spaces work at a pacing rate with a small
//     bounded credit (burst). Credit beyond the burst is lost on purpose, so no big bursts.
//   * RateController: a PI controller on the *achieved* (completed) rate. Its integral is the
//     exact accumulated deficit (target·t − completed), so whatever the pacer lost to
//     preemption or latency is paid back, and the long-run mean converges to the target.
//     Anti-windup clamps the deficit; when the resource cannot deliver the target, the deficit
//     stays pinned at its clamp and the controller reports `saturated`.
// The clock is an interface so both can be tested with a fake clock and a simulated plant.
#pragma once

#include <atomic>
#include <mutex>

#include "injectors/core/stop_token.h"

namespace codl::injectors {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double Now() const = 0;  // seconds, monotonic
  // Sleeps until `deadline` (in Now()'s time base); returns false if `stop` fired first.
  virtual bool SleepUntil(double deadline, const StopToken& stop) = 0;
};

// CLOCK_MONOTONIC, sleeping through StopToken::SleepFor (wakes within ~5 ms of a stop).
class SteadyClock final : public Clock {
 public:
  double Now() const override;
  bool SleepUntil(double deadline, const StopToken& stop) override;
};

struct RateControllerConfig {
  double kp = 0.2;             // gain on the last window's rate error (dimensionless)
  double ki = 4.0;             // 1/s, gain on the accumulated deficit: ~250 ms to pay it back
  double max_deficit_s = 0.1;  // anti-windup: |deficit| ≤ target × this
  // ... and never below this many units: the work a window may see complete at once (a unit
  // times the units in flight). A unit that takes longer than max_deficit_s at the target (a
  // 64 MiB copy at 0.5 GB/s) otherwise never fits the clamp: the deficit is cut at every
  // completion, the lost part is never paid back, and the run under-delivers, flagged saturated.
  double min_deficit_units = 0;
  double max_boost = 1.6;          // pacing rate stays within [0, max_boost × target]
  double saturation_hold_s = 0.5;  // deficit pinned at its clamp this long ⇒ saturated
};

class RateController {
 public:
  RateController(double target, double start_time, RateControllerConfig config = {});

  // Feeds the time and the cumulative completed units; returns the pacing rate to apply.
  double Update(double now, double completed_units);

  double target() const { return target_; }
  double pacing_rate() const { return pacing_rate_; }
  double deficit() const { return deficit_; }
  bool saturated() const { return saturated_; }

 private:
  double target_;
  RateControllerConfig config_;
  double last_time_;
  double last_completed_ = 0;
  double deficit_ = 0;  // units behind the target (negative: ahead)
  double pacing_rate_;
  double pinned_since_ = -1;  // when the deficit reached its upper clamp, -1 if not there
  bool saturated_ = false;
};

// Thread-safe virtual-time token bucket. Each reservation takes the next slot of
// `units / rate` seconds; a slot may start up to `burst_s` in the past (bounded credit).
class Pacer {
 public:
  explicit Pacer(Clock& clock, double burst_s = 0.01);

  // Units per second; +infinity = unlimited (no pacing), 0 = hold all work.
  void SetRate(double units_per_second);
  double rate() const;

  // Blocks until `units` may be spent; false if `stop` fired first.
  bool Acquire(double units, const StopToken& stop);

  // Non-blocking: if `units` are due now, takes them and returns 0; otherwise takes nothing
  // and returns the seconds until they would be due (for callers that wait on something
  // else meanwhile, e.g. io_uring completions).
  double TryAcquire(double units);

 private:
  Clock& clock_;
  const double burst_s_;
  std::atomic<bool> unlimited_{true};
  mutable std::mutex mu_;
  double rate_ = 0;       // guarded by mu_
  double next_free_ = 0;  // guarded by mu_: start of the next free slot
};

}  // namespace codl::injectors
