#include "controller/controller_service.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "controller/peer_identity.h"
#include "lib/rpc/queued_writer.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/rpc_util.h"

namespace codl::controller {

ControllerServiceImpl::ControllerServiceImpl(AgentRegistry* agents, ExperimentScheduler* scheduler,
                                             ExperimentRunner* runner, store::Store* store,
                                             const Clock* clock, ServiceConfig config)
    : agents_(agents),
      scheduler_(scheduler),
      runner_(runner),
      store_(store),
      clock_(clock),
      config_(config),
      rendezvous_(clock) {}

ControllerServiceImpl::~ControllerServiceImpl() { Shutdown(); }

void ControllerServiceImpl::Shutdown() {
  rendezvous_.Close();  // waiting fetches answer "not found" so the server can drain
  executor_.Shutdown();
}

grpc::ServerUnaryReactor* ControllerServiceImpl::Refuse(grpc::CallbackServerContext* ctx,
                                                        const std::string* agent_id) {
  grpc::Status auth = agent_id ? rpc::CheckAgentIdentity(*ctx, *agent_id) : rpc::CheckCaller(ctx);
  if (auth.ok()) return nullptr;
  auto* r = ctx->DefaultReactor();
  r->Finish(auth);
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::RegisterAgent(grpc::CallbackServerContext* ctx,
                                                               const v1::RegisterAgentRequest* req,
                                                               v1::RegisterAgentReply* reply) {
  if (auto* r = Refuse(ctx, &req->agent().agent_id())) return r;
  auto* r = ctx->DefaultReactor();
  Status s = agents_->Register(req->agent(), PeerIdentityOf(*ctx), req->node(), req->session_id());
  reply->set_heartbeat_interval_s(config_.heartbeat_interval_s);
  reply->set_lease_s(config_.lease_s);
  reply->set_controller_time_unix_ns(clock_->UnixNanos());
  // The registry's refusals (empty id, no address) are about what the agent sent.
  r->Finish(rpc::ToGrpc(s, StatusCode::kInvalidArgument));
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::Heartbeat(grpc::CallbackServerContext* ctx,
                                                           const v1::HeartbeatRequest* req,
                                                           v1::HeartbeatReply* reply) {
  reply->set_controller_recv_unix_ns(clock_->UnixNanos());
  if (auto* r = Refuse(ctx, &req->agent_id())) return r;
  auto* r = ctx->DefaultReactor();
  bool known = agents_->Heartbeat(req->agent_id(), req->last_rtt_s(), req->last_offset_s(),
                                  req->running_antagonists(), PeerIdentityOf(*ctx),
                                  req->load_avg_1m(), req->session_id());
  reply->set_reregister(!known);
  reply->set_controller_send_unix_ns(clock_->UnixNanos());
  r->Finish(grpc::Status::OK);
  return r;
}

// Only registered, live agents take part in a rendezvous: anyone else could plant a value for
// a key that the ranks of a collective will fetch. And only the agents placed in the key's
// trial: another experiment's agent could otherwise read or pre-empt its values.
Status ControllerServiceImpl::CheckRendezvousCaller(grpc::CallbackServerContext* ctx,
                                                    const std::string& key) const {
  PeerIdentity who = PeerIdentityOf(*ctx);
  if (!agents_->IsLiveAgent(who)) {
    return PermissionDenied("rendezvous calls come from registered agents only (caller " +
                            who.Describe() + ")");
  }
  auto placed = runner_ ? runner_->rendezvous_grants().AgentsFor(key) : std::nullopt;
  for (const std::string& id : placed.value_or(std::set<std::string>{})) {
    if (agents_->IsLiveAgent(who, id) && rpc::CheckAgentIdentity(*ctx, id).ok()) {
      return Status::Ok();
    }
  }
  return PermissionDenied("rendezvous key '" + key + "' belongs to no running trial that " +
                          who.Describe() + " is placed in");
}

grpc::ServerUnaryReactor* ControllerServiceImpl::PublishRendezvous(
    grpc::CallbackServerContext* ctx, const v1::PublishRendezvousRequest* req,
    v1::PublishRendezvousReply*) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  Status s = CheckRendezvousCaller(ctx, req->key());
  if (s.ok()) s = rendezvous_.Publish(req->key(), req->value());
  r->Finish(rpc::ToGrpc(s));
  return r;
}

// The wait happens in the rendezvous, not on a handler thread: the reactor finishes from
// Publish or from the rendezvous' sweep, so slow fetches cannot starve other calls.
grpc::ServerUnaryReactor* ControllerServiceImpl::FetchRendezvous(
    grpc::CallbackServerContext* ctx, const v1::FetchRendezvousRequest* req,
    v1::FetchRendezvousReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  Status s = CheckRendezvousCaller(ctx, req->key());
  if (s.ok()) {
    s = rendezvous_.Fetch(req->key(), req->wait_s(), [r, reply](std::optional<std::string> v) {
      reply->set_found(v.has_value());
      if (v) reply->set_value(std::move(*v));
      r->Finish(grpc::Status::OK);
    });
  }
  if (!s.ok()) r->Finish(rpc::ToGrpc(s));
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::SubmitExperiment(
    grpc::CallbackServerContext* ctx, const v1::SubmitExperimentRequest* req,
    v1::SubmitExperimentReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  if (cache_.Lookup(req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  executor_.Post([this, r, req, reply] {
    auto s = scheduler_->Submit(req->yaml(), req->source_path());
    if (!s.ok()) {
      r->Finish(rpc::ToGrpc(s.status()));
      return;
    }
    reply->set_experiment_id(s->id);
    reply->set_total_trials(s->total_trials);
    cache_.Store(req->idempotency_key(), *reply);
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetExperiment(grpc::CallbackServerContext* ctx,
                                                               const v1::GetExperimentRequest* req,
                                                               v1::ExperimentStatus* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  executor_.Post([this, r, req, reply] {
    auto s = scheduler_->GetStatus(req->experiment_id().empty() ? "latest" : req->experiment_id());
    if (!s.ok()) {
      r->Finish(rpc::ToGrpc(s.status()));
      return;
    }
    *reply = *s;
    r->Finish(grpc::Status::OK);
  });
  return r;
}

// Streams events of one experiment; the scheduler's final event closes the stream.
class ControllerServiceImpl::WatchReactor : public rpc::QueuedWriteReactor<v1::ExperimentEvent> {
 public:
  WatchReactor(ExperimentScheduler* scheduler, const std::string& id) : scheduler_(scheduler) {
    auto h = scheduler_->Watch(
        id, [this](const v1::ExperimentEvent& ev, bool final) { Push(ev, /*close_after=*/final); });
    if (!h.ok()) {
      Close(rpc::ToGrpc(h.status()));
      return;
    }
    handle_ = *h;
  }

 protected:
  void OnUnsubscribe() override {
    if (handle_ > 0) scheduler_->Unwatch(handle_);
  }

 private:
  ExperimentScheduler* scheduler_;
  int handle_ = 0;
};

grpc::ServerWriteReactor<v1::ExperimentEvent>* ControllerServiceImpl::WatchExperiment(
    grpc::CallbackServerContext* ctx, const v1::WatchExperimentRequest* req) {
  grpc::Status auth = rpc::CheckCaller(ctx);
  if (!auth.ok()) return rpc::RefuseStream<v1::ExperimentEvent>(auth);
  return new WatchReactor(scheduler_,
                          req->experiment_id().empty() ? "latest" : req->experiment_id());
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetResults(grpc::CallbackServerContext* ctx,
                                                            const v1::GetResultsRequest* req,
                                                            v1::GetResultsReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  executor_.Post([this, r, req, reply] {
    auto e = store_->GetExperiment(req->experiment_id().empty() ? "latest" : req->experiment_id());
    if (!e.ok()) {
      r->Finish(rpc::ToGrpc(e.status()));
      return;
    }
    auto t = store_->GetTrials(e->id, /*with_series=*/true);
    if (!t.ok()) {
      r->Finish(rpc::ToGrpc(t.status(), StatusCode::kInternal));
      return;
    }
    rpc::ToProto(*e, *t, reply);
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetTrialTrace(grpc::CallbackServerContext* ctx,
                                                               const v1::GetTrialTraceRequest* req,
                                                               v1::GetTrialTraceReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  executor_.Post([this, r, req, reply] {
    auto e = store_->GetExperiment(req->experiment_id().empty() ? "latest" : req->experiment_id());
    if (!e.ok()) {
      r->Finish(rpc::ToGrpc(e.status()));
      return;
    }
    auto trace = store_->GetTrialTrace(e->id, req->trial_index());
    if (!trace.ok()) {
      r->Finish(rpc::ToGrpc(trace.status(), StatusCode::kInternal));
      return;
    }
    reply->set_experiment_id(e->id);
    reply->set_found(trace->has_value());
    if (*trace) {
      reply->set_raw_bytes((*trace)->raw_bytes);
      reply->set_trace_zlib(std::move((*trace)->zlib));
    }
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ListAgents(grpc::CallbackServerContext* ctx,
                                                            const v1::ListAgentsRequest*,
                                                            v1::ListAgentsReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  for (auto& a : agents_->List()) *reply->add_agents() = std::move(a);
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::CancelExperiment(
    grpc::CallbackServerContext* ctx, const v1::CancelExperimentRequest* req,
    v1::CancelExperimentReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  executor_.Post([this, r, req, reply] {
    auto s = scheduler_->Cancel(req->experiment_id().empty() ? "latest" : req->experiment_id());
    if (!s.ok()) {
      r->Finish(rpc::ToGrpc(s.status()));
      return;
    }
    reply->set_experiment_state(rpc::ToProto(s->state));
    reply->set_stopping(s->stopping);
    reply->set_state(s->stopping ? "cancelling" : ToString(s->state));
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ResumeExperiment(
    grpc::CallbackServerContext* ctx, const v1::ResumeExperimentRequest* req,
    v1::ResumeExperimentReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  executor_.Post([this, r, req, reply] {
    auto s = scheduler_->Resume(req->experiment_id().empty() ? "latest" : req->experiment_id());
    if (!s.ok()) {
      r->Finish(rpc::ToGrpc(s.status()));
      return;
    }
    reply->set_experiment_id(s->id);
    reply->set_total_trials(s->total_trials);
    reply->set_kept_trials(s->kept_trials);
    reply->set_previous_state(rpc::ToProto(s->previous_state));
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::CalibrateNode(grpc::CallbackServerContext* ctx,
                                                               const v1::CalibrateNodeRequest* req,
                                                               v1::CalibrateNodeReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  executor_.Post([this, r, req, reply] {
    std::vector<std::string> nodes;
    if (!req->agent_id().empty()) {
      nodes.push_back(req->agent_id());
    } else {
      for (const auto& a : agents_->List()) {
        if (a.alive()) nodes.push_back(a.agent_id());
      }
    }
    if (nodes.empty()) {
      r->Finish(rpc::ToGrpc(FailedPrecondition("no live agent to calibrate")));
      return;
    }
    std::map<std::string, std::string> options(req->options().begin(), req->options().end());
    for (const auto& n : nodes) {
      auto* e = reply->add_entries();
      e->set_agent_id(n);
      // A calibration is a full-intensity load: its length is bounded like an antagonist's.
      const double d = req->duration_s();
      auto c = runner_->Calibrate(n, req->injector(), options,
                                  std::isfinite(d) && d > 0 ? std::min(d, 600.0) : 2);
      if (c.ok()) {
        e->set_peak_rate(c->peak_rate);
        e->set_unit(c->unit);
      } else {
        e->set_error(c.error());
      }
    }
    r->Finish(grpc::Status::OK);
  });
  return r;
}

}  // namespace codl::controller
