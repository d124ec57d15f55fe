#include "injectors/core/rate_controller.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace codl::injectors {

double SteadyClock::Now() const { return MonotonicSeconds(); }

bool SteadyClock::SleepUntil(double deadline, const StopToken& stop) {
  return !stop.SleepFor(deadline - Now());
}

RateController::RateController(double target, double start_time, RateControllerConfig config)
    : target_(target), config_(config), last_time_(start_time), pacing_rate_(target) {}

double RateController::Update(double now, double completed_units) {
  const double dt = now - last_time_;
  if (dt <= 0 || target_ <= 0) return pacing_rate_;
  const double done = completed_units - last_completed_;
  last_time_ = now;
  last_completed_ = completed_units;

  // Integral term: the exact deficit, clamped (anti-windup) so a stall, or a resource that
  // cannot keep up, never builds a debt that would later be repaid as a long burst.
  const double limit = std::max(target_ * config_.max_deficit_s, config_.min_deficit_units);
  deficit_ = std::clamp(deficit_ + target_ * dt - done, -limit, limit);

  // Saturation: the deficit sits at its upper clamp (we are behind and the extra pacing rate
  // did not help) for long enough. Leave the state once half the clamp has been repaid.
  if (deficit_ >= 0.999 * limit) {
    if (pinned_since_ < 0) pinned_since_ = now;
    if (now - pinned_since_ >= config_.saturation_hold_s) saturated_ = true;
  } else {
    pinned_since_ = -1;
    if (deficit_ < 0.5 * limit) saturated_ = false;
  }

  const double error = target_ - done / dt;  // proportional term on this window's rate
  const double u = target_ + config_.kp * error + config_.ki * deficit_;
  pacing_rate_ = std::clamp(u, 0.0, config_.max_boost * target_);
  return pacing_rate_;
}

Pacer::Pacer(Clock& clock, double burst_s) : clock_(clock), burst_s_(burst_s) {}

void Pacer::SetRate(double units_per_second) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_paced = !unlimited_.load(std::memory_order_relaxed) && rate_ > 0;
  rate_ = units_per_second;
  unlimited_.store(std::isinf(units_per_second), std::memory_order_relaxed);
  // Coming from unlimited or held: start the schedule now, with no stale credit or debt.
  if (!was_paced) next_free_ = clock_.Now();
}

double Pacer::rate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rate_;
}

double Pacer::TryAcquire(double units) {
  if (unlimited_.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (rate_ <= 0) return 0.01;  // held: look again soon (the rate may be raised)
  const double now = clock_.Now();
  const double slot = std::max(next_free_, now - burst_s_);
  if (slot > now) return slot - now;
  next_free_ = slot + units / rate_;
  return 0;
}

bool Pacer::Acquire(double units, const StopToken& stop) {
  // Short waits reserve a slot, then sleep to it (each thread gets its own slot: no herd).
  // Long waits (low rate) only sleep a bit and retry without reserving, so a rate raised by
  // the controller meanwhile takes effect promptly.
  constexpr double kMaxReservedWait = 0.02;
  while (true) {
    if (unlimited_.load(std::memory_order_relaxed)) return !stop.stop_requested();
    double wake;
    bool reserved = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const double now = clock_.Now();
      if (rate_ <= 0) {
        wake = now + 0.01;
      } else {
        const double slot = std::max(next_free_, now - burst_s_);
        if (slot - now <= kMaxReservedWait) {
          next_free_ = slot + units / rate_;
          if (slot <= now) return !stop.stop_requested();
          wake = slot;  // reserved: sleep to the slot, then go
          reserved = true;
        } else {
          wake = now + kMaxReservedWait;
        }
      }
    }
    if (!clock_.SleepUntil(wake, stop)) return false;
    if (reserved) return true;
  }
}

}  // namespace codl::injectors
