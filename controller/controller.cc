#include "controller/controller.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "controller/agent_registry.h"
#include "controller/controller_metrics.h"
#include "controller/controller_service.h"
#include "controller/experiment_runner.h"
#include "controller/experiment_scheduler.h"
#include "injectors/core/registry.h"
#include "lib/rpc/connection_registry.h"
#include "lib/rpc/health.h"
#include "lib/store/store.h"

namespace codl::controller {

Controller::Controller(ControllerOptions options) : options_(std::move(options)) {}

Controller::~Controller() { Shutdown(); }

Status Controller::Start() {
  metrics_ = std::make_unique<ControllerMetrics>();
  if (!options_.metrics_listen.empty()) {
    if (Status s = metrics_->Serve(options_.metrics_listen); !s.ok()) return s;
    spdlog::info("controller metrics on http://{}/metrics", options_.metrics_listen);
  }
  auto store = store::Store::Open(options_.db_path);
  if (!store.ok()) return store.status();
  store_ = std::move(store.value());
  if (Status s = store_->KeepReserve(); !s.ok()) spdlog::warn("{}", s.error());
  auto unfinished = store_->MarkUnfinishedInterrupted(options_.requeue_queued);
  if (!unfinished.ok()) return unfinished.status();
  for (const auto& id : unfinished->interrupted) {
    spdlog::warn("experiment {} was running when the controller stopped: marked interrupted{}", id,
                 options_.resume_interrupted ? "; resuming it" : " (codlctl resume " + id + ")");
  }
  agents_ = std::make_unique<AgentRegistry>(
      SystemClock::Get(), GrpcAgentClientFactory(options_.tls), options_.agent_dead_after_s);
  runner_ = std::make_unique<ExperimentRunner>(agents_.get(), store_.get(), SystemClock::Get());
  experiment::ParseHooks hooks;
  hooks.injector = [](const std::string& name) {
    return injectors::ValidateInjectorName(name).message();
  };
  hooks.option = [](const std::string& injector, const std::string& key, const std::string& value) {
    return injectors::ValidateOption(injector, key, value).message();
  };
  scheduler_ = std::make_unique<ExperimentScheduler>(store_.get(), runner_.get(),
                                                     SystemClock::Get(), hooks, metrics_.get());
  service_ = std::make_unique<ControllerServiceImpl>(
      agents_.get(), scheduler_.get(), runner_.get(), store_.get(), SystemClock::Get(),
      ServiceConfig{options_.heartbeat_interval_s, options_.lease_s});

  auto started = rpc::StartServer(rpc::Endpoint{options_.listen, options_.tls, options_.insecure},
                                  {service_.get()}, "controller", options_.tokens);
  if (!started.ok()) return started.status();
  server_ = std::move(started->server);
  listener_ = std::move(started->listener);
  address_ = started->address;
  rpc::SetServing(server_.get(), "codl.v1.Controller", true);
  // The durable queue first, in its order; then what the crash interrupted, when asked to.
  for (const auto& id : unfinished->requeued) {
    if (auto q = scheduler_->Requeue(id); !q.ok()) {
      spdlog::error(
          "experiment {} was queued when the controller stopped and cannot be queued "
          "again: {}",
          id, q.error());
    } else {
      spdlog::info("experiment {} queued again (it was queued when the controller stopped)", id);
    }
  }
  if (options_.resume_interrupted) {
    for (const auto& id : unfinished->interrupted) {
      if (auto r = scheduler_->Resume(id); !r.ok()) {
        spdlog::error("experiment {}: cannot resume it: {}", id, r.error());
      }
    }
  }
  if (!unfinished->requeued.empty() ||
      (options_.resume_interrupted && !unfinished->interrupted.empty())) {
    // Their agents re-register at their next heartbeat (the reply tells them to): give them
    // that long before placing anything.
    const double hold_s = 3 * options_.heartbeat_interval_s + 1;
    spdlog::info("waiting {:.1f} s for agents to re-register before starting queued experiments",
                 hold_s);
    scheduler_->HoldFirstStart(hold_s);
  }
  scheduler_->SetAgentRejoinGrace(options_.agent_rejoin_grace_s);
  scheduler_->Start();
  started_ = true;
  metrics_refresher_ = std::thread([this] {
    while (!stopping_) {
      int up = 0, down = 0;
      for (const auto& a : agents_->List()) (a.alive() ? up : down) += 1;
      metrics_->SetAgents(up, down);
      auto [queued, running] = scheduler_->QueuedAndRunning();
      metrics_->SetExperiments(queued, running);
      metrics_->SetConnections(rpc::OpenConnectionsByRole());
      for (int i = 0; i < 10 && !stopping_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  spdlog::info("controller listening on {}, database {}", address_, options_.db_path);
  return Status::Ok();
}

void Controller::Shutdown() {
  if (!started_) return;
  started_ = false;
  stopping_ = true;
  rpc::MarkDraining(server_.get());  // health: NOT_SERVING while the scheduler winds down
  if (metrics_refresher_.joinable()) metrics_refresher_.join();
  // Order matters: the scheduler first (it stops the running trial's antagonists through the
  // agents), then the server.
  scheduler_->Shutdown();
  if (listener_) listener_->Stop();  // it hands connections to the server: first
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  service_->Shutdown();
  server_->Wait();
}

}  // namespace codl::controller
