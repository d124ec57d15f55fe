#include <spdlog/spdlog.h>

#include <mutex>
#include <thread>

#include "codl/v1/agent.grpc.pb.h"
#include "controller/agent_client.h"
#include "lib/common/tunables.h"

namespace codl::controller {
namespace {

// A start replies once the antagonist's load has begun, after its setup (an io_uring file set
// is preallocated first): the deadline outlasts the start timeout the request gives the agent.
double StartDeadlineS(const v1::StartAntagonistRequest& req) {
  return tunables::StartDeadlineS(req.start_timeout_s());
}

// Reads a StreamTelemetry stream on its own thread; destroying it cancels and joins.
class GrpcTelemetryStream : public AgentClient::TelemetryStream {
 public:
  GrpcTelemetryStream(v1::Agent::Stub* stub, const std::string& trial_id,
                      std::function<void(const v1::TelemetryEvent&)> on_event)
      : ctx_(rpc::MakeContext(24 * 3600.0)) {
    v1::StreamTelemetryRequest req;
    req.set_trial_id(trial_id);
    reader_ = stub->StreamTelemetry(ctx_.get(), req);
    thread_ = std::thread([this, on_event = std::move(on_event)] {
      v1::TelemetryEvent ev;
      while (reader_->Read(&ev)) on_event(ev);
      (void)reader_->Finish();
    });
  }
  ~GrpcTelemetryStream() override {
    ctx_->TryCancel();
    thread_.join();
  }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReader<v1::TelemetryEvent>> reader_;
  std::thread thread_;
};

class GrpcAgentClient : public AgentClient {
 public:
  GrpcAgentClient(std::string agent_id, std::shared_ptr<grpc::Channel> channel)
      : agent_id_(std::move(agent_id)), channel_(channel), stub_(v1::Agent::NewStub(channel)) {}

  // gRPC channels connect lazily; this starts the connection now (no-op when already up). It
  // also makes a call that costs the agent nothing (GetAntagonist of no id: NOT_FOUND): the
  // agent closes a TCP connection that has made no authorized call within its
  // handshake_timeout (docs/security.md), and the first trial may start later than that.
  bool Connect(double wait_s) override {
    if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
    if (wait_s <= 0) {
      struct Ping {
        std::unique_ptr<grpc::ClientContext> ctx = rpc::MakeContext(10);
        v1::GetAntagonistRequest req;
        v1::GetAntagonistReply reply;
      };
      auto ping = std::make_shared<Ping>();
      stub_->async()->GetAntagonist(ping->ctx.get(), &ping->req, &ping->reply,
                                    [ping](grpc::Status) {});
      return false;
    }
    return channel_->WaitForConnected(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<int64_t>(wait_s * 1e6)));
  }

  // The callback API: no thread per call. Same deadline as StartAntagonist, and the same
  // single retry on UNAVAILABLE after 200 ms (never blocking a gRPC callback thread; safe
  // because the request carries its idempotency key).
  void StartAntagonistAsync(const v1::StartAntagonistRequest& req, StartDone done) override {
    CallAsync<v1::StartAntagonistRequest, v1::StartAntagonistReply>(
        "StartAntagonist", StartDeadlineS(req), req, &Async::StartAntagonist, std::move(done));
  }

  void StopAntagonistAsync(const v1::StopAntagonistRequest& req, StopDone done) override {
    CallAsync<v1::StopAntagonistRequest, v1::StopAntagonistReply>(
        "StopAntagonist", tunables::kStopAntagonistDeadlineS, req, &Async::StopAntagonist,
        std::move(done));
  }

  void BeginNodeWindowAsync(const std::string& trial_id, double lease_s,
                            WindowBegun done) override {
    v1::BeginNodeWindowRequest req;
    req.set_trial_id(trial_id);
    req.set_lease_s(lease_s);
    CallAsync<v1::BeginNodeWindowRequest, v1::BeginNodeWindowReply>(
        "BeginNodeWindow", tunables::kStopAllDeadlineS, req, &Async::BeginNodeWindow,
        [done = std::move(done)](Result<v1::BeginNodeWindowReply> r) {
          done(r.ok() ? Status::Ok() : r.status());
        });
  }

  void EndNodeWindowAsync(const std::string& trial_id, WindowEnded done) override {
    v1::EndNodeWindowRequest req;
    req.set_trial_id(trial_id);
    CallAsync<v1::EndNodeWindowRequest, v1::EndNodeWindowReply>(
        "EndNodeWindow", tunables::kStopAllDeadlineS, req, &Async::EndNodeWindow,
        [done = std::move(done)](Result<v1::EndNodeWindowReply> r) {
          if (!r.ok()) return done(r.status());
          done(r->telemetry());
        });
  }

  // A failed estimate (an agent without EstimateSetup, a timeout) is 0: the start then falls
  // back to the runner's plain start delay, as before estimates existed.
  void EstimateSetupAsync(const v1::InjectorSpec& spec, EstimateDone done) override {
    struct Pending {
      std::unique_ptr<grpc::ClientContext> ctx;
      v1::EstimateSetupRequest req;
      v1::EstimateSetupReply reply;
      EstimateDone done;
    };
    auto p = std::make_shared<Pending>();
    p->ctx = rpc::MakeContext(tunables::kEstimateSetupDeadlineS);
    *p->req.mutable_spec() = spec;
    p->done = std::move(done);
    stub_->async()->EstimateSetup(p->ctx.get(), &p->req, &p->reply, [this, p](grpc::Status s) {
      if (!s.ok() && s.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
        spdlog::warn("agent {} EstimateSetup: {}", agent_id_, s.error_message());
      }
      p->done(s.ok() ? p->reply.setup_estimate_s() : 0);
    });
  }

  Result<v1::CalibrateReply> Calibrate(const v1::CalibrateRequest& req) override {
    return Call<v1::CalibrateReply>(
        "Calibrate", req.duration_s() + tunables::kCalibrateDeadlineMarginS,
        [&](auto* ctx, auto* reply) { return stub_->Calibrate(ctx, req, reply); });
  }
  Result<v1::StartAntagonistReply> StartAntagonist(const v1::StartAntagonistRequest& req) override {
    return Call<v1::StartAntagonistReply>(
        "StartAntagonist", StartDeadlineS(req),
        [&](auto* ctx, auto* reply) { return stub_->StartAntagonist(ctx, req, reply); });
  }
  Result<v1::GetAntagonistReply> GetAntagonist(const std::string& id) override {
    v1::GetAntagonistRequest req;
    req.set_antagonist_id(id);
    return Call<v1::GetAntagonistReply>(
        "GetAntagonist", tunables::kGetAntagonistDeadlineS,
        [&](auto* ctx, auto* reply) { return stub_->GetAntagonist(ctx, req, reply); });
  }
  Result<v1::StopAntagonistReply> StopAntagonist(const v1::StopAntagonistRequest& req) override {
    return Call<v1::StopAntagonistReply>(
        "StopAntagonist", tunables::kStopAntagonistDeadlineS,
        [&](auto* ctx, auto* reply) { return stub_->StopAntagonist(ctx, req, reply); });
  }
  Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest& req,
                                       double deadline_s) override {
    return Call<v1::RunVictimReply>("RunVictim", deadline_s, [&](auto* ctx, auto* reply) {
      return stub_->RunVictim(ctx, req, reply);
    });
  }
  std::unique_ptr<TelemetryStream> OpenTelemetry(
      const std::string& trial_id,
      std::function<void(const v1::TelemetryEvent&)> on_event) override {
    return std::make_unique<GrpcTelemetryStream>(stub_.get(), trial_id, std::move(on_event));
  }

  Status StopAll(const std::string& reason) override {
    v1::StopAllRequest req;
    req.set_reason(reason);
    auto r = Call<v1::StopAllReply>(
        "StopAll", tunables::kStopAllDeadlineS,
        [&](auto* ctx, auto* reply) { return stub_->StopAll(ctx, req, reply); });
    return r.ok() ? Status::Ok() : r.status();
  }

  Status BeginNodeWindow(const std::string& trial_id, double lease_s) override {
    v1::BeginNodeWindowRequest req;
    req.set_trial_id(trial_id);
    req.set_lease_s(lease_s);
    auto r = Call<v1::BeginNodeWindowReply>(
        "BeginNodeWindow", tunables::kStopAllDeadlineS,
        [&](auto* ctx, auto* reply) { return stub_->BeginNodeWindow(ctx, req, reply); });
    return r.ok() ? Status::Ok() : r.status();
  }

  Result<v1::NodeTelemetry> EndNodeWindow(const std::string& trial_id) override {
    v1::EndNodeWindowRequest req;
    req.set_trial_id(trial_id);
    auto r = Call<v1::EndNodeWindowReply>(
        "EndNodeWindow", tunables::kStopAllDeadlineS,
        [&](auto* ctx, auto* reply) { return stub_->EndNodeWindow(ctx, req, reply); });
    if (!r.ok()) return r.status();
    return r->telemetry();
  }

  Status EndExperiment(const std::string& experiment_id) override {
    v1::EndExperimentRequest req;
    req.set_experiment_id(experiment_id);
    auto r = Call<v1::EndExperimentReply>(
        "EndExperiment", tunables::kStopAllDeadlineS,
        [&](auto* ctx, auto* reply) { return stub_->EndExperiment(ctx, req, reply); });
    return r.ok() ? Status::Ok() : r.status();
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
      if (rpc::FromGrpc(s).code() != StatusCode::kUnavailable) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return rpc::FromGrpc(s, "agent " + agent_id_ + " " + method);  // keeps the agent's code
  }

  // One call on gRPC's callback API with the blocking Call's policy: `deadline_s` per attempt,
  // one retry on UNAVAILABLE after 200 ms. No thread on the normal path; `done` runs once, on
  // a gRPC thread.
  using Async = v1::Agent::StubInterface::async_interface;
  template <class Req, class Reply>
  using AsyncMethod = void (Async::*)(grpc::ClientContext*, const Req*, Reply*,
                                      std::function<void(grpc::Status)>);
  template <class Req, class Reply>
  void CallAsync(const char* method, double deadline_s, const Req& req, AsyncMethod<Req, Reply> rpc,
                 std::function<void(Result<Reply>)> done) {
    struct Pending {
      std::unique_ptr<grpc::ClientContext> ctx;
      Req req;
      Reply reply;
      std::function<void(Result<Reply>)> done;
      bool retried = false;
      std::function<void()> issue;  // reset once done: it holds the Pending
    };
    auto p = std::make_shared<Pending>();
    p->req = req;
    p->done = std::move(done);
    std::weak_ptr<Pending> weak = p;
    p->issue = [this, weak, method, deadline_s, rpc] {
      const std::shared_ptr<Pending> q = weak.lock();
      if (!q) return;
      q->ctx = rpc::MakeContext(deadline_s);
      q->reply.Clear();
      (stub_->async()->*rpc)(q->ctx.get(), &q->req, &q->reply, [this, q, method](grpc::Status s) {
        if (!s.ok() && !q->retried && rpc::FromGrpc(s).code() == StatusCode::kUnavailable) {
          q->retried = true;
          // The 200 ms wait on a short-lived thread of its own (only on this retry path): it
          // issues the call again on the callback API and ends. (A grpc::Alarm here made ASan
          // report a double free in gRPC's completion-queue teardown at exit, gRPC 1.51.)
          std::thread([q] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            q->issue();
          }).detach();
          return;
        }
        auto finish = std::move(q->done);
        q->issue = nullptr;  // breaks the Pending -> issue -> Pending cycle
        if (s.ok()) {
          finish(std::move(q->reply));
        } else {
          finish(rpc::FromGrpc(s, "agent " + agent_id_ + " " + method));
        }
      });
    };
    p->issue();
  }

  std::string agent_id_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

}  // namespace

AgentClientFactory GrpcAgentClientFactory(rpc::TlsFiles tls) {
  // One credentials object for every agent's channel, built on first use (not per channel:
  // 1,000 agents registering at once would parse the key and build a TLS context 1,000 times).
  struct Shared {
    std::once_flag once;
    Result<std::shared_ptr<grpc::ChannelCredentials>> creds = Err("not built");
  };
  auto shared = std::make_shared<Shared>();
  return [tls, shared](const std::string& agent_id,
                       const std::string& address) -> std::shared_ptr<AgentClient> {
    std::call_once(shared->once, [&] { shared->creds = rpc::MakeChannelCredentials(tls); });
    if (!shared->creds.ok()) {
      spdlog::error("agent {}: {}", agent_id, shared->creds.error());
      return nullptr;
    }
    auto ch = rpc::MakeChannel(rpc::Endpoint{address, tls}, *shared->creds);
    if (!ch.ok()) {
      spdlog::error("agent {}: {}", agent_id, ch.error());
      return nullptr;
    }
    return std::make_shared<GrpcAgentClient>(agent_id, *ch);
  };
}

}  // namespace codl::controller
