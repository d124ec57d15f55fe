#include "agent/agent_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "lib/common/version.h"
#include "lib/daemon/metrics_endpoint.h"

namespace codl::agent {

struct AgentMetrics::Families {
  prometheus::Gauge* running;
  prometheus::Gauge* silence;
  prometheus::Counter* started;
  prometheus::Counter* lease_expirations;
  prometheus::Family<prometheus::Counter>* victims;
  prometheus::Family<prometheus::Gauge>* connections;
  // One family per unit: codl_agent_antagonist_<base unit>, e.g. ..._bytes_per_second.
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> achieved_by_suffix;

  prometheus::Family<prometheus::Gauge>& Achieved(prometheus::Registry& registry,
                                                  const std::string& unit) {
    const std::string suffix = daemon::RateMetricSuffix(unit);
    auto& family = achieved_by_suffix[suffix];
    if (family == nullptr) {
      family = &prometheus::BuildGauge()
                    .Name("codl_agent_antagonist_" + suffix)
                    .Help(
                        "Latest achieved rate of the antagonists running on this agent, summed "
                        "per injector (" +
                        unit + ").")
                    .Register(registry);
    }
    return *family;
  }
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
  f_->victims->Add({{"result", "ok"}});
  f_->victims->Add({{"result", "failed"}});
  f_->connections = &daemon::RegisterConnectionsGauge(*registry_, "codl_agent_connections");
  daemon::RegisterBuildInfo(*registry_, "agent", CodlVersion());
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
  daemon::SetConnectionsGauge(*f_->connections, s.connections_by_role);
  // Counters only move forward: add what happened since the last update.
  f_->started->Increment(static_cast<double>(s.started - last_.started));
  f_->lease_expirations->Increment(
      static_cast<double>(s.lease_expirations - last_.lease_expirations));
  f_->victims->Add({{"result", "ok"}})
      .Increment(static_cast<double>(s.victims_ok - last_.victims_ok));
  f_->victims->Add({{"result", "failed"}})
      .Increment(static_cast<double>(s.victims_failed - last_.victims_failed));
  // A stopped injector's series goes away rather than lingering at 0 (or at its last value).
  for (auto it = achieved_unit_.begin(); it != achieved_unit_.end();) {
    auto now = s.achieved_by_injector.find(it->first);
    if (now != s.achieved_by_injector.end() && now->second.second == it->second) {
      ++it;
      continue;
    }
    auto& family = f_->Achieved(*registry_, it->second);
    family.Remove(&family.Add({{"injector", it->first}}));
    it = achieved_unit_.erase(it);
  }
  for (const auto& [injector, rate] : s.achieved_by_injector) {
    f_->Achieved(*registry_, rate.second).Add({{"injector", injector}}).Set(rate.first);
    achieved_unit_[injector] = rate.second;
  }
  last_ = s;
}

std::string AgentMetrics::Exposition() const { return daemon::ExpositionText(*registry_); }

}  // namespace codl::agent
