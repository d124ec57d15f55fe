#include "controller/controller_metrics.h"

#include <set>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "lib/common/version.h"
#include "lib/daemon/metrics_endpoint.h"

namespace codl::controller {

struct ControllerMetrics::Families {
  prometheus::Family<prometheus::Counter>* trials;
  prometheus::Family<prometheus::Counter>* experiments_finished;
  prometheus::Family<prometheus::Gauge>* experiments;
  prometheus::Family<prometheus::Gauge>* agents;
  prometheus::Family<prometheus::Gauge>* connections;
  prometheus::Family<prometheus::Gauge>* trials_planned;
  prometheus::Family<prometheus::Gauge>* trials_completed;
  prometheus::Family<prometheus::Histogram>* step_time;
  // codl_antagonist_{achieved,target}_<base unit>, one family per (kind, unit).
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> rate_families;
  // The series each experiment added, removed when it ends.
  std::map<std::string,
           std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>>>
      by_experiment;

  prometheus::Family<prometheus::Gauge>& Rate(prometheus::Registry& registry,
                                              const std::string& kind, const std::string& unit) {
    const std::string name = "codl_antagonist_" + kind + "_" + daemon::RateMetricSuffix(unit);
    auto& family = rate_families[name];
    if (family == nullptr) {
      family =
          &prometheus::BuildGauge()
               .Name(name)
               .Help(kind == "achieved"
                         ? "Achieved rate of each antagonist in its latest trial (" + unit + ")."
                         : "Target rate of each antagonist in its latest trial (" + unit + ").")
               .Register(registry);
    }
    return *family;
  }
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
  f_->trials_planned = &BuildGauge()
                            .Name("codl_experiment_trials_planned")
                            .Help("Trials planned for each running experiment.")
                            .Register(*registry_);
  f_->trials_completed = &BuildGauge()
                              .Name("codl_experiment_trials_completed")
                              .Help("Trials finished so far in each running experiment.")
                              .Register(*registry_);
  f_->step_time = &BuildHistogram()
                       .Name("codl_victim_step_time_seconds")
                       .Help("Victim step times (measured steps, warm-up excluded).")
                       .Register(*registry_);
  f_->connections = &daemon::RegisterConnectionsGauge(*registry_, "codl_controller_connections");
  for (const char* s : {"queued", "running"}) f_->experiments->Add({{"state", s}}).Set(0);
  for (const char* s : {"up", "down"}) f_->agents->Add({{"state", s}}).Set(0);
  daemon::RegisterBuildInfo(*registry_, "controller", CodlVersion());
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
  auto& series = f_->by_experiment[t.experiment_id];
  for (const auto& a : t.antagonists) {
    std::map<std::string, std::string> labels = {{"experiment", t.experiment_id},
                                                 {"node", a.node},
                                                 {"injector", a.injector},
                                                 {"antagonist", a.name}};
    for (auto [kind, value] :
         {std::pair{"achieved", a.achieved_rate}, std::pair{"target", a.target_rate}}) {
      auto& family = f_->Rate(*registry_, kind, a.unit);
      auto& gauge = family.Add(labels);
      gauge.Set(value);
      series.emplace_back(&family, &gauge);
    }
  }
}

void ControllerMetrics::OnTrialProgress(const std::string& experiment_id, int completed,
                                        int planned) {
  auto& series = f_->by_experiment[experiment_id];
  for (auto [family, value] :
       {std::pair{f_->trials_planned, planned}, std::pair{f_->trials_completed, completed}}) {
    auto& gauge = family->Add({{"experiment", experiment_id}});
    gauge.Set(value);
    series.emplace_back(family, &gauge);
  }
}

void ControllerMetrics::OnExperimentFinished(const std::string& experiment_id,
                                             ExperimentState state) {
  f_->experiments_finished->Add({{"state", ToString(state)}}).Increment();
  auto it = f_->by_experiment.find(experiment_id);
  if (it == f_->by_experiment.end()) return;
  // Add() returned the same gauge for repeated labels, so a series may be listed twice.
  std::set<prometheus::Gauge*> removed;
  for (auto [family, gauge] : it->second) {
    if (removed.insert(gauge).second) family->Remove(gauge);
  }
  f_->by_experiment.erase(it);
}

void ControllerMetrics::SetExperiments(int queued, int running) {
  f_->experiments->Add({{"state", "queued"}}).Set(queued);
  f_->experiments->Add({{"state", "running"}}).Set(running);
}

void ControllerMetrics::SetAgents(int up, int down) {
  f_->agents->Add({{"state", "up"}}).Set(up);
  f_->agents->Add({{"state", "down"}}).Set(down);
}

void ControllerMetrics::SetConnections(const std::map<std::string, int>& by_role) {
  daemon::SetConnectionsGauge(*f_->connections, by_role);
}

std::string ControllerMetrics::Exposition() const { return daemon::ExpositionText(*registry_); }

}  // namespace codl::controller
