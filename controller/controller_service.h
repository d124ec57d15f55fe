// ControllerServiceImpl: the controller's gRPC callback service — a thin shell that converts
// between protos and the registry/scheduler/store, and posts blocking work to its executor.
#pragma once

#include "codl/v1/controller.grpc.pb.h"
#include "controller/agent_registry.h"
#include "controller/experiment_runner.h"
#include "controller/experiment_scheduler.h"
#include "controller/ownership.h"
#include "controller/rendezvous.h"
#include "lib/common/executor.h"
#include "lib/common/tunables.h"
#include "lib/rpc/idempotency_cache.h"
#include "lib/store/store.h"

namespace codl::controller {

struct ServiceConfig {
  double heartbeat_interval_s = tunables::kDefaultHeartbeatIntervalS;
  double lease_s = tunables::kDefaultLeaseS;
};

class ControllerServiceImpl final : public v1::Controller::CallbackService {
 public:
  ControllerServiceImpl(AgentRegistry* agents, ExperimentScheduler* scheduler,
                        ExperimentRunner* runner, store::Store* store, const Clock* clock,
                        ServiceConfig config);
  ~ControllerServiceImpl() override;
  void Shutdown();

  grpc::ServerUnaryReactor* RegisterAgent(grpc::CallbackServerContext*,
                                          const v1::RegisterAgentRequest*,
                                          v1::RegisterAgentReply*) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext*, const v1::HeartbeatRequest*,
                                      v1::HeartbeatReply*) override;
  grpc::ServerUnaryReactor* PublishRendezvous(grpc::CallbackServerContext*,
                                              const v1::PublishRendezvousRequest*,
                                              v1::PublishRendezvousReply*) override;
  grpc::ServerUnaryReactor* FetchRendezvous(grpc::CallbackServerContext*,
                                            const v1::FetchRendezvousRequest*,
                                            v1::FetchRendezvousReply*) override;
  grpc::ServerUnaryReactor* SubmitExperiment(grpc::CallbackServerContext*,
                                             const v1::SubmitExperimentRequest*,
                                             v1::SubmitExperimentReply*) override;
  grpc::ServerUnaryReactor* GetExperiment(grpc::CallbackServerContext*,
                                          const v1::GetExperimentRequest*,
                                          v1::ExperimentStatus*) override;
  grpc::ServerWriteReactor<v1::ExperimentEvent>* WatchExperiment(
      grpc::CallbackServerContext*, const v1::WatchExperimentRequest*) override;
  grpc::ServerUnaryReactor* GetResults(grpc::CallbackServerContext*, const v1::GetResultsRequest*,
                                       v1::GetResultsReply*) override;
  grpc::ServerUnaryReactor* GetTrialTrace(grpc::CallbackServerContext*,
                                          const v1::GetTrialTraceRequest*,
                                          v1::GetTrialTraceReply*) override;
  grpc::ServerUnaryReactor* ListAgents(grpc::CallbackServerContext*, const v1::ListAgentsRequest*,
                                       v1::ListAgentsReply*) override;
  grpc::ServerUnaryReactor* CancelExperiment(grpc::CallbackServerContext*,
                                             const v1::CancelExperimentRequest*,
                                             v1::CancelExperimentReply*) override;
  grpc::ServerUnaryReactor* ResumeExperiment(grpc::CallbackServerContext*,
                                             const v1::ResumeExperimentRequest*,
                                             v1::ResumeExperimentReply*) override;
  grpc::ServerUnaryReactor* CalibrateNode(grpc::CallbackServerContext*,
                                          const v1::CalibrateNodeRequest*,
                                          v1::CalibrateNodeReply*) override;

 private:
  class WatchReactor;
  // A finished reactor when the caller lacks an identity (or, given `agent_id`, is an agent
  // acting for another id); nullptr to go on.
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* ctx,
                                   const std::string* agent_id = nullptr);
  enum class Blocking { kNo, kYes };  // kYes: the body runs on the executor
  // Every unary handler's path: Refuse, the caller, `body(caller)` -> grpc::Status under
  // rpc::Guarded. Defined in the .cc, the only user.
  template <typename Body>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* ctx, const char* what,
                                  Blocking blocking, Body body,
                                  const std::string* agent_id = nullptr);
  // The experiment `id` names for the caller ("latest": theirs, else the newest of all).
  Result<ExperimentRecord> Readable(const Caller& caller, const std::string& id);
  // The experiment `id` names for the caller ("latest": theirs), when they may `action` it.
  Result<ExperimentRecord> Changeable(const Caller& caller, const std::string& id,
                                      const std::string& action);
  Status CheckRendezvousCaller(grpc::CallbackServerContext* ctx, const std::string& key) const;

  AgentRegistry* agents_;
  ExperimentScheduler* scheduler_;
  ExperimentRunner* runner_;
  store::Store* store_;
  const Clock* clock_;
  ServiceConfig config_;
  Rendezvous rendezvous_;
  rpc::IdempotencyCache cache_;
  Executor executor_{8};
};

}  // namespace codl::controller
