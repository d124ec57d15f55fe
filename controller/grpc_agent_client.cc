#include <spdlog/spdlog.h>

#include <thread>

#include "codl/v1/agent.grpc.pb.h"
#include "controller/agent_client.h"

namespace codl::controller {
namespace {

class GrpcAgentClient : public AgentClient {
 public:
  GrpcAgentClient(std::string agent_id, std::shared_ptr<grpc::Channel> channel)
      : agent_id_(std::move(agent_id)), stub_(v1::Agent::NewStub(channel)) {}

  Result<v1::CalibrateReply> Calibrate(const v1::CalibrateRequest& req) override {
    return Call<v1::CalibrateReply>("Calibrate", req.duration_s() + 180, [&](auto* ctx, auto* reply) {
      return stub_->Calibrate(ctx, req, reply);
    });
  }
  Result<v1::StartAntagonistReply> StartAntagonist(const v1::StartAntagonistRequest& req) override {
    return Call<v1::StartAntagonistReply>("StartAntagonist", 15, [&](auto* ctx, auto* reply) {
      return stub_->StartAntagonist(ctx, req, reply);
    });
  }
  Result<v1::GetAntagonistReply> GetAntagonist(const std::string& id) override {
    v1::GetAntagonistRequest req;
    req.set_antagonist_id(id);
    return Call<v1::GetAntagonistReply>("GetAntagonist", 3, [&](auto* ctx, auto* reply) {
      return stub_->GetAntagonist(ctx, req, reply);
    });
  }
  Result<v1::StopAntagonistReply> StopAntagonist(const v1::StopAntagonistRequest& req) override {
    return Call<v1::StopAntagonistReply>("StopAntagonist", 15, [&](auto* ctx, auto* reply) {
      return stub_->StopAntagonist(ctx, req, reply);
    });
  }
  Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest& req, double deadline_s) override {
    return Call<v1::RunVictimReply>("RunVictim", deadline_s, [&](auto* ctx, auto* reply) {
      return stub_->RunVictim(ctx, req, reply);
    });
  }
  Status StopAll(const std::string& reason) override {
    v1::StopAllRequest req;
    req.set_reason(reason);
    auto r = Call<v1::StopAllReply>("StopAll", 10, [&](auto* ctx, auto* reply) {
      return stub_->StopAll(ctx, req, reply);
    });
    return r.ok() ? Status::Ok() : Status(Err(r.error()));
  }

 private:
  // One retry on UNAVAILABLE: safe because mutating requests carry an idempotency key.
  template <class Reply, class F>
  Result<Reply> Call(const char* method, double deadline_s, F f) {
    grpc::Status s;
    for (int attempt = 0; attempt < 2; ++attempt) {
      Reply reply;
      auto ctx = rpc::MakeContext(deadline_s);
      s = f(ctx.get(), &reply);
      if (s.ok()) return reply;
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    Status st = rpc::FromGrpc(s, "agent " + agent_id_ + " " + method);
    return Err(st.error());
  }

  std::string agent_id_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

}  // namespace

AgentClientFactory GrpcAgentClientFactory(rpc::TlsFiles tls) {
  return [tls](const std::string& agent_id, const std::string& address) -> std::shared_ptr<AgentClient> {
    auto ch = rpc::MakeChannel(rpc::Endpoint{address, tls});
    if (!ch.ok()) {
      spdlog::error("agent {}: {}", agent_id, ch.error());
      return nullptr;
    }
    return std::make_shared<GrpcAgentClient>(agent_id, *ch);
  };
}

}  // namespace codl::controller
