#include "injectors/core/paced_run.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "injectors/core/start_wait.h"
#include "lib/common/statistics.h"

namespace codl::injectors {

void Summarize(const std::vector<IntervalPoint>& points, double report_period_s,
               const std::string& ops_name, RunSummary* summary) {
  if (points.size() < 2) return;
  const IntervalPoint& last = points.back();
  summary->seconds = last.t;
  // Settle: skip the ramp (controller convergence, caches warming, queue filling).
  const double settle = std::min(1.0, 0.25 * last.t);
  size_t first = 0;
  while (first + 1 < points.size() - 1 && points[first].t < settle - 1e-9) ++first;
  const IntervalPoint& start = points[first];
  const double window = last.t - start.t;
  if (window <= 0) return;
  summary->achieved_rate = (last.units - start.units) / window;
  if (!ops_name.empty()) summary->extra[ops_name] = (last.ops - start.ops) / window;

  // CoV over full-length intervals in the measured window (a short final one is skipped).
  std::vector<double> rates;
  for (size_t i = first + 1; i < points.size(); ++i) {
    const double dt = points[i].t - points[i - 1].t;
    if (dt < 0.9 * report_period_s) continue;
    rates.push_back((points[i].units - points[i - 1].units) / dt);
  }
  if (rates.size() >= 2) summary->cov = CoefficientOfVariationOrZero(rates);
}

namespace {

// One RunPaced call: workers on their own threads, the control + telemetry loop on the caller's.
class PacedRun {
 public:
  PacedRun(const PacedRunSpec& spec, const Target& target, const StopToken& stop,
           Reporter& reporter)
      : spec_(spec),
        reporter_(reporter),
        pacer_(clock_, spec.burst_s),
        run_stop_(stop),  // ends the workers: caller's stop, end of run, or a worker error
        gate_(target.start),
        t0_(StartTime(clock_, target.start)),
        target_rate_(target.is_max() ? 0 : target.rate) {
    if (target.is_max()) {
      pacer_.SetRate(std::numeric_limits<double>::infinity());
    } else {
      controller_.emplace(target.rate, t0_, spec.controller);
      pacer_.SetRate(target.rate);
    }
  }

  Result<RunSummary> Run(const WorkerFn& worker) {
    StartWorkers(worker);
    ControlLoop();
    run_stop_.RequestStop();
    for (auto& t : threads_) t.join();
    // A last partial interval counts toward totals; it is reported only if long enough to mean
    // something (a 3 ms sliver would print a wild rate).
    const double now = clock_.Now();
    if (now - t0_ - points_.back().t >= 0.5 * spec_.report_period_s) Emit(now);
    if (!first_error_.empty()) return Err(first_error_);

    RunSummary summary;
    Summarize(points_, spec_.report_period_s, spec_.ops_name, &summary);
    if (points_.size() < 2) summary.seconds = std::max(0.0, now - t0_);  // stopped at the gate
    // Saturated: the resource delivered clearly less than asked (controller at its limit).
    // (Not when it never began: stopped at the start gate.)
    summary.saturated =
        controller_ && summary.seconds > 0 && summary.achieved_rate < 0.97 * target_rate_;
    return summary;
  }

 private:
  void StartWorkers(const WorkerFn& worker) {
    threads_.reserve(static_cast<size_t>(spec_.workers));
    running_.store(spec_.workers);
    for (int i = 0; i < spec_.workers; ++i) {
      threads_.emplace_back([this, &worker, i] {
        WorkerContext ctx{i, pacer_, meter_, run_stop_.token()};
        // Held at the start gate: the thread exists before the start, only its wake-up is
        // left at the instant. Worker 0 spins through the last stretch (it is normally the one
        // that stamps the start); the others sleep to it, so N spinners do not fight for CPUs
        // that other nodes' starts want at the same instant.
        if (!AwaitStart(gate_, ctx.stop, i == 0 ? kStartSpinNs : 0)) return;
        Status status = worker(ctx);
        if (!status.ok()) {
          std::lock_guard<std::mutex> lock(error_mu_);
          if (first_error_.empty()) first_error_ = status.error();
          run_stop_.RequestStop();
        }
        // Every worker is done (an NCCL rank that followed its peers' stop vote): so is the
        // run, without waiting for this caller's own stop.
        if (running_.fetch_sub(1) == 1) run_stop_.RequestStop();
      });
    }
  }

  // Wakes for the next control update or report, whichever comes first, until stopped.
  void ControlLoop() {
    double next_control =
        controller_ ? t0_ + spec_.control_period_s : std::numeric_limits<double>::infinity();
    double next_report = t0_ + spec_.report_period_s;
    const StopToken run_token = run_stop_.token();
    while (clock_.SleepUntil(std::min(next_control, next_report), run_token)) {
      const double now = clock_.Now();
      if (controller_ && now >= next_control) {
        pacer_.SetRate(controller_->Update(now, static_cast<double>(meter_.units())));
        next_control += spec_.control_period_s;
        if (next_control < now) next_control = now + spec_.control_period_s;  // we were descheduled
      }
      if (now >= next_report) {
        Emit(now);
        next_report += spec_.report_period_s;
        if (next_report < now) next_report = now + spec_.report_period_s;
      }
    }
  }

  // One telemetry interval: from the previous point to now.
  void Emit(double now) {
    const IntervalPoint p{now - t0_, static_cast<double>(meter_.units()),
                          static_cast<double>(meter_.ops())};
    const IntervalPoint& prev = points_.back();
    const double dt = p.t - prev.t;
    Sample s;
    s.t_s = p.t;
    s.interval_s = dt;
    s.achieved = dt > 0 ? (p.units - prev.units) / dt : 0;
    s.target = target_rate_;
    s.saturated = controller_ && controller_->saturated();
    if (!spec_.ops_name.empty()) s.extra[spec_.ops_name] = dt > 0 ? (p.ops - prev.ops) / dt : 0;
    points_.push_back(p);
    reporter_.Report(s);
  }

  // The steady-clock time of the start: the gate's instant when it is ahead, else now.
  static double StartTime(const SteadyClock& clock, const StartGate* gate) {
    const double now = clock.Now();
    if (gate == nullptr) return now;
    return now + std::max(0.0, static_cast<double>(gate->at_unix_ns - RealtimeNanos()) * 1e-9);
  }

  const PacedRunSpec& spec_;
  Reporter& reporter_;
  SteadyClock clock_;
  Pacer pacer_;
  Meter meter_;
  StopSource run_stop_;
  StartGate* const gate_;
  const double t0_;  // the load's start: intervals, the controller and the summary count from it
  const double target_rate_;
  std::optional<RateController> controller_;
  std::vector<std::thread> threads_;
  std::mutex error_mu_;
  std::string first_error_;
  std::atomic<int> running_{0};  // workers that have not returned
  std::vector<IntervalPoint> points_{{0, 0, 0}};
};

}  // namespace

Result<RunSummary> RunPaced(const PacedRunSpec& spec, const Target& target, const StopToken& stop,
                            Reporter& reporter, const WorkerFn& worker) {
  return PacedRun(spec, target, stop, reporter).Run(worker);
}

}  // namespace codl::injectors
