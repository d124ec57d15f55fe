// The Agent service of codl-load-agents' emulated agents (load_agents.cc holds the agents
// themselves; load_internal.h the types both share). One CallbackService serves all N loopback
// ports; Load::AgentFor finds the agent a call is for from the port it was dialled on. A file of
// its own: this is the server side of the emulation, load_agents.cc the controller-facing side.
//
// What it does NOT do is spawn anything: StartAntagonist waits (on a timer, not a thread) until
// the requested start time and replies then, like the real agent (started_unix_ns = when the
// timer fired; starts due at once share that time, as N hosts would wake in parallel);
// GetAntagonist reports the target as achieved with one telemetry sample per 250 ms since the
// start (a real injector reports at 4 Hz); StopAntagonist returns those samples; RunVictim
// replies after --victim-time; Calibrate returns a fixed peak. Idempotency keys are honoured
// like the real agent's cache. StreamTelemetry streams what the real agent's TelemetryHub
// would: one antagonist sample per 250 ms of every running antagonist whose id starts with the
// stream's trial id (target achieved), until the controller cancels it. EstimateSetup answers
// --setup-estimate (default 0 s: what a real agent answers for `noop`).
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include "bench/scale/load_internal.h"
#include "lib/common/result.h"
#include "lib/rpc/rpc_util.h"

namespace codl::bench::load_internal {
namespace {

grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* ctx, const Status& s) {
  auto* r = ctx->DefaultReactor();
  r->Finish(rpc::ToGrpc(s));
  return r;
}

}  // namespace

grpc::ServerUnaryReactor* AgentService::Calibrate(grpc::CallbackServerContext* ctx,
                                                  const v1::CalibrateRequest* req,
                                                  v1::CalibrateReply* reply) {
  if (!load_->AgentFor(ctx, "")) return Fail(ctx, NotFound("unknown port"));
  reply->set_peak_rate(1e6);
  reply->set_unit("ops/s");
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* AgentService::StartAntagonist(grpc::CallbackServerContext* ctx,
                                                        const v1::StartAntagonistRequest* req,
                                                        v1::StartAntagonistReply* reply) {
  const int64_t arrival = NowNs();
  LoadAgent* a = load_->AgentFor(ctx, req->antagonist_id());
  if (!a) return Fail(ctx, NotFound("unknown port"));
  auto* r = ctx->DefaultReactor();
  if (load_->Replay(a, req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  double offset;
  {
    std::lock_guard<std::mutex> l(a->mu);
    if (a->antagonists.count(req->antagonist_id())) {
      r->Finish(rpc::ToGrpc(
          FailedPrecondition("antagonist '" + req->antagonist_id() + "' is already running")));
      return r;
    }
    offset = a->last_offset_s;
  }
  ++load_->stats().starts;
  // Like the real agent: wait until the common start time, then "start" and reply.
  const int64_t at = std::max(req->start_at_unix_ns(), arrival);
  Load* load = load_;
  std::string id = req->antagonist_id(), key = req->idempotency_key();
  double target = req->spec().rate();
  int64_t start_at = req->start_at_unix_ns();
  load_->timers().Post(at, [load, a, r, reply, id, key, target, arrival, start_at, offset] {
    const int64_t now = TimerQueue::FiredNs();  // "started" when its timer fired
    {
      std::lock_guard<std::mutex> l(a->mu);
      a->antagonists[id] = Antagonist{target, now};
    }
    load->SampleAt(a, id, now, now + kSamplePeriodNs);
    reply->set_pid(100000 + a->index);
    reply->set_started_unix_ns(now);
    load->Remember(a, key, *reply);
    {
      std::lock_guard<std::mutex> l(load->stats().mu);
      load->stats().start_records.push_back(
          StartRecord{a->index, id, arrival, start_at, offset, now});
    }
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* AgentService::GetAntagonist(grpc::CallbackServerContext* ctx,
                                                      const v1::GetAntagonistRequest* req,
                                                      v1::GetAntagonistReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, req->antagonist_id());
  if (!a) return Fail(ctx, NotFound("unknown port"));
  ++load_->stats().gets;
  std::lock_guard<std::mutex> l(a->mu);
  auto it = a->antagonists.find(req->antagonist_id());
  if (it == a->antagonists.end()) {
    auto* r = ctx->DefaultReactor();
    r->Finish(rpc::ToGrpc(NotFound("no antagonist '" + req->antagonist_id() + "'")));
    return r;
  }
  const int samples = static_cast<int>((NowNs() - it->second.started_ns) / 250'000'000);
  reply->set_running(true);
  reply->set_unit("ops/s");
  reply->set_target(it->second.target);
  reply->set_samples(samples);
  reply->set_last_achieved(samples > 0 ? it->second.target : 0);
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* AgentService::StopAntagonist(grpc::CallbackServerContext* ctx,
                                                       const v1::StopAntagonistRequest* req,
                                                       v1::StopAntagonistReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, req->antagonist_id());
  if (!a) return Fail(ctx, NotFound("unknown port"));
  auto* r = ctx->DefaultReactor();
  if (load_->Replay(a, req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  Antagonist ant;
  {
    std::lock_guard<std::mutex> l(a->mu);
    auto it = a->antagonists.find(req->antagonist_id());
    if (it == a->antagonists.end()) {
      r->Finish(rpc::ToGrpc(NotFound("no antagonist '" + req->antagonist_id() + "'")));
      return r;
    }
    ant = it->second;
    a->antagonists.erase(it);
  }
  ++load_->stats().stops;
  const double ran_s = (NowNs() - ant.started_ns) / 1e9;
  reply->set_unit("ops/s");
  reply->set_target_rate(ant.target);
  reply->set_achieved_rate(ant.target);
  reply->set_cov(0);
  for (double t = 0.25; t <= ran_s; t += 0.25) {
    auto* s = reply->add_samples();
    s->set_t_s(t);
    s->set_achieved(ant.target);
    s->set_target(ant.target);
  }
  reply->set_exit_code(0);
  load_->Remember(a, req->idempotency_key(), *reply);
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* AgentService::RunVictim(grpc::CallbackServerContext* ctx,
                                                  const v1::RunVictimRequest* req,
                                                  v1::RunVictimReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, "");
  if (!a) return Fail(ctx, NotFound("unknown port"));
  auto* r = ctx->DefaultReactor();
  if (load_->Replay(a, req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  ++load_->stats().victims;
  const int64_t started = NowNs();
  const double wall = load_->options().victim_s;
  Load* load = load_;
  std::string key = req->idempotency_key();
  load_->timers().Post(started + static_cast<int64_t>(wall * 1e9),
                       [load, a, r, reply, key, started, wall] {
                         reply->set_ok(true);
                         reply->set_exit_code(0);
                         reply->set_wall_s(wall);
                         reply->set_metric(wall);
                         reply->set_started_unix_ns(started);
                         load->Remember(a, key, *reply);
                         r->Finish(grpc::Status::OK);
                       });
  return r;
}

grpc::ServerUnaryReactor* AgentService::StopAll(grpc::CallbackServerContext* ctx,
                                                const v1::StopAllRequest* req,
                                                v1::StopAllReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, "");
  if (!a) return Fail(ctx, NotFound("unknown port"));
  {
    std::lock_guard<std::mutex> l(a->mu);
    reply->set_stopped(static_cast<int>(a->antagonists.size()));
    a->antagonists.clear();
  }
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerWriteReactor<v1::TelemetryEvent>* AgentService::StreamTelemetry(
    grpc::CallbackServerContext* ctx, const v1::StreamTelemetryRequest* req) {
  LoadAgent* a = load_->AgentFor(ctx, "");
  if (!a) return rpc::RefuseStream<v1::TelemetryEvent>(rpc::ToGrpc(NotFound("unknown port")));
  if (req->trial_id().empty()) {
    return rpc::RefuseStream<v1::TelemetryEvent>(
        rpc::ToGrpc(codl::InvalidArgument("trial_id is empty")));
  }
  ++load_->stats().streams;
  return new TelemetryStream(a, req->trial_id());
}

grpc::ServerUnaryReactor* AgentService::EstimateSetup(grpc::CallbackServerContext* ctx,
                                                      const v1::EstimateSetupRequest*,
                                                      v1::EstimateSetupReply* reply) {
  if (!load_->AgentFor(ctx, "")) return Fail(ctx, NotFound("unknown port"));
  ++load_->stats().estimates;
  reply->set_setup_estimate_s(load_->options().setup_estimate_s);
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

}  // namespace codl::bench::load_internal
