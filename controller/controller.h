// Controller: wires the store, agent registry, experiment runner/scheduler and the gRPC
// service. Used by codl-controller and embedded by `codlctl run`.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "lib/common/result.h"
#include "lib/common/tunables.h"
#include "lib/rpc/rpc_util.h"

namespace grpc {
class Server;
}

namespace codl::store {
class Store;
}

namespace codl::controller {

class AgentRegistry;
class ExperimentRunner;
class ExperimentScheduler;
class ControllerServiceImpl;
class ControllerMetrics;

struct ControllerOptions {
  std::string listen = tunables::kDefaultControllerAddress;
  std::string db_path = "codl-controller.db";
  double heartbeat_interval_s = tunables::kDefaultHeartbeatIntervalS;
  // No heartbeat for this long: the agent is down.
  double agent_dead_after_s = tunables::kDefaultAgentDeadAfterS;
  double lease_s = tunables::kDefaultLeaseS;
  rpc::TlsFiles tls;
  bool insecure = false;                          // plaintext TCP listen allowed (--insecure)
  std::shared_ptr<const rpc::TokenTable> tokens;  // callers' token hashes; null: none
  std::string metrics_listen;  // Prometheus /metrics, e.g. "127.0.0.1:9464"; empty = off
  // At start, experiments a dead controller left queued are queued again, in their order (the
  // durable queue); false (embedded `codlctl run`, whose queue is its own one experiment):
  // they are marked interrupted instead, resumable with `codlctl resume`.
  bool requeue_queued = true;
  // At start, resume what the previous controller's crash interrupted (`resume_interrupted`).
  bool resume_interrupted = false;
  // For this long after start, an experiment whose nodes match no live agent waits for agents
  // to (re-)register instead of failing (`agent_rejoin_grace`; 0: fail at once).
  double agent_rejoin_grace_s = tunables::kDefaultAgentRejoinGraceS;
};

class Controller {
 public:
  explicit Controller(ControllerOptions options);
  ~Controller();

  Status Start();
  void Shutdown();
  // The address clients should dial (the actual port when listen used port 0).
  const std::string& address() const { return address_; }
  AgentRegistry* agents() { return agents_.get(); }

 private:
  ControllerOptions options_;
  std::string address_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<AgentRegistry> agents_;
  std::unique_ptr<ExperimentRunner> runner_;
  std::unique_ptr<ExperimentScheduler> scheduler_;
  std::unique_ptr<ControllerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::Listener> listener_;
  std::unique_ptr<ControllerMetrics> metrics_;
  std::thread metrics_refresher_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
};

}  // namespace codl::controller
