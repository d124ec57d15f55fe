// DutyWindow: decides when a GPU worker (RunPacedStream, the nccl loop) may queue its next
// operation under a duty cycle. Two rules a plain "issue while the window is open" misses:
//   * the phase comes from Unix time (Clock::UnixNanos), not from the worker's own start, so
//     ranks on different hosts (NTP-synchronized to ~1 ms) open and close their windows
//     together: an NCCL rank in its off time would otherwise hold its peers' kernels spinning;
//   * an operation is queued only if it ends inside the window, counting the work already
//     queued ahead of it. Without that, up to `depth` queued operations ran past every window
//     (duty 0.1 measured ~0.14; period 10 ms at duty 0.5, ~0.9).
// Host-only logic: tested with FakeClock (tests/gpu/duty_window_test.cc).
#pragma once

#include "injectors/gpu/gpu_host.h"
#include "lib/common/clock.h"

namespace codl::injectors::gpu {

class DutyWindow {
 public:
  DutyWindow(const DutyCycle& duty, const ::codl::Clock& clock) : duty_(duty), clock_(clock) {}

  // The shared phase clock: Unix seconds.
  double Now() const { return static_cast<double>(clock_.UnixNanos()) * 1e-9; }

  // Seconds to wait before an operation expected to take `op_s` of GPU time may be queued;
  // 0: queue it now (then call Issued). op_s = 0 (not measured yet) lets one operation run
  // alone in a window, so its time can be measured.
  double WaitFor(double op_s) const;
  // An operation of `op_s` was queued now; it runs after what is already queued.
  void Issued(double op_s);
  // Nothing is in flight any more: the queue estimate restarts from now.
  void Idle();

  const DutyCycle& duty() const { return duty_; }

 private:
  DutyCycle duty_;
  const ::codl::Clock& clock_;
  double busy_until_ = 0;  // Unix seconds at which the queued work is expected to end
};

}  // namespace codl::injectors::gpu
