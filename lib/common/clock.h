// Clock: injected wherever logic depends on time, so it is tested with a fake clock instead of
// sleeping. Monotonic seconds for durations; wall-clock Unix nanoseconds for cross-host times.
// Waits go through the clock too (WaitUntil/SleepFor), so that every wait can be cancelled and
// a test's wait of an hour takes no time at all.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace codl {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double MonotonicSeconds() const = 0;
  virtual int64_t UnixNanos() const = 0;
  // Waits until MonotonicSeconds() reaches deadline_s. Returns true when it did, false as soon
  // as `cancel` is set (at once when it already is).
  virtual bool WaitUntil(double deadline_s, const std::atomic<bool>& cancel) const = 0;
  bool SleepFor(double seconds, const std::atomic<bool>& cancel) const {
    return WaitUntil(MonotonicSeconds() + seconds, cancel);
  }
  // Waits on `cv` (`lock` holds its mutex) until notified or `seconds` pass; may wake early. The
  // caller re-checks its condition and the time. A fake clock lets the time pass instead, with
  // `lock` released meanwhile, so that a loop waiting for another thread's news is tested
  // without sleeping (the news is sent from the fake's wait hook).
  virtual void WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                       double seconds) const {
    cv.wait_for(lock, std::chrono::duration<double>(seconds));
  }
};

// Seconds on the monotonic clock (an arbitrary epoch): for measuring intervals.
inline double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class SystemClock : public Clock {
 public:
  // Cancel flags are plain atomics that nobody notifies, so a wait polls its flag this often:
  // a cancel is seen within 10 ms, for a negligible cost in wake-ups.
  static constexpr double kCancelPollS = 0.01;

  double MonotonicSeconds() const override { return SteadySeconds(); }
  int64_t UnixNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  bool WaitUntil(double deadline_s, const std::atomic<bool>& cancel) const override {
    for (;;) {
      if (cancel) return false;
      const double left = deadline_s - MonotonicSeconds();
      if (left <= 0) return true;
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, kCancelPollS)));
    }
  }
  static SystemClock* Get() {
    static SystemClock c;
    return &c;
  }
};

// Time moves only when told: by Advance, or by a wait, which jumps straight to its deadline.
class FakeClock : public Clock {
 public:
  double MonotonicSeconds() const override {
    std::lock_guard<std::mutex> l(mu_);
    return now_s_;
  }
  int64_t UnixNanos() const override {
    std::lock_guard<std::mutex> l(mu_);
    return 1'700'000'000'000'000'000LL + static_cast<int64_t>(now_s_ * 1e9);
  }
  void Advance(double s) {
    std::lock_guard<std::mutex> l(mu_);
    now_s_ += s;
  }
  // Called at the start of every wait with its length, before the clock looks at `cancel`: a
  // test sets the cancel flag from here to act as another thread cancelling during that wait.
  void OnWait(std::function<void(double seconds)> hook) {
    std::lock_guard<std::mutex> l(mu_);
    on_wait_ = std::move(hook);
  }
  bool WaitUntil(double deadline_s, const std::atomic<bool>& cancel) const override {
    std::function<void(double)> hook;
    {
      std::lock_guard<std::mutex> l(mu_);
      hook = on_wait_;
      ++waits_;
    }
    if (hook) hook(deadline_s - MonotonicSeconds());
    if (cancel) return false;
    std::lock_guard<std::mutex> l(mu_);
    now_s_ = std::max(now_s_, deadline_s);
    return true;
  }
  void WaitFor(std::condition_variable&, std::unique_lock<std::mutex>& lock,
               double seconds) const override {
    static const std::atomic<bool> kNever{false};
    lock.unlock();
    SleepFor(seconds, kNever);  // counts as a wait and runs the hook
    lock.lock();
  }
  int Waits() const {
    std::lock_guard<std::mutex> l(mu_);
    return waits_;
  }

 private:
  mutable std::mutex mu_;
  // mutable: waits take a const Clock (callers only read time) and still let fake time pass.
  mutable double now_s_ = 1000;
  mutable int waits_ = 0;
  std::function<void(double)> on_wait_;
};

}  // namespace codl
