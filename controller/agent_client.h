// AgentClient: how the controller talks to one agent. An interface so the trial runner is
// tested with fake agents; GrpcAgentClient is the real one. Messages are the codl.v1 protos
// (plain data); only grpc_agent_client.cc touches gRPC itself. Every call has a deadline and
// mutating calls carry an idempotency key (retried once on UNAVAILABLE with the same key).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "codl/v1/agent.pb.h"
#include "lib/common/result.h"
#include "lib/rpc/rpc_util.h"

namespace codl::controller {

class AgentClient {
 public:
  virtual ~AgentClient() = default;
  virtual Result<v1::CalibrateReply> Calibrate(const v1::CalibrateRequest& req) = 0;
  virtual Result<v1::StartAntagonistReply> StartAntagonist(
      const v1::StartAntagonistRequest& req) = 0;
  virtual Result<v1::GetAntagonistReply> GetAntagonist(const std::string& antagonist_id) = 0;
  virtual Result<v1::StopAntagonistReply> StopAntagonist(const v1::StopAntagonistRequest& req) = 0;
  // deadline_s: the victim's timeout plus a margin.
  virtual Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest& req,
                                               double deadline_s) = 0;
  virtual Status StopAll(const std::string& reason) = 0;
  // The experiment ended: the agent releases what it held for it (its victims' uid). The
  // default (fakes) has nothing to release.
  virtual Status EndExperiment(const std::string& experiment_id) { return Status::Ok(); }
  // Node telemetry where antagonists run but not the victim: a window opened as the victim
  // starts on another node and closed when it is done (BeginNodeWindow / EndNodeWindow). The
  // defaults (fakes) count nothing: the trial then has no record for that node.
  virtual Status BeginNodeWindow(const std::string& trial_id, double lease_s) {
    return FailedPrecondition("this agent keeps no node telemetry windows");
  }
  virtual Result<v1::NodeTelemetry> EndNodeWindow(const std::string& trial_id) {
    return FailedPrecondition("this agent keeps no node telemetry windows");
  }

  // Scale (docs/performance.md, "Control plane: skew and scale"):
  // Connect: start connecting to the agent now (a no-op when connected, and for fakes), and
  // wait up to wait_s for the connection; true when connected. The runner connects every
  // placed agent before an experiment's first trial, so that the first synchronized start
  // does not pay a TCP + TLS handshake per agent inside its start window.
  virtual bool Connect(double wait_s) { return true; }
  // StartAntagonistAsync: issues the call and returns at once; `done` runs later, on another
  // thread. The runner fans a trial's starts out with it from one thread instead of one
  // std::async thread per antagonist. The default runs the blocking call on a thread of its own
  // (fakes in tests); GrpcAgentClient uses gRPC's callback API (same deadline, same retry).
  using StartDone = std::function<void(Result<v1::StartAntagonistReply>)>;
  virtual void StartAntagonistAsync(const v1::StartAntagonistRequest& req, StartDone done);

  // The agent's estimate of how long this antagonist's setup takes there (EstimateSetup; e.g.
  // an io_uring file set's preparation): the runner sets the common start after the slowest.
  // `done` runs once, possibly on another thread, with 0 when the agent cannot tell (an older
  // agent, a fake, a failed call). The default answers 0 at once.
  using EstimateDone = std::function<void(double setup_s)>;
  virtual void EstimateSetupAsync(const v1::InjectorSpec& spec, EstimateDone done) { done(0); }

  // The trial's other fan-outs, in the same form (issue, return, `done` later on another
  // thread): the stops of its antagonists and its node telemetry windows. GrpcAgentClient uses
  // gRPC's callback API (no thread, but a short-lived one for a retry's 200 ms); the defaults run
  // the blocking call on a thread of its own (fakes in tests, which may block on purpose).
  using StopDone = std::function<void(Result<v1::StopAntagonistReply>)>;
  virtual void StopAntagonistAsync(const v1::StopAntagonistRequest& req, StopDone done);
  using WindowBegun = std::function<void(Status)>;
  virtual void BeginNodeWindowAsync(const std::string& trial_id, double lease_s, WindowBegun done);
  using WindowEnded = std::function<void(Result<v1::NodeTelemetry>)>;
  virtual void EndNodeWindowAsync(const std::string& trial_id, WindowEnded done);

  // Live telemetry of one trial until the returned handle is destroyed (which cancels the
  // stream and joins its reader). nullptr when the agent cannot stream (fakes in tests).
  class TelemetryStream {
   public:
    virtual ~TelemetryStream() = default;
  };
  virtual std::unique_ptr<TelemetryStream> OpenTelemetry(
      const std::string& trial_id, std::function<void(const v1::TelemetryEvent&)> on_event) {
    return nullptr;
  }
};

inline void AgentClient::StartAntagonistAsync(const v1::StartAntagonistRequest& req,
                                              StartDone done) {
  std::thread([this, req, done = std::move(done)] { done(StartAntagonist(req)); }).detach();
}
inline void AgentClient::StopAntagonistAsync(const v1::StopAntagonistRequest& req, StopDone done) {
  std::thread([this, req, done = std::move(done)] { done(StopAntagonist(req)); }).detach();
}
inline void AgentClient::BeginNodeWindowAsync(const std::string& trial_id, double lease_s,
                                              WindowBegun done) {
  std::thread([this, trial_id, lease_s, done = std::move(done)] {
    done(BeginNodeWindow(trial_id, lease_s));
  }).detach();
}
inline void AgentClient::EndNodeWindowAsync(const std::string& trial_id, WindowEnded done) {
  std::thread([this, trial_id, done = std::move(done)] { done(EndNodeWindow(trial_id)); }).detach();
}

// Creates the client for an agent that registered with `address`.
using AgentClientFactory = std::function<std::shared_ptr<AgentClient>(const std::string& agent_id,
                                                                      const std::string& address)>;

// The real factory: gRPC channels with the controller's TLS settings.
AgentClientFactory GrpcAgentClientFactory(rpc::TlsFiles tls);

}  // namespace codl::controller
