#include "controller/controller_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "lib/daemon/metrics_endpoint.h"

namespace codl::controller {

struct ControllerMetrics::Families {
  prometheus::Family<prometheus::Counter>* trials;
  prometheus::Family<prometheus::Counter>* experiments_finished;
  prometheus::Family<prometheus::Gauge>* experiments;
  prometheus::Family<prometheus::Gauge>* agents;
  prometheus::Family<prometheus::Gauge>* achieved;
  prometheus::Family<prometheus::Gauge>* target;
  prometheus::Family<prometheus::Histogram>* step_time;
};

ControllerMetrics::ControllerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), f_(std::make_unique<Families>()) {
  using namespace prometheus;
  f_->trials = &BuildCounter()
                    .Name("codl_trials_total")
                    .Help("Trials finished, by final state (done, failed, flagged, cancelled).")
                    .Register(*registry_);
  f_->experiments_finished = &BuildCounter()
                                  .Name("codl_experiments_finished_total")
                                  .Help("Experiments finished, by final state.")
                                  .Register(*registry_);
  f_->experiments = &BuildGauge()
                         .Name("codl_experiments")
                         .Help("Experiments currently queued or running, by state.")
                         .Register(*registry_);
  f_->agents = &BuildGauge()
                    .Name("codl_agents")
                    .Help("Registered agents, by state (up = heartbeating).")
                    .Register(*registry_);
  f_->achieved = &BuildGauge()
                      .Name("codl_antagonist_achieved_rate")
                      .Help(
                          "Achieved rate of each antagonist during its latest trial, in the "
                          "injector's unit (label unit: bytes/s, FLOP/s, ...).")
                      .Register(*registry_);
  f_->target = &BuildGauge()
                    .Name("codl_antagonist_target_rate")
                    .Help("Target rate of each antagonist in its latest trial, injector unit.")
                    .Register(*registry_);
  f_->step_time = &BuildHistogram()
                       .Name("codl_victim_step_time_seconds")
                       .Help("Victim step times (measured steps, warm-up excluded).")
                       .Register(*registry_);
  for (const char* s : {"queued", "running"}) f_->experiments->Add({{"state", s}}).Set(0);
  for (const char* s : {"up", "down"}) f_->agents->Add({{"state", s}}).Set(0);
}

ControllerMetrics::~ControllerMetrics() = default;

Status ControllerMetrics::Serve(const std::string& listen) {
  auto exposer = daemon::ServeMetrics(listen, registry_);
  if (!exposer.ok()) return exposer.status();
  exposer_ = std::move(*exposer);
  return Status::Ok();
}

void ControllerMetrics::OnTrialDone(const TrialRecord& t) {
  f_->trials->Add({{"state", ToString(t.state)}}).Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  auto& h = f_->step_time->Add({{"baseline", t.baseline ? "true" : "false"}}, kBuckets);
  for (const auto& s : t.steps) {
    if (!s.warmup) h.Observe(s.step_time_s);
  }
  for (const auto& a : t.antagonists) {
    std::map<std::string, std::string> labels = {
        {"node", a.node}, {"injector", a.injector}, {"antagonist", a.name}, {"unit", a.unit}};
    f_->achieved->Add(labels).Set(a.achieved_rate);
    f_->target->Add(labels).Set(a.target_rate);
  }
}

void ControllerMetrics::OnExperimentFinished(ExperimentState state) {
  f_->experiments_finished->Add({{"state", ToString(state)}}).Increment();
}

void ControllerMetrics::SetExperiments(int queued, int running) {
  f_->experiments->Add({{"state", "queued"}}).Set(queued);
  f_->experiments->Add({{"state", "running"}}).Set(running);
}

void ControllerMetrics::SetAgents(int up, int down) {
  f_->agents->Add({{"state", "up"}}).Set(up);
  f_->agents->Add({{"state", "down"}}).Set(down);
}

}  // namespace codl::controller
