// AgentServiceImpl: the gRPC callback service of the agent. Each handler checks the bearer
// token, renews the lease (any controller call is contact), answers retried calls from the
// idempotency cache, and posts blocking work to the executor.
#pragma once

#include <memory>
#include <string>

#include "agent/antagonist_manager.h"
#include "agent/lease_monitor.h"
#include "agent/node_windows.h"
#include "agent/telemetry_hub.h"
#include "agent/victim_identities.h"
#include "agent/victim_manager.h"
#include "agent/victim_runner.h"
#include "agent/victim_threads.h"
#include "codl/v1/agent.grpc.pb.h"
#include "lib/common/executor.h"
#include "lib/common/tunables.h"
#include "lib/rpc/idempotency_cache.h"

namespace codl::agent {

class Placer;

struct AgentPolicy {
  bool allow_victim = true;
  double max_level = 1.0;
  const Placer* placer = nullptr;  // victim.cpus / victim.numa (null: refused)
  VictimIdentity victim;           // who victims run as, in what environment
  // Set: each experiment's victims run as their own uid from it, not victim.run_as.
  std::shared_ptr<VictimIdentities> uid_pool;
};

// Range checks and the max_level policy for a StartAntagonist request, on the load that would
// really run: an unpaced (max) load is level 1; an absolute rate is compared with the agent's
// calibrated peak for that injector (and refused under a max_level below 1 when there is none).
Status CheckStartRequest(const v1::StartAntagonistRequest& req, const AgentPolicy& policy,
                         std::optional<double> calibrated_peak);
// A workload antagonist's start (spec.workload set): allowed where victims are (allow_victim),
// with a command that reports steps, and the numbers in range.
Status CheckWorkloadRequest(const v1::StartAntagonistRequest& req, const AgentPolicy& policy);
using tunables::kMinLeaseS;

class AgentServiceImpl final : public v1::Agent::CallbackService {
 public:
  // No lease: only the controller's heartbeat replies renew it (ControllerLink), not calls here.
  AgentServiceImpl(AntagonistManager* antagonists, const Clock* clock, AgentPolicy policy,
                   TelemetryHub* telemetry);
  ~AgentServiceImpl() override;
  void Shutdown();
  int64_t victims_ok() const { return victims_.ok_count(); }
  int64_t victims_failed() const { return victims_.failed_count(); }

  grpc::ServerUnaryReactor* Calibrate(grpc::CallbackServerContext* ctx,
                                      const v1::CalibrateRequest* req,
                                      v1::CalibrateReply* reply) override;
  grpc::ServerUnaryReactor* StartAntagonist(grpc::CallbackServerContext* ctx,
                                            const v1::StartAntagonistRequest* req,
                                            v1::StartAntagonistReply* reply) override;
  grpc::ServerUnaryReactor* GetAntagonist(grpc::CallbackServerContext* ctx,
                                          const v1::GetAntagonistRequest* req,
                                          v1::GetAntagonistReply* reply) override;
  grpc::ServerUnaryReactor* StopAntagonist(grpc::CallbackServerContext* ctx,
                                           const v1::StopAntagonistRequest* req,
                                           v1::StopAntagonistReply* reply) override;
  grpc::ServerUnaryReactor* RunVictim(grpc::CallbackServerContext* ctx,
                                      const v1::RunVictimRequest* req,
                                      v1::RunVictimReply* reply) override;
  grpc::ServerUnaryReactor* StopAll(grpc::CallbackServerContext* ctx, const v1::StopAllRequest* req,
                                    v1::StopAllReply* reply) override;
  grpc::ServerUnaryReactor* EndExperiment(grpc::CallbackServerContext* ctx,
                                          const v1::EndExperimentRequest* req,
                                          v1::EndExperimentReply* reply) override;
  grpc::ServerUnaryReactor* EstimateSetup(grpc::CallbackServerContext* ctx,
                                          const v1::EstimateSetupRequest* req,
                                          v1::EstimateSetupReply* reply) override;
  grpc::ServerUnaryReactor* BeginNodeWindow(grpc::CallbackServerContext* ctx,
                                            const v1::BeginNodeWindowRequest* req,
                                            v1::BeginNodeWindowReply* reply) override;
  grpc::ServerUnaryReactor* EndNodeWindow(grpc::CallbackServerContext* ctx,
                                          const v1::EndNodeWindowRequest* req,
                                          v1::EndNodeWindowReply* reply) override;
  grpc::ServerWriteReactor<v1::TelemetryEvent>* StreamTelemetry(
      grpc::CallbackServerContext* ctx, const v1::StreamTelemetryRequest* req) override;

 private:
  Result<InjectChild::Spec::Workload> WorkloadFor(const v1::StartAntagonistRequest& req);
  // Common prologue: auth and idempotent replay (only controller heartbeats renew the lease).
  // Returns a reactor already finished when the call needs no further work, else nullptr.
  grpc::ServerUnaryReactor* Prologue(grpc::CallbackServerContext* ctx, const std::string& key,
                                     google::protobuf::Message* reply);
  // RunVictim's work, on a victim thread: the request translated for the VictimManager, the
  // victim run to its end, the reply filled.
  grpc::Status RunVictimBody(const v1::RunVictimRequest& req, v1::RunVictimReply* reply);

  AntagonistManager* antagonists_;
  const Clock* clock_;
  AgentPolicy policy_;
  TelemetryHub* telemetry_;
  VictimManager victims_;     // their lifecycle; StopAll cancels the running ones
  NodeWindows node_windows_;  // telemetry where only antagonists run
  rpc::IdempotencyCache cache_;
  Executor executor_{16};
  VictimThreads victim_threads_{8};  // declared last: joined first, before what victims use
};

}  // namespace codl::agent
