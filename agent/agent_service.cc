#include "agent/agent_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "lib/rpc/queued_writer.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/rpc_util.h"
#include "lib/rpc/serve.h"

namespace codl::agent {

namespace {

std::string FormatShort(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

experiment::VictimSpec FromProto(const v1::VictimSpec& p) {
  experiment::VictimSpec v;
  v.command.assign(p.command().begin(), p.command().end());
  v.env.insert(p.env().begin(), p.env().end());
  v.workdir = p.workdir();
  v.warmup_steps = p.warmup_steps();
  v.timeout_s = p.timeout_s();
  v.trace_steps = std::clamp(p.trace_steps(), 0, experiment::kMaxTraceSteps);
  if (!p.cache_mode().empty()) v.cache.mode = p.cache_mode();
  v.cache.paths.assign(p.cache_paths().begin(), p.cache_paths().end());
  switch (p.progress().format()) {
    case v1::VictimProgress::REGEX:
      v.progress.format = experiment::ProgressSpec::Format::kRegex;
      break;
    case v1::VictimProgress::WALL:
      v.progress.format = experiment::ProgressSpec::Format::kWall;
      break;
    default: v.progress.format = experiment::ProgressSpec::Format::kJsonl;
  }
  if (!p.progress().field().empty()) v.progress.field = p.progress().field();
  v.progress.pattern = p.progress().pattern();
  return v;
}

experiment::PlacementSpec FromProto(const v1::Placement& p) {
  experiment::PlacementSpec s;
  s.cpus = p.cpus();
  s.numa = p.numa();
  s.where = p.where();
  return s;
}

}  // namespace

Status CheckStartRequest(const v1::StartAntagonistRequest& req, const AgentPolicy& policy,
                         std::optional<double> calibrated_peak) {
  const auto& spec = req.spec();
  for (double v :
       {req.level(), spec.rate(), spec.max_duration_s(), req.lease_s(), req.start_timeout_s()}) {
    if (!std::isfinite(v)) return InvalidArgument("a number in the request is NaN or infinite");
  }
  if (req.level() < 0) return InvalidArgument("level must not be negative");
  if (req.lease_s() < 0 || (req.lease_s() > 0 && req.lease_s() < kMinLeaseS)) {
    return InvalidArgument("lease_s must be 0 (the agent's default) or at least " +
                           FormatShort(kMinLeaseS) + " s");
  }
  if (spec.max_duration_s() < 0) return InvalidArgument("max_duration_s must not be negative");
  if (req.start_timeout_s() < 0) return InvalidArgument("start_timeout_s must not be negative");
  auto deny = [&](const std::string& what) {
    return PermissionDenied(what + " exceeds this agent's max_level " +
                            FormatShort(policy.max_level));
  };
  // The level the client names is only a claim: the policy applies to the load that would run.
  if (req.level() > policy.max_level) return deny("level " + FormatShort(req.level()));
  const bool max = spec.target_case() == v1::InjectorSpec::kMax && spec.max();
  if (max) {
    return policy.max_level >= 1 ? Status::Ok() : deny("an unpaced (max) load, level 1,");
  }
  if (!(spec.rate() > 0)) return Status::Ok();  // refused as "rate must be > 0" by the manager
  if (!calibrated_peak) {
    if (policy.max_level >= 1) return Status::Ok();  // nothing can exceed full intensity
    return PermissionDenied("an absolute rate for " + spec.injector() +
                            " cannot be checked against max_level " +
                            FormatShort(policy.max_level) +
                            ": this agent has not calibrated it (run `codlctl calibrate`)");
  }
  const double level = spec.rate() / *calibrated_peak;
  if (level > policy.max_level * (1 + 1e-9)) {
    return deny("rate " + FormatShort(spec.rate()) + " (level " + FormatShort(level) +
                " of the calibrated peak " + FormatShort(*calibrated_peak) + ")");
  }
  return Status::Ok();
}

Status CheckWorkloadRequest(const v1::StartAntagonistRequest& req, const AgentPolicy& policy) {
  // A workload is a command, like a victim: the same policy allows it (max_level governs
  // injectors' intensities, and a real job has none).
  if (!policy.allow_victim) {
    return PermissionDenied(
        "this agent's policy does not allow victim commands (allow_victim: false), so no "
        "workload antagonist either");
  }
  for (double v : {req.spec().max_duration_s(), req.lease_s()}) {
    if (!std::isfinite(v)) return InvalidArgument("a number in the request is NaN or infinite");
  }
  if (req.lease_s() < 0 || (req.lease_s() > 0 && req.lease_s() < kMinLeaseS)) {
    return InvalidArgument("lease_s must be 0 (the agent's default) or at least " +
                           FormatShort(kMinLeaseS) + " s");
  }
  if (req.spec().max_duration_s() < 0)
    return InvalidArgument("max_duration_s must not be negative");
  const auto& w = req.spec().workload();
  if (w.command().empty() || w.command(0).empty()) {
    return InvalidArgument("a workload antagonist needs a command");
  }
  if (w.progress().format() == v1::VictimProgress::WALL) {
    return InvalidArgument("a workload antagonist must report steps (progress jsonl or regex)");
  }
  return Status::Ok();
}

// The workload's environment and user, as the victim's would be (docs/security.md, "Victim
// isolation"): its experiment's uid from victim_uid_range, else the victim identity's user; the
// clean environment when the identity asks for one; the codl Python package on PYTHONPATH.
Result<InjectChild::Spec::Workload> AgentServiceImpl::WorkloadFor(
    const v1::StartAntagonistRequest& req) {
  const experiment::VictimSpec spec = FromProto(req.spec().workload());
  const VictimIdentity& identity = victims_.identity();
  InjectChild::Spec::Workload w;
  w.progress = spec.progress;
  w.warmup_steps = std::max(0, spec.warmup_steps);
  w.workdir = spec.workdir;
  w.run_as = identity.run_as;
  if (policy_.uid_pool) {
    auto id = policy_.uid_pool->Acquire(req.experiment_id());
    if (!id.ok()) return id.status().WithContext("workload could not start");
    w.run_as = *id;
  }
  if (identity.clean_env) {
    w.inherit_env = false;
    w.env = CleanVictimEnvironment(identity.env_keep, "/tmp");
  }
  for (const auto& [k, v] : spec.env) w.env[k] = v;
  if (const std::string py = CodlPythonDir(); !py.empty()) {
    w.env["PYTHONPATH"] = identity.clean_env ? VictimPythonPath(py, w.env, /*inherited=*/"")
                                             : VictimPythonPath(py, spec.env);
  }
  return w;
}

AgentServiceImpl::AgentServiceImpl(AntagonistManager* antagonists, const Clock* clock,
                                   AgentPolicy policy, TelemetryHub* telemetry)
    : antagonists_(antagonists),
      clock_(clock),
      policy_(policy),
      telemetry_(telemetry),
      victims_(clock, policy.placer, policy_.victim, policy_.uid_pool, antagonists, telemetry),
      node_windows_(clock) {}

AgentServiceImpl::~AgentServiceImpl() { Shutdown(); }

void AgentServiceImpl::Shutdown() {
  victims_.CancelAll();
  victim_threads_.JoinAll();
  executor_.Shutdown();
}

grpc::ServerUnaryReactor* AgentServiceImpl::Prologue(grpc::CallbackServerContext* ctx,
                                                     const std::string& key,
                                                     google::protobuf::Message* reply) {
  grpc::Status auth = rpc::CheckCaller(ctx);
  if (!auth.ok()) {
    auto* r = ctx->DefaultReactor();
    r->Finish(auth);
    return r;
  }
  if (cache_.Lookup(key, reply)) {
    auto* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
  return nullptr;
}

grpc::ServerUnaryReactor* AgentServiceImpl::Calibrate(grpc::CallbackServerContext* ctx,
                                                      const v1::CalibrateRequest* req,
                                                      v1::CalibrateReply* reply) {
  if (auto* r = Prologue(ctx, req->idempotency_key(), reply)) return r;
  return rpc::FinishUnary(ctx, "Calibrate", &executor_, [this, req, reply] {
    std::map<std::string, std::string> options(req->options().begin(), req->options().end());
    auto c = antagonists_->Calibrate(req->injector(), options, req->duration_s());
    if (!c.ok()) return rpc::ToGrpc(c.status(), StatusCode::kFailedPrecondition);
    reply->set_peak_rate(c->peak_rate);
    reply->set_unit(c->unit);
    cache_.Store(req->idempotency_key(), *reply);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::StartAntagonist(grpc::CallbackServerContext* ctx,
                                                            const v1::StartAntagonistRequest* req,
                                                            v1::StartAntagonistReply* reply) {
  if (auto* r = Prologue(ctx, req->idempotency_key(), reply)) return r;
  const bool workload = req->spec().has_workload();
  Status allowed =
      workload
          ? CheckWorkloadRequest(*req, policy_)
          : CheckStartRequest(*req, policy_, antagonists_->CalibratedPeak(req->spec().injector()));
  if (!allowed.ok()) {
    return rpc::FinishUnary(ctx, "StartAntagonist", nullptr, [&] { return rpc::ToGrpc(allowed); });
  }
  return rpc::FinishUnary(ctx, "StartAntagonist", &executor_, [this, req, reply, workload] {
    InjectorRequest ir;
    if (workload) {
      auto w = WorkloadFor(*req);
      if (!w.ok()) return rpc::ToGrpc(w.status(), StatusCode::kFailedPrecondition);
      ir.command.assign(req->spec().workload().command().begin(),
                        req->spec().workload().command().end());
      ir.workload = std::move(*w);
    }
    ir.injector = req->spec().injector();
    ir.options.insert(req->spec().options().begin(), req->spec().options().end());
    ir.max = req->spec().target_case() == v1::InjectorSpec::kMax && req->spec().max();
    ir.rate = req->spec().rate();
    ir.max_duration_s = req->spec().max_duration_s();
    ir.start_timeout_s = req->start_timeout_s();
    // Absent: numa 0 would read as "node 0"; proto3 has no unset ints, so has_placement decides.
    if (req->has_placement()) ir.placement = FromProto(req->placement());
    // Synchronized start: codl-inject is spawned now and begins its load at the common time,
    // at most 5 s past this node's own setup estimate (the controller waits for the slowest).
    const auto estimate = antagonists_->EstimateSetupS(ir.injector, ir.options);
    const double setup_s = estimate.ok() ? *estimate : 0;
    ir.start_at_unix_ns =
        std::min<int64_t>(req->start_at_unix_ns(), clock_->UnixNanos() + 5'000'000'000LL +
                                                       static_cast<int64_t>(setup_s * 1e9));
    auto started = antagonists_->Start(req->antagonist_id(), ir, req->lease_s());
    if (!started.ok()) return rpc::ToGrpc(started.status(), StatusCode::kFailedPrecondition);
    reply->set_pid(started->pid);
    reply->set_started_unix_ns(started->started_unix_ns);
    reply->set_setup_s(started->setup_s);
    reply->set_setup_estimate_s(setup_s);
    reply->set_ready_unix_ns(started->ready_unix_ns);
    cache_.Store(req->idempotency_key(), *reply);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::EstimateSetup(grpc::CallbackServerContext* ctx,
                                                          const v1::EstimateSetupRequest* req,
                                                          v1::EstimateSetupReply* reply) {
  if (auto* r = Prologue(ctx, "", reply)) return r;
  // Pure arithmetic on the options: answered inline. A refusal is left to the start.
  return rpc::FinishUnary(ctx, "EstimateSetup", nullptr, [this, req, reply] {
    std::map<std::string, std::string> options(req->spec().options().begin(),
                                               req->spec().options().end());
    const auto estimate = antagonists_->EstimateSetupS(req->spec().injector(), options);
    reply->set_setup_estimate_s(estimate.ok() ? *estimate : 0);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::BeginNodeWindow(grpc::CallbackServerContext* ctx,
                                                            const v1::BeginNodeWindowRequest* req,
                                                            v1::BeginNodeWindowReply* reply) {
  if (auto* r = Prologue(ctx, "", reply)) return r;
  // A few small file reads: answered inline.
  return rpc::FinishUnary(ctx, "BeginNodeWindow", nullptr, [this, req] {
    return rpc::ToGrpc(node_windows_.Begin(req->trial_id(), req->lease_s()));
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::EndNodeWindow(grpc::CallbackServerContext* ctx,
                                                          const v1::EndNodeWindowRequest* req,
                                                          v1::EndNodeWindowReply* reply) {
  if (auto* r = Prologue(ctx, "", reply)) return r;
  return rpc::FinishUnary(ctx, "EndNodeWindow", nullptr, [this, req, reply] {
    auto t = node_windows_.End(req->trial_id());
    if (!t.ok()) return rpc::ToGrpc(t.status());
    *reply->mutable_telemetry() = rpc::ToProto(*t);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::GetAntagonist(grpc::CallbackServerContext* ctx,
                                                          const v1::GetAntagonistRequest* req,
                                                          v1::GetAntagonistReply* reply) {
  if (auto* r = Prologue(ctx, "", reply)) return r;
  return rpc::FinishUnary(ctx, "GetAntagonist", nullptr, [this, req, reply] {
    auto snap = antagonists_->Get(req->antagonist_id());  // non-blocking: answer inline
    if (!snap.ok()) return rpc::ToGrpc(snap.status(), StatusCode::kNotFound);
    reply->set_running(snap->running);
    reply->set_unit(snap->unit);
    reply->set_last_achieved(snap->last_achieved);
    reply->set_target(snap->target);
    reply->set_samples(snap->samples);
    reply->set_error(snap->error);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::StopAntagonist(grpc::CallbackServerContext* ctx,
                                                           const v1::StopAntagonistRequest* req,
                                                           v1::StopAntagonistReply* reply) {
  if (auto* r = Prologue(ctx, req->idempotency_key(), reply)) return r;
  return rpc::FinishUnary(ctx, "StopAntagonist", &executor_, [this, req, reply] {
    auto f = antagonists_->Stop(req->antagonist_id());
    if (!f.ok()) return rpc::ToGrpc(f.status(), StatusCode::kNotFound);
    reply->set_unit(f->unit);
    reply->set_target_rate(f->target_rate);
    reply->set_achieved_rate(f->achieved_rate);
    reply->set_cov(f->cov);
    reply->set_exit_code(f->exit_code);
    reply->set_error(f->error);
    reply->set_cpu_s(f->cpu_s);
    reply->set_run_s(f->run_s);
    reply->set_effective_cpus(f->effective_cpus);
    reply->set_first_load_unix_ns(f->first_load_unix_ns);
    reply->set_first_done_unix_ns(f->first_done_unix_ns);
    reply->set_ended_early(f->ended_early);
    for (const auto& s : f->samples) {
      auto* p = reply->add_samples();
      p->set_t_s(s.t_s);
      p->set_achieved(s.achieved);
      p->set_target(s.target);
      p->set_steps(s.steps);
    }
    cache_.Store(req->idempotency_key(), *reply);
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::RunVictimBody(const v1::RunVictimRequest& req,
                                             v1::RunVictimReply* reply) {
  VictimRequest request;
  request.spec = FromProto(req.victim());
  if (req.has_placement()) request.spec.placement = FromProto(req.placement());
  request.experiment_id = req.experiment_id();
  request.trial_id = req.trial_id();
  request.start_at_unix_ns = req.start_at_unix_ns();
  auto outcome = victims_.Run(std::move(request));
  if (!outcome.ok()) {  // it never started: not retried from the cache
    reply->set_ok(false);
    reply->set_exit_code(127);
    reply->set_error(outcome.error());
    return grpc::Status::OK;
  }
  VictimOutcome& o = *outcome;
  reply->set_ok(o.progress.ok);
  reply->set_error(o.progress.error);
  reply->set_exit_code(o.exit_code);
  reply->set_wall_s(o.wall_s);
  reply->set_metric(o.progress.value_s);
  reply->set_stderr_tail(o.stderr_tail);
  reply->set_started_unix_ns(o.started_unix_ns);
  reply->set_cpu_s(o.cpu_s);
  reply->set_effective_cpus(o.effective_cpus);
  for (const auto& [k, v] : o.progress.phase_medians) (*reply->mutable_phase_medians())[k] = v;
  for (const auto& name : o.progress.phase_order) reply->add_phase_order(name);
  for (const auto& s : o.progress.steps) *reply->add_steps() = rpc::ToProto(s);
  reply->set_trace_zlib(std::move(o.trace_zlib));
  reply->set_trace_raw_bytes(o.trace_raw_bytes);
  reply->set_trace_error(o.trace_error);
  reply->set_cache_measured(o.cache_measured);
  reply->set_cache_total_bytes(o.cache.total_bytes);
  reply->set_cache_resident_bytes(o.cache.resident_bytes);
  if (o.telemetry_measured) *reply->mutable_telemetry() = rpc::ToProto(o.telemetry);
  cache_.Store(req.idempotency_key(), *reply);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* AgentServiceImpl::RunVictim(grpc::CallbackServerContext* ctx,
                                                      const v1::RunVictimRequest* req,
                                                      v1::RunVictimReply* reply) {
  if (auto* r = Prologue(ctx, req->idempotency_key(), reply)) return r;
  auto* r = ctx->DefaultReactor();
  if (!policy_.allow_victim) {
    r->Finish(rpc::ToGrpc(PermissionDenied(
        "this agent's policy does not allow victim commands (allow_victim: false)")));
    return r;
  }
  bool launched = victim_threads_.Launch([this, r, req, reply] {
    r->Finish(rpc::Guarded("RunVictim", [&] { return RunVictimBody(*req, reply); }));
  });
  if (!launched) {
    r->Finish(rpc::ToGrpc(ResourceExhausted("this agent is already running its limit of victims")));
  }
  return r;
}

grpc::ServerUnaryReactor* AgentServiceImpl::StopAll(grpc::CallbackServerContext* ctx,
                                                    const v1::StopAllRequest* req,
                                                    v1::StopAllReply* reply) {
  if (auto* r = Prologue(ctx, "", reply)) return r;
  return rpc::FinishUnary(ctx, "StopAll", &executor_, [this, req, reply] {
    const int victims = victims_.StopRunning();
    reply->set_stopped(
        antagonists_->StopAll(req->reason().empty() ? "controller asked" : req->reason()) +
        victims);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::EndExperiment(grpc::CallbackServerContext* ctx,
                                                          const v1::EndExperimentRequest* req,
                                                          v1::EndExperimentReply* reply) {
  if (auto* r = Prologue(ctx, "", reply)) return r;
  return rpc::FinishUnary(ctx, "EndExperiment", &executor_, [this, req, reply] {
    const int killed = policy_.uid_pool ? policy_.uid_pool->End(req->experiment_id()) : -1;
    reply->set_released(killed >= 0);
    reply->set_killed(std::max(killed, 0));
    return grpc::Status::OK;
  });
}

namespace {
// One subscriber's stream of a trial's telemetry.
class TelemetryReactor : public rpc::QueuedWriteReactor<v1::TelemetryEvent> {
 public:
  TelemetryReactor(TelemetryHub* hub, const std::string& trial_id) : hub_(hub) {
    handle_ = hub_->Subscribe(trial_id, [this](const v1::TelemetryEvent& ev) { Push(ev); });
  }

 protected:
  void OnUnsubscribe() override { hub_->Unsubscribe(handle_); }

 private:
  TelemetryHub* hub_;
  int handle_ = 0;
};
}  // namespace

grpc::ServerWriteReactor<v1::TelemetryEvent>* AgentServiceImpl::StreamTelemetry(
    grpc::CallbackServerContext* ctx, const v1::StreamTelemetryRequest* req) {
  grpc::Status auth = rpc::CheckCaller(ctx);
  if (!auth.ok()) return rpc::RefuseStream<v1::TelemetryEvent>(auth);
  if (req->trial_id().empty()) {
    return rpc::RefuseStream<v1::TelemetryEvent>(rpc::ToGrpc(InvalidArgument("trial_id is empty")));
  }
  return new TelemetryReactor(telemetry_, req->trial_id());
}

}  // namespace codl::agent
