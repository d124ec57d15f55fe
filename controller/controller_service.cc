#include "controller/controller_service.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "controller/ownership.h"
#include "controller/peer_identity.h"
#include "lib/common/utf8.h"
#include "lib/rpc/queued_writer.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/rpc_util.h"
#include "lib/rpc/serve.h"
#include "lib/rpc/status.h"

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

namespace {
Caller CallerFrom(const grpc::CallbackServerContext& ctx) {
  auto who = rpc::CallerOf(ctx);
  if (!who.ok()) return Caller{};  // Refuse has finished such calls already
  return Caller{who->ToString(), who->role == rpc::Role::kAdmin};
}
}  // namespace

// The one path of every unary handler: the caller checked (Refuse), identified, then `body`
// run — on the executor when `blocking`, else on the gRPC thread — under rpc::Guarded, whose
// status finishes the call: an exception (an allocation that fails) fails the call, never the
// controller.
template <typename Body>
grpc::ServerUnaryReactor* ControllerServiceImpl::Serve(grpc::CallbackServerContext* ctx,
                                                       const char* what, Blocking blocking,
                                                       Body body, const std::string* agent_id) {
  if (auto* r = Refuse(ctx, agent_id)) return r;
  return rpc::FinishUnary(
      ctx, what, blocking == Blocking::kYes ? &executor_ : nullptr,
      [caller = CallerFrom(*ctx), body = std::move(body)]() mutable { return body(caller); });
}

Result<ExperimentRecord> ControllerServiceImpl::Readable(const Caller& caller,
                                                         const std::string& id) {
  auto resolved = ResolveExperimentFor(*store_, caller, id, Access::kRead);
  if (!resolved.ok()) return resolved.status();
  return store_->GetExperiment(*resolved);
}

Result<ExperimentRecord> ControllerServiceImpl::Changeable(const Caller& caller,
                                                           const std::string& id,
                                                           const std::string& action) {
  auto resolved = ResolveExperimentFor(*store_, caller, id, Access::kChange);
  if (!resolved.ok()) return resolved.status();
  auto rec = store_->GetExperiment(*resolved);
  if (!rec.ok()) return rec.status();
  if (Status s = MayChange(caller, *rec, action); !s.ok()) {
    spdlog::warn("refused: {} (experiment {})", TerminalSafe(s.message()), rec->id);
    return s;
  }
  return rec;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::RegisterAgent(grpc::CallbackServerContext* ctx,
                                                               const v1::RegisterAgentRequest* req,
                                                               v1::RegisterAgentReply* reply) {
  return Serve(
      ctx, "RegisterAgent", Blocking::kNo,
      [this, ctx, req, reply](const Caller&) {
        Status s =
            agents_->Register(req->agent(), PeerIdentityOf(*ctx), req->node(), req->session_id());
        reply->set_heartbeat_interval_s(config_.heartbeat_interval_s);
        reply->set_lease_s(config_.lease_s);
        reply->set_controller_time_unix_ns(clock_->UnixNanos());
        // The registry's refusals (empty id, no address) are about what the agent sent.
        return rpc::ToGrpc(s, StatusCode::kInvalidArgument);
      },
      &req->agent().agent_id());
}

grpc::ServerUnaryReactor* ControllerServiceImpl::Heartbeat(grpc::CallbackServerContext* ctx,
                                                           const v1::HeartbeatRequest* req,
                                                           v1::HeartbeatReply* reply) {
  reply->set_controller_recv_unix_ns(clock_->UnixNanos());
  return Serve(
      ctx, "Heartbeat", Blocking::kNo,
      [this, ctx, req, reply](const Caller&) {
        bool known = agents_->Heartbeat(req->agent_id(), req->last_rtt_s(), req->last_offset_s(),
                                        req->running_antagonists(), PeerIdentityOf(*ctx),
                                        req->load_avg_1m(), req->session_id());
        reply->set_reregister(!known);
        reply->set_controller_send_unix_ns(clock_->UnixNanos());
        return grpc::Status::OK;
      },
      &req->agent_id());
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
  return Serve(ctx, "PublishRendezvous", Blocking::kNo, [this, ctx, req](const Caller&) {
    Status s = CheckRendezvousCaller(ctx, req->key());
    if (s.ok()) s = rendezvous_.Publish(req->key(), req->value());
    return rpc::ToGrpc(s);
  });
}

// The wait happens in the rendezvous, not on a handler thread: the reactor finishes from
// Publish or from the rendezvous' sweep, so slow fetches cannot starve other calls.
grpc::ServerUnaryReactor* ControllerServiceImpl::FetchRendezvous(
    grpc::CallbackServerContext* ctx, const v1::FetchRendezvousRequest* req,
    v1::FetchRendezvousReply* reply) {
  if (auto* r = Refuse(ctx)) return r;
  auto* r = ctx->DefaultReactor();
  grpc::Status refused = rpc::Guarded("FetchRendezvous", [&] {
    Status s = CheckRendezvousCaller(ctx, req->key());
    if (s.ok()) {
      s = rendezvous_.Fetch(req->key(), req->wait_s(), [r, reply](std::optional<std::string> v) {
        reply->set_found(v.has_value());
        if (v) reply->set_value(std::move(*v));
        r->Finish(grpc::Status::OK);
      });
    }
    return rpc::ToGrpc(s);
  });
  if (!refused.ok()) r->Finish(refused);  // else the rendezvous finishes it
  return r;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::SubmitExperiment(
    grpc::CallbackServerContext* ctx, const v1::SubmitExperimentRequest* req,
    v1::SubmitExperimentReply* reply) {
  return Serve(ctx, "SubmitExperiment", Blocking::kYes, [this, req, reply](const Caller& c) {
    if (cache_.Lookup(req->idempotency_key(), reply)) return grpc::Status::OK;
    auto s = scheduler_->Submit(req->yaml(), req->source_path(), c.submitter);
    if (!s.ok()) return rpc::ToGrpc(s.status());
    reply->set_experiment_id(s->id);
    reply->set_total_trials(s->total_trials);
    cache_.Store(req->idempotency_key(), *reply);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetExperiment(grpc::CallbackServerContext* ctx,
                                                               const v1::GetExperimentRequest* req,
                                                               v1::ExperimentStatus* reply) {
  return Serve(ctx, "GetExperiment", Blocking::kYes, [this, req, reply](const Caller& c) {
    auto id = ResolveExperimentFor(*store_, c, req->experiment_id(), Access::kRead);
    auto s = id.ok() ? scheduler_->GetStatus(*id) : Result<v1::ExperimentStatus>(id.status());
    if (!s.ok()) return rpc::ToGrpc(s.status());
    *reply = *s;
    return grpc::Status::OK;
  });
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
  std::string id;
  auth = rpc::Guarded("WatchExperiment", [&] {
    auto resolved =
        ResolveExperimentFor(*store_, CallerFrom(*ctx), req->experiment_id(), Access::kRead);
    if (resolved.ok()) id = *resolved;
    return rpc::ToGrpc(resolved.status());
  });
  if (!auth.ok()) return rpc::RefuseStream<v1::ExperimentEvent>(auth);
  return new WatchReactor(scheduler_, id);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetResults(grpc::CallbackServerContext* ctx,
                                                            const v1::GetResultsRequest* req,
                                                            v1::GetResultsReply* reply) {
  return Serve(ctx, "GetResults", Blocking::kYes, [this, req, reply](const Caller& c) {
    auto e = Readable(c, req->experiment_id());
    if (!e.ok()) return rpc::ToGrpc(e.status());
    auto t = store_->GetTrials(e->id, /*with_series=*/true);
    if (!t.ok()) return rpc::ToGrpc(t.status(), StatusCode::kInternal);
    rpc::ToProto(*e, *t, reply);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetTrialTrace(grpc::CallbackServerContext* ctx,
                                                               const v1::GetTrialTraceRequest* req,
                                                               v1::GetTrialTraceReply* reply) {
  return Serve(ctx, "GetTrialTrace", Blocking::kYes, [this, req, reply](const Caller& c) {
    auto e = Readable(c, req->experiment_id());
    if (!e.ok()) return rpc::ToGrpc(e.status());
    auto trace = store_->GetTrialTrace(e->id, req->trial_index());
    if (!trace.ok()) return rpc::ToGrpc(trace.status(), StatusCode::kInternal);
    reply->set_experiment_id(e->id);
    reply->set_found(trace->has_value());
    if (*trace) {
      reply->set_raw_bytes((*trace)->raw_bytes);
      reply->set_trace_zlib(std::move((*trace)->zlib));
    }
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ListAgents(grpc::CallbackServerContext* ctx,
                                                            const v1::ListAgentsRequest*,
                                                            v1::ListAgentsReply* reply) {
  return Serve(ctx, "ListAgents", Blocking::kNo, [this, reply](const Caller&) {
    for (auto& a : agents_->List()) *reply->add_agents() = std::move(a);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* ControllerServiceImpl::CancelExperiment(
    grpc::CallbackServerContext* ctx, const v1::CancelExperimentRequest* req,
    v1::CancelExperimentReply* reply) {
  return Serve(ctx, "CancelExperiment", Blocking::kYes, [this, req, reply](const Caller& c) {
    auto rec = Changeable(c, req->experiment_id(), "cancel");
    if (!rec.ok()) return rpc::ToGrpc(rec.status());
    spdlog::info("experiment {}: cancel requested by {}", rec->id, TerminalSafe(c.submitter));
    auto s = scheduler_->Cancel(rec->id);
    if (!s.ok()) return rpc::ToGrpc(s.status());
    reply->set_experiment_state(rpc::ToProto(s->state));
    reply->set_stopping(s->stopping);
    reply->set_state(s->stopping ? "cancelling" : ToString(s->state));
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ResumeExperiment(
    grpc::CallbackServerContext* ctx, const v1::ResumeExperimentRequest* req,
    v1::ResumeExperimentReply* reply) {
  return Serve(ctx, "ResumeExperiment", Blocking::kYes, [this, req, reply](const Caller& c) {
    auto rec = Changeable(c, req->experiment_id(), "resume");
    if (!rec.ok()) return rpc::ToGrpc(rec.status());
    spdlog::info("experiment {}: resume requested by {}", rec->id, TerminalSafe(c.submitter));
    auto s = scheduler_->Resume(rec->id, req->retry_failed());
    if (!s.ok()) return rpc::ToGrpc(s.status());
    reply->set_retried_trials(s->retried_trials);
    reply->set_experiment_id(s->id);
    reply->set_total_trials(s->total_trials);
    reply->set_kept_trials(s->kept_trials);
    reply->set_previous_state(rpc::ToProto(s->previous_state));
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* ControllerServiceImpl::CalibrateNode(grpc::CallbackServerContext* ctx,
                                                               const v1::CalibrateNodeRequest* req,
                                                               v1::CalibrateNodeReply* reply) {
  return Serve(ctx, "CalibrateNode", Blocking::kYes, [this, req, reply](const Caller& c) {
    std::vector<std::string> nodes;
    if (!req->agent_id().empty()) {
      nodes.push_back(req->agent_id());
    } else {
      for (const auto& a : agents_->List()) {
        if (a.alive()) nodes.push_back(a.agent_id());
      }
    }
    if (nodes.empty()) return rpc::ToGrpc(FailedPrecondition("no live agent to calibrate"));
    spdlog::info("calibration of {} on {} node(s) requested by {}", TerminalSafe(req->injector()),
                 nodes.size(), TerminalSafe(c.submitter));
    std::map<std::string, std::string> options(req->options().begin(), req->options().end());
    for (const auto& n : nodes) {
      auto* e = reply->add_entries();
      e->set_agent_id(n);
      // A calibration is a full-intensity load: its length is bounded like an antagonist's.
      const double d = req->duration_s();
      auto cal = runner_->Calibrate(n, req->injector(), options,
                                    std::isfinite(d) && d > 0 ? std::min(d, 600.0) : 2);
      if (cal.ok()) {
        e->set_peak_rate(cal->peak_rate);
        e->set_unit(cal->unit);
      } else {
        e->set_error(cal.error());
      }
    }
    return grpc::Status::OK;
  });
}

}  // namespace codl::controller
