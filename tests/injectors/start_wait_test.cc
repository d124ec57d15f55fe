// The synchronized start's wait (codl-inject --start-at, Target::start): never early, on time
// when the CPU is free, and it gives up at once on a stop.
#include "injectors/core/start_wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "injectors/core/paced_run.h"
#include "tests/injectors/test_util.h"

namespace codl::injectors {
namespace {

TEST(StartWait, ReturnsAtTheDeadlineNeverBefore) {
  const int64_t deadline = RealtimeNanos() + 30'000'000;
  ASSERT_TRUE(WaitUntilUnixNs(deadline, StopToken()));
  const int64_t now = RealtimeNanos();
  EXPECT_GE(now, deadline);
  // Loose: a loaded shared box may run us late; the spin makes the usual case microseconds.
  EXPECT_LT(now - deadline, 50'000'000) << "ns late";
}

TEST(StartWait, APastDeadlineReturnsAtOnce) {
  const int64_t t0 = RealtimeNanos();
  EXPECT_TRUE(WaitUntilUnixNs(t0 - 1'000'000'000, StopToken()));
  EXPECT_LT(RealtimeNanos() - t0, 50'000'000);
}

TEST(StartWait, AStopEndsTheWait) {
  StopSource source;
  std::thread stopper([&] { source.RequestStop(); });
  const int64_t t0 = RealtimeNanos();
  EXPECT_FALSE(WaitUntilUnixNs(t0 + 60'000'000'000LL, source.token()));
  stopper.join();
  EXPECT_LT(RealtimeNanos() - t0, 5'000'000'000LL) << "the 60 s wait was not cut short";
}

// RunPaced and Target::start: the worker threads exist before the start and wait at the gate;
// the load begins at the instant, not before; intervals and the summary count from it.
size_t ThreadsOfThisProcess() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(StartGate, RunPacedHoldsItsWorkersAtTheGateAndCountsFromTheStart) {
  StartGate gate;
  gate.at_unix_ns = RealtimeNanos() + 400'000'000;
  Target target = Target::Max();
  target.start = &gate;
  std::atomic<int64_t> first_work{0};
  PacedRunSpec spec;
  spec.workers = 3;
  auto worker = [&](WorkerContext& ctx) -> Status {
    StampOnce(first_work);
    while (ctx.Acquire(1)) ctx.Done(1);
    return Status::Ok();
  };
  const size_t before = ThreadsOfThisProcess();
  StopSource stop;
  codl::testing::NullReporter reporter;
  Result<RunSummary> summary = Err("not run");
  std::thread run(
      [&] { summary = RunPaced(spec, target, stop.token().WithDeadline(0.7), reporter, worker); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const size_t waiting = ThreadsOfThisProcess();
  const int64_t work_while_waiting = first_work.load();
  const bool sampled_before_start = RealtimeNanos() < gate.at_unix_ns;
  run.join();
  const int64_t returned = RealtimeNanos();
  EXPECT_GE(waiting, before + 4) << "the run's thread and its 3 workers exist before the start";
  if (sampled_before_start) {  // (a box that stalled this thread past the start proves nothing)
    EXPECT_EQ(work_while_waiting, 0) << "work began before the start";
  }
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_GE(first_work.load(), gate.at_unix_ns);
  EXPECT_GE(gate.started_unix_ns.load(), gate.at_unix_ns);
  EXPECT_LE(gate.started_unix_ns.load(), first_work.load());
  // Counted from the start, not from the call 0.4 s before it (however late the run ended).
  EXPECT_LT(summary->seconds, static_cast<double>(returned - gate.at_unix_ns) * 1e-9 + 0.2);
  EXPECT_GT(summary->achieved_rate, 0);
}

TEST(StartGate, AStopBeforeTheStartMeansNoLoadAtAll) {
  StartGate gate;
  gate.at_unix_ns = RealtimeNanos() + 60'000'000'000LL;
  Target target = Target::Rate(1000);
  target.start = &gate;
  std::atomic<int> calls{0};
  PacedRunSpec spec;
  spec.workers = 2;
  StopSource stop;
  codl::testing::NullReporter reporter;
  const int64_t t0 = RealtimeNanos();
  auto summary = RunPaced(spec, target, stop.token().WithDeadline(0.1), reporter,
                          [&](WorkerContext&) -> Status {
                            ++calls;
                            return Status::Ok();
                          });
  EXPECT_LT(RealtimeNanos() - t0, 5'000'000'000LL) << "the 60 s gate was not cut short";
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(gate.started_unix_ns.load(), 0);
  EXPECT_EQ(summary->seconds, 0);
  EXPECT_EQ(summary->achieved_rate, 0);
}

// Regression (found by gpusim: an NCCL rank that followed its peer's stop vote kept its run
// going until its own stop): when every worker has returned, the run ends.
TEST(RunPacedEnd, TheRunEndsWhenEveryWorkerHasReturned) {
  PacedRunSpec spec;
  spec.workers = 2;
  std::atomic<int> done{0};
  auto worker = [&](WorkerContext& ctx) -> Status {
    for (int i = 0; i < 10 && !ctx.stop.stop_requested(); ++i) {
      ctx.Done(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(ctx.index == 0 ? 5 : 50));
    }
    ++done;
    return Status::Ok();
  };
  StopSource stop;  // never requested: only the workers end this run
  codl::testing::NullReporter reporter;
  const int64_t t0 = RealtimeNanos();
  auto summary = RunPaced(spec, Target::Max(), stop.token().WithDeadline(60), reporter, worker);
  EXPECT_LT(RealtimeNanos() - t0, 30'000'000'000LL) << "the run waited for the caller's stop";
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_EQ(done.load(), 2);
}

}  // namespace
}  // namespace codl::injectors
