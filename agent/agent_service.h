// AgentServiceImpl: the gRPC callback service of the agent. Each handler checks the bearer
// token, renews the lease (any controller call is contact), answers retried calls from the
// idempotency cache, and posts blocking work to the executor.
#pragma once

#include <memory>
#include <string>

#include "agent/antagonist_manager.h"
#include "agent/lease_monitor.h"
#include "agent/telemetry_hub.h"
#include "agent/victim_runner.h"
#include "codl/v1/agent.grpc.pb.h"
#include "lib/common/executor.h"
#include "lib/rpc/idempotency_cache.h"

namespace codl::agent {

struct AgentPolicy {
  bool allow_victim = true;
  double max_level = 1.0;
  std::optional<RunAs> victim_run_as;  // nullopt: victims run as the agent
};

class AgentServiceImpl final : public v1::Agent::CallbackService {
 public:
  AgentServiceImpl(AntagonistManager* antagonists, LeaseMonitor* lease, const Clock* clock,
                   AgentPolicy policy, TelemetryHub* telemetry);
  ~AgentServiceImpl() override;
  void Shutdown();
  int64_t victims_ok() const { return victims_ok_.load(); }
  int64_t victims_failed() const { return victims_failed_.load(); }

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
  grpc::ServerWriteReactor<v1::TelemetryEvent>* StreamTelemetry(
      grpc::CallbackServerContext* ctx, const v1::StreamTelemetryRequest* req) override;

 private:
  // Common prologue: auth, lease renewal, idempotent replay. Returns a reactor already finished
  // when the call needs no further work, else nullptr.
  grpc::ServerUnaryReactor* Prologue(grpc::CallbackServerContext* ctx, const std::string& key,
                                     google::protobuf::Message* reply);

  AntagonistManager* antagonists_;
  LeaseMonitor* lease_;
  const Clock* clock_;
  AgentPolicy policy_;
  TelemetryHub* telemetry_;
  VictimRunner victims_;
  rpc::IdempotencyCache cache_;
  std::atomic<bool> cancel_victims_{false};
  std::atomic<int64_t> victims_ok_{0};
  std::atomic<int64_t> victims_failed_{0};
  Executor executor_{16};
};

}  // namespace codl::agent
