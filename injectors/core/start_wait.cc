#include "injectors/core/start_wait.h"

#include <time.h>

#include <algorithm>

namespace codl::injectors {

int64_t RealtimeNanos() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool WaitUntilUnixNs(int64_t deadline_unix_ns, const StopToken& stop, int64_t spin_ns) {
  constexpr int64_t kStopCheckNs = 20'000'000;
  const int64_t spin_from = deadline_unix_ns - std::max<int64_t>(spin_ns, 0);
  for (int64_t now = RealtimeNanos(); now < spin_from; now = RealtimeNanos()) {
    if (stop.stop_requested()) return false;
    const int64_t until = std::min(spin_from, now + kStopCheckNs);
    const timespec ts{static_cast<time_t>(until / 1'000'000'000), until % 1'000'000'000};
    // EINTR or an early return: the loop sleeps again toward the same absolute time.
    clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr);
  }
  while (RealtimeNanos() < deadline_unix_ns) {
    if (stop.stop_requested()) return false;
  }
  return !stop.stop_requested();
}

void StampOnce(std::atomic<int64_t>& slot) {
  if (slot.load(std::memory_order_relaxed) != 0) return;
  int64_t unset = 0;
  slot.compare_exchange_strong(unset, RealtimeNanos(), std::memory_order_relaxed);
}

bool AwaitStart(StartGate* gate, const StopToken& stop, int64_t spin_ns) {
  if (gate == nullptr) return !stop.stop_requested();
  if (!WaitUntilUnixNs(gate->at_unix_ns, stop, spin_ns)) return false;
  StampOnce(gate->started_unix_ns);
  return true;
}

}  // namespace codl::injectors
