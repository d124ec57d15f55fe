#include "injectors/paced_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

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
  if (rates.size() >= 2) {
    double mean = 0;
    for (double r : rates) mean += r;
    mean /= static_cast<double>(rates.size());
    double var = 0;
    for (double r : rates) var += (r - mean) * (r - mean);
    var /= static_cast<double>(rates.size() - 1);
    summary->cov = mean > 0 ? std::sqrt(var) / mean : 0;
  }
}

Result<RunSummary> RunPaced(const PacedRunSpec& spec, const Target& target, const StopToken& stop,
                            Reporter& reporter, const WorkerFn& worker) {
  SteadyClock clock;
  Pacer pacer(clock, spec.burst_s);
  Meter meter;
  StopSource run_stop(stop);  // ends the workers: caller's stop, end of run, or a worker error
  const double t0 = clock.Now();
  std::optional<RateController> controller;
  if (target.is_max()) {
    pacer.SetRate(std::numeric_limits<double>::infinity());
  } else {
    controller.emplace(target.rate, t0, spec.controller);
    pacer.SetRate(target.rate);
  }

  std::mutex error_mu;
  std::string first_error;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(spec.workers));
  for (int i = 0; i < spec.workers; ++i) {
    threads.emplace_back([&, i] {
      WorkerContext ctx{i, pacer, meter, run_stop.token()};
      Status status = worker(ctx);
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (first_error.empty()) first_error = status.error();
        run_stop.RequestStop();
      }
    });
  }

  // Control + telemetry loop on the calling thread.
  std::vector<IntervalPoint> points{{0, 0, 0}};
  const double target_rate = target.is_max() ? 0 : target.rate;
  double next_control =
      controller ? t0 + spec.control_period_s : std::numeric_limits<double>::infinity();
  double next_report = t0 + spec.report_period_s;
  const StopToken run_token = run_stop.token();
  auto emit = [&](double now) {
    const IntervalPoint p{now - t0, static_cast<double>(meter.units()),
                          static_cast<double>(meter.ops())};
    const IntervalPoint& prev = points.back();
    const double dt = p.t - prev.t;
    Sample s;
    s.t_s = p.t;
    s.interval_s = dt;
    s.achieved = dt > 0 ? (p.units - prev.units) / dt : 0;
    s.target = target_rate;
    s.saturated = controller && controller->saturated();
    if (!spec.ops_name.empty()) s.extra[spec.ops_name] = dt > 0 ? (p.ops - prev.ops) / dt : 0;
    points.push_back(p);
    reporter.Report(s);
  };
  while (true) {
    const double wake = std::min(next_control, next_report);
    if (!clock.SleepUntil(wake, run_token)) break;
    const double now = clock.Now();
    if (controller && now >= next_control) {
      pacer.SetRate(controller->Update(now, static_cast<double>(meter.units())));
      next_control += spec.control_period_s;
      if (next_control < now) next_control = now + spec.control_period_s;  // we were descheduled
    }
    if (now >= next_report) {
      emit(now);
      next_report += spec.report_period_s;
      if (next_report < now) next_report = now + spec.report_period_s;
    }
  }
  run_stop.RequestStop();
  for (auto& t : threads) t.join();

  // A last partial interval counts toward totals; it is reported only if long enough to mean
  // something (a 3 ms sliver would print a wild rate).
  const double now = clock.Now();
  if (now - t0 - points.back().t >= 0.5 * spec.report_period_s) emit(now);
  if (!first_error.empty()) return Err(first_error);

  RunSummary summary;
  Summarize(points, spec.report_period_s, spec.ops_name, &summary);
  if (points.size() < 2) summary.seconds = now - t0;
  // Saturated: the resource delivered clearly less than asked (controller at its limit).
  summary.saturated = controller && summary.achieved_rate < 0.97 * target_rate;
  return summary;
}

}  // namespace codl::injectors
