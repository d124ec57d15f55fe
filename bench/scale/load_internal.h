// codl-load-agents' private types, shared by its two halves: load_agents.cc (Load: the N agents'
// controller side, registration and heartbeats, and the server on their ports) and
// load_agent_service.cc (the Agent service those ports serve). A named namespace rather than
// an anonymous one, because both files must see the same Load and LoadAgent. Not an interface:
// main.cc sees only load_agents.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "bench/scale/load_agents.h"
#include "bench/scale/load_stats.h"
#include "bench/scale/timer_queue.h"
#include "codl/v1/agent.grpc.pb.h"
#include "codl/v1/controller.grpc.pb.h"
#include "lib/common/result.h"
#include "lib/rpc/queued_writer.h"

namespace codl::bench::load_internal {

namespace v1 = codl::v1;
using Json = nlohmann::json;
using Options = LoadOptions;

struct Antagonist {
  double target = 0;
  int64_t started_ns = 0;
};

// A sample every 250 ms, as a real injector reports (4 Hz).
inline constexpr int64_t kSamplePeriodNs = 250'000'000;

class TelemetryStream;

struct LoadAgent {
  int index = 0;
  std::string id;
  int port = 0;
  std::string address;
  std::unique_ptr<v1::Controller::Stub> stub;

  std::mutex mu;
  bool registered = false;
  double last_rtt_s = 0, last_offset_s = 0;
  // The in-flight controller call (one at a time, as the real agent's loop).
  std::unique_ptr<grpc::ClientContext> ctx;
  v1::RegisterAgentRequest reg_req;
  v1::RegisterAgentReply reg_reply;
  v1::HeartbeatRequest hb_req;
  v1::HeartbeatReply hb_reply;
  int64_t hb_t0 = 0;
  std::map<std::string, Antagonist> antagonists;
  std::map<std::string, std::string> replies;  // idempotency key -> serialized reply
  // Open StreamTelemetry calls: handle -> (trial id, stream).
  std::map<int, std::pair<std::string, TelemetryStream*>> streams;
  int next_stream = 1;
};

// One StreamTelemetry call of one emulated agent (the real agent's TelemetryReactor): it is in
// the agent's `streams` from construction until gRPC is done with it. Pushed to under the
// agent's lock, which OnUnsubscribe takes too, so a push never reaches a deleted stream.
class TelemetryStream final : public codl::rpc::QueuedWriteReactor<v1::TelemetryEvent> {
 public:
  TelemetryStream(LoadAgent* a, const std::string& trial_id) : a_(a) {
    std::lock_guard<std::mutex> l(a->mu);
    handle_ = a->next_stream++;
    a->streams[handle_] = {trial_id, this};
  }

 protected:
  void OnUnsubscribe() override {
    std::lock_guard<std::mutex> l(a_->mu);
    a_->streams.erase(handle_);
  }

 private:
  LoadAgent* a_;
  int handle_ = 0;
};

class Load;

// The Agent service for all N agents; the agent is found from the port the call came in on.
// Defined in load_agent_service.cc.
class AgentService final : public v1::Agent::CallbackService {
 public:
  explicit AgentService(Load* load) : load_(load) {}
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
  grpc::ServerUnaryReactor* EstimateSetup(grpc::CallbackServerContext* ctx,
                                          const v1::EstimateSetupRequest* req,
                                          v1::EstimateSetupReply* reply) override;

 private:
  Load* load_;
};

// The N emulated agents: their ports, their controller channels and the timers that drive
// registration, heartbeats and telemetry. Defined in load_agents.cc.
class Load {
 public:
  explicit Load(Options o) : o_(std::move(o)) {}

  codl::Status Start();
  void Shutdown();
  int Registered() const;

  // The agent a call to the Agent service is for (by the port it came in on); nullptr, counted
  // as misrouted, for an unknown port.
  LoadAgent* AgentFor(grpc::CallbackServerContext* ctx, const std::string& antagonist_id);

  // Replays the stored reply of a retried call (same idempotency key).
  template <class Reply>
  bool Replay(LoadAgent* a, const std::string& key, Reply* reply) {
    if (key.empty()) return false;
    std::lock_guard<std::mutex> l(a->mu);
    auto it = a->replies.find(key);
    if (it == a->replies.end()) return false;
    reply->ParseFromString(it->second);
    return true;
  }
  void Remember(LoadAgent* a, const std::string& key, const google::protobuf::Message& reply);

  // Publishes one sample of antagonist `id` (started at `started_ns`) to the agent's streams
  // subscribed to it, every kSamplePeriodNs from `at_ns` until it stops (or restarts).
  void SampleAt(LoadAgent* a, std::string id, int64_t started_ns, int64_t at_ns);

  TimerQueue& timers() { return timers_; }
  Stats& stats() { return stats_; }
  const Options& options() const { return o_; }

  Json Report();

 private:
  codl::Result<std::shared_ptr<grpc::Channel>> MakeControllerChannel();
  std::unique_ptr<grpc::ClientContext> Context(double deadline_s);
  void SendRegister(LoadAgent* a);
  void Tick(LoadAgent* a);
  void SendHeartbeat(LoadAgent* a);

  Options o_;
  std::shared_ptr<grpc::ChannelCredentials> creds_;
  std::vector<std::unique_ptr<LoadAgent>> agents_;
  std::map<int, LoadAgent*> by_port_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  TimerQueue timers_;
  Stats stats_;
  std::atomic<double> interval_s_{1.0};
  std::atomic<int> in_flight_{0};
};

}  // namespace codl::bench::load_internal
