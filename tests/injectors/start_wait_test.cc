// The synchronized start's wait (codl-inject --start-at): never early, on time when the CPU is
// free, and it gives up at once on a stop.
#include "injectors/codl-inject/start_wait.h"

#include <gtest/gtest.h>

#include <thread>

namespace codl::inject {
namespace {

TEST(StartWait, ReturnsAtTheDeadlineNeverBefore) {
  const int64_t deadline = RealtimeNanos() + 30'000'000;
  ASSERT_TRUE(WaitUntilUnixNs(deadline, injectors::StopToken()));
  const int64_t now = RealtimeNanos();
  EXPECT_GE(now, deadline);
  // Loose: a loaded shared box may run us late; the spin makes the usual case microseconds.
  EXPECT_LT(now - deadline, 50'000'000) << "ns late";
}

TEST(StartWait, APastDeadlineReturnsAtOnce) {
  const int64_t t0 = RealtimeNanos();
  EXPECT_TRUE(WaitUntilUnixNs(t0 - 1'000'000'000, injectors::StopToken()));
  EXPECT_LT(RealtimeNanos() - t0, 50'000'000);
}

TEST(StartWait, AStopEndsTheWait) {
  injectors::StopSource source;
  std::thread stopper([&] { source.RequestStop(); });
  const int64_t t0 = RealtimeNanos();
  EXPECT_FALSE(WaitUntilUnixNs(t0 + 60'000'000'000LL, source.token()));
  stopper.join();
  EXPECT_LT(RealtimeNanos() - t0, 5'000'000'000LL) << "the 60 s wait was not cut short";
}

}  // namespace
}  // namespace codl::inject
