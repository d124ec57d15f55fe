// AgentClient: how the controller talks to one agent. An interface so the trial runner is
// tested with fake agents; GrpcAgentClient is the real one. Messages are the codl.v1 protos
// (plain data); only grpc_agent_client.cc touches gRPC itself. Every call has a deadline and
// mutating calls carry an idempotency key (retried once on UNAVAILABLE with the same key).
#pragma once

#include <memory>
#include <string>

#include "codl/v1/agent.pb.h"
#include "common/result.h"
#include "rpc/rpc_util.h"

namespace codl::controller {

class AgentClient {
 public:
  virtual ~AgentClient() = default;
  virtual Result<v1::CalibrateReply> Calibrate(const v1::CalibrateRequest& req) = 0;
  virtual Result<v1::StartAntagonistReply> StartAntagonist(const v1::StartAntagonistRequest& req) = 0;
  virtual Result<v1::GetAntagonistReply> GetAntagonist(const std::string& antagonist_id) = 0;
  virtual Result<v1::StopAntagonistReply> StopAntagonist(const v1::StopAntagonistRequest& req) = 0;
  // deadline_s: the victim's timeout plus a margin.
  virtual Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest& req, double deadline_s) = 0;
  virtual Status StopAll(const std::string& reason) = 0;
};

// Creates the client for an agent that registered with `address`.
using AgentClientFactory =
    std::function<std::shared_ptr<AgentClient>(const std::string& agent_id, const std::string& address)>;

// The real factory: gRPC channels with the controller's TLS settings.
AgentClientFactory GrpcAgentClientFactory(rpc::TlsFiles tls);

}  // namespace codl::controller
