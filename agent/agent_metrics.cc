#include "agent/agent_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "lib/daemon/metrics_endpoint.h"

namespace codl::agent {

struct AgentMetrics::Families {
  prometheus::Gauge* running;
  prometheus::Gauge* silence;
  prometheus::Counter* started;
  prometheus::Counter* lease_expirations;
  prometheus::Family<prometheus::Counter>* victims;
  prometheus::Family<prometheus::Gauge>* achieved;
};

AgentMetrics::AgentMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), f_(std::make_unique<Families>()) {
  using namespace prometheus;
  f_->running = &BuildGauge()
                     .Name("codl_agent_antagonists_running")
                     .Help("Antagonist processes (codl-inject) running on this agent.")
                     .Register(*registry_)
                     .Add({});
  f_->silence = &BuildGauge()
                     .Name("codl_agent_controller_silence_seconds")
                     .Help("Seconds since the last successful exchange with the controller.")
                     .Register(*registry_)
                     .Add({});
  f_->started = &BuildCounter()
                     .Name("codl_agent_antagonists_started_total")
                     .Help("Antagonists started on this agent.")
                     .Register(*registry_)
                     .Add({});
  f_->lease_expirations = &BuildCounter()
                               .Name("codl_agent_lease_expirations_total")
                               .Help(
                                   "Antagonists stopped by the dead-man switch (controller "
                                   "silent for longer than the lease).")
                               .Register(*registry_)
                               .Add({});
  f_->victims = &BuildCounter()
                     .Name("codl_agent_victim_runs_total")
                     .Help("Victim runs, by result (ok, failed).")
                     .Register(*registry_);
  f_->achieved = &BuildGauge()
                      .Name("codl_agent_antagonist_achieved_rate")
                      .Help(
                          "Latest achieved rate per injector on this agent, in the injector's "
                          "unit (label unit).")
                      .Register(*registry_);
  f_->victims->Add({{"result", "ok"}});
  f_->victims->Add({{"result", "failed"}});
}

AgentMetrics::~AgentMetrics() = default;

Status AgentMetrics::Serve(const std::string& listen) {
  auto exposer = daemon::ServeMetrics(listen, registry_);
  if (!exposer.ok()) return exposer.status();
  exposer_ = std::move(*exposer);
  return Status::Ok();
}

void AgentMetrics::Update(const Snapshot& s) {
  f_->running->Set(s.running);
  f_->silence->Set(s.controller_silence_s);
  // Counters only move forward: add what happened since the last update.
  f_->started->Increment(static_cast<double>(s.started - last_.started));
  f_->lease_expirations->Increment(
      static_cast<double>(s.lease_expirations - last_.lease_expirations));
  f_->victims->Add({{"result", "ok"}})
      .Increment(static_cast<double>(s.victims_ok - last_.victims_ok));
  f_->victims->Add({{"result", "failed"}})
      .Increment(static_cast<double>(s.victims_failed - last_.victims_failed));
  for (const auto& [injector, rate] : last_.achieved_by_injector) {
    if (!s.achieved_by_injector.count(injector)) {
      f_->achieved->Add({{"injector", injector}, {"unit", rate.second}}).Set(0);
    }
  }
  for (const auto& [injector, rate] : s.achieved_by_injector) {
    f_->achieved->Add({{"injector", injector}, {"unit", rate.second}}).Set(rate.first);
  }
  last_ = s;
}

}  // namespace codl::agent
