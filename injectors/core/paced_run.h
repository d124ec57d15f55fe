// RunPaced: the shared engine behind most injectors' Run(). The injector supplies only its hot
// loop (one worker function, run on N threads); RunPaced supplies the pacing (Pacer), the
// closed-loop control (RateController, every 50 ms), telemetry (a Sample every 200 ms) and the
// summary statistics, and stops everything within a few ms of the stop token.
//
// A worker loop looks like (see noop.cc, memcpy.cc):
//   while (ctx.Acquire(chunk)) { do_one_chunk(); ctx.Done(chunk); }
//   return Status::Ok();
// Workers that wait on something else (io_uring completions) use ctx.pacer.TryAcquire().
//
// A synchronized start (Target::start): the workers are created first and wait at the gate;
// intervals, the rate controller and the summary count from the start instant.
//
// Summary statistics skip a settle period of min(1 s, 25% of the phase), rounded up to a
// report boundary, so calibration peaks and level accuracy are not diluted by the ramp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "injectors/core/injector.h"
#include "injectors/core/rate_controller.h"

namespace codl::injectors {

// Completed work, counted by workers, read by the control loop. Lock-free.
class Meter {
 public:
  void Add(uint64_t units, uint64_t ops = 0) {
    units_.fetch_add(units, std::memory_order_relaxed);
    if (ops) ops_.fetch_add(ops, std::memory_order_relaxed);
  }
  uint64_t units() const { return units_.load(std::memory_order_relaxed); }
  uint64_t ops() const { return ops_.load(std::memory_order_relaxed); }

 private:
  alignas(64) std::atomic<uint64_t> units_{0};
  alignas(64) std::atomic<uint64_t> ops_{0};
};

struct WorkerContext {
  int index = 0;  // 0..workers-1
  Pacer& pacer;
  Meter& meter;
  StopToken stop;  // fires on the caller's stop, at the end of the run, or on a worker error

  bool Acquire(uint64_t units) { return pacer.Acquire(static_cast<double>(units), stop); }
  void Done(uint64_t units, uint64_t ops = 0) { meter.Add(units, ops); }
};

// A worker returns when ctx.stop fires, on an error, or when it has nothing left to do (an NCCL
// rank that followed its peers' stop vote). The run ends on the caller's stop, on the first
// error, or once every worker has returned.
using WorkerFn = std::function<Status(WorkerContext&)>;

struct PacedRunSpec {
  int workers = 1;
  std::string ops_name;          // non-empty: report Meter ops as this extra rate ("iops")
  double report_period_s = 0.2;  // ≥ 4 reports per second
  double control_period_s = 0.05;
  double burst_s = 0.01;  // pacer credit
  RateControllerConfig controller;
};

Result<RunSummary> RunPaced(const PacedRunSpec& spec, const Target& target, const StopToken& stop,
                            Reporter& reporter, const WorkerFn& worker);

// Summary statistics from per-interval samples (exposed for tests and for injectors that do
// not use RunPaced). `points` are (time, cumulative units) at interval ends, starting at (0, 0).
struct IntervalPoint {
  double t = 0;
  double units = 0;
  double ops = 0;
};
void Summarize(const std::vector<IntervalPoint>& points, double report_period_s,
               const std::string& ops_name, RunSummary* summary);

}  // namespace codl::injectors
