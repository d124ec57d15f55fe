// Cooperative cancellation for injectors. A StopSource is triggered by the host (signal thread,
// agent lease, --duration); workers poll StopToken::stop_requested() in their hot loop and sleep
// with SleepFor(), which wakes within a few milliseconds of a stop so Run() returns well within
// the 100 ms contract. Tokens chain: WithDeadline() derives a token that also stops at a time.
#pragma once

#include <atomic>
#include <limits>
#include <memory>

namespace codl::injectors {

class StopToken {
 public:
  StopToken() = default;  // never stops by itself

  bool stop_requested() const;

  // Sleeps up to `seconds`; returns true (early) when a stop is requested meanwhile.
  bool SleepFor(double seconds) const;

  // A token that stops when this one does or `seconds` from now, whichever is first.
  StopToken WithDeadline(double seconds) const;

  // Seconds until this token's earliest deadline (infinity when none).
  double SecondsLeft() const;

 private:
  friend class StopSource;
  struct State {
    std::atomic<bool> stopped{false};
    double deadline = std::numeric_limits<double>::infinity();  // MonotonicSeconds()
    std::shared_ptr<const State> parent;
  };
  explicit StopToken(std::shared_ptr<const State> s) : state_(std::move(s)) {}
  std::shared_ptr<const State> state_;
};

class StopSource {
 public:
  StopSource();
  // A source whose token also stops when `parent` does (e.g. a run's internal stop, linked to
  // the caller's).
  explicit StopSource(const StopToken& parent);
  // Safe to call from any thread, any number of times. Not async-signal-safe: call it from a
  // signal-waiting thread, not from a handler.
  void RequestStop();
  bool stop_requested() const;
  StopToken token() const { return StopToken(state_); }

 private:
  std::shared_ptr<StopToken::State> state_;
};

// CLOCK_MONOTONIC in seconds; the time base of deadlines.
double MonotonicSeconds();

}  // namespace codl::injectors
