// Clock: injected wherever logic depends on time, so it is tested with a fake clock instead of
// sleeping. Monotonic seconds for durations; wall-clock Unix nanoseconds for cross-host times.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace codl {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double MonotonicSeconds() const = 0;
  virtual int64_t UnixNanos() const = 0;
};

class SystemClock : public Clock {
 public:
  double MonotonicSeconds() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t UnixNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static SystemClock* Get() {
    static SystemClock c;
    return &c;
  }
};

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

 private:
  mutable std::mutex mu_;
  double now_s_ = 1000;
};

}  // namespace codl
