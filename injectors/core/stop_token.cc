#include "injectors/core/stop_token.h"

#include <time.h>

#include <algorithm>
#include <cmath>

namespace codl::injectors {

double MonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool StopToken::stop_requested() const {
  double now = -1;  // read the clock only if some state in the chain has a deadline
  for (const State* s = state_.get(); s != nullptr; s = s->parent.get()) {
    if (s->stopped.load(std::memory_order_relaxed)) return true;
    if (std::isfinite(s->deadline)) {
      if (now < 0) now = MonotonicSeconds();
      if (now >= s->deadline) return true;
    }
  }
  return false;
}

double StopToken::SecondsLeft() const {
  double deadline = std::numeric_limits<double>::infinity();
  for (const State* s = state_.get(); s != nullptr; s = s->parent.get()) {
    deadline = std::min(deadline, s->deadline);
  }
  return std::isfinite(deadline) ? std::max(0.0, deadline - MonotonicSeconds()) : deadline;
}

bool StopToken::SleepFor(double seconds) const {
  // Sleep in slices so a stop (which only sets a flag) is noticed within ~5 ms. An absolute
  // CLOCK_MONOTONIC deadline keeps many short sleeps from drifting.
  const double end = MonotonicSeconds() + std::max(0.0, seconds);
  constexpr double kSlice = 0.005;
  while (true) {
    if (stop_requested()) return true;
    const double now = MonotonicSeconds();
    if (now >= end) return false;
    const double until = std::min(end, now + kSlice);
    timespec ts;
    ts.tv_sec = static_cast<time_t>(until);
    ts.tv_nsec = static_cast<long>((until - static_cast<double>(ts.tv_sec)) * 1e9);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  }
}

StopToken StopToken::WithDeadline(double seconds) const {
  auto child = std::make_shared<State>();
  child->deadline = MonotonicSeconds() + seconds;
  child->parent = state_;
  return StopToken(std::move(child));
}

StopSource::StopSource() : state_(std::make_shared<StopToken::State>()) {}

StopSource::StopSource(const StopToken& parent) : StopSource() { state_->parent = parent.state_; }

void StopSource::RequestStop() { state_->stopped.store(true, std::memory_order_relaxed); }

bool StopSource::stop_requested() const { return state_->stopped.load(std::memory_order_relaxed); }

}  // namespace codl::injectors
