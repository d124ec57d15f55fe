#include "controller/experiment_runner.h"

#include <cmath>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "injectors/registry.h"
#include "lib/rpc/rpc_util.h"

namespace codl::controller {

namespace {
int64_t NowMs(const Clock* c) { return c->UnixNanos() / 1'000'000; }

v1::VictimSpec ToProto(const experiment::VictimSpec& v) {
  v1::VictimSpec p;
  for (const auto& a : v.command) p.add_command(a);
  for (const auto& [k, val] : v.env) (*p.mutable_env())[k] = val;
  p.set_workdir(v.workdir);
  p.set_warmup_steps(v.warmup_steps);
  p.set_timeout_s(v.timeout_s);
  auto* pr = p.mutable_progress();
  switch (v.progress.format) {
    case experiment::ProgressSpec::Format::kRegex: pr->set_format(v1::VictimProgress::REGEX); break;
    case experiment::ProgressSpec::Format::kWall: pr->set_format(v1::VictimProgress::WALL); break;
    default: pr->set_format(v1::VictimProgress::JSONL);
  }
  pr->set_field(v.progress.field);
  pr->set_pattern(v.progress.pattern);
  return p;
}

// One running antagonist instance of a trial.
struct Running {
  int antagonist = 0;
  std::string node;
  std::map<std::string, std::string> options;  // as sent: ranks/rendezvous filled in
  std::string id;
  std::shared_ptr<AgentClient> client;
  AntagonistResult result;
  int64_t started_agent_ns = 0;
  bool started = false;
};
}  // namespace

std::map<std::string, std::string> CollectiveOptions(const experiment::AntagonistSpec& a,
                                                     size_t nodes, size_t node_index,
                                                     const std::string& trial_scope) {
  std::map<std::string, std::string> o = a.options;
  const injectors::Descriptor* d = injectors::FindDescriptor(a.injector);
  if (d != nullptr && d->capabilities.collective) {
    // One codl-inject per node, ranks in node order; rank 0's rendezvous value (e.g. an
    // ncclUniqueId) is relayed by the controller (Publish/FetchRendezvous) under a key that
    // names the antagonist. Option names: the collective contract (injectors/injector.h).
    if (!o.count("ranks")) o["ranks"] = std::to_string(nodes);
    if (!o.count("rank")) o["rank"] = std::to_string(node_index);
    if (!o.count("rendezvous_key") && o["ranks"] != "1") o["rendezvous_key"] = a.name;
  }
  // Scoped per trial: a key reused by the next trial must not find this trial's stale id.
  if (o.count("rendezvous_key") && !o["rendezvous_key"].empty()) {
    o["rendezvous_key"] = trial_scope + "/" + o["rendezvous_key"];
  }
  return o;
}

std::string OptionsKey(const std::map<std::string, std::string>& options) {
  std::string key;
  for (const auto& [k, v] : options) key += (key.empty() ? "" : ",") + k + "=" + v;
  return key;
}

ExperimentRunner::ExperimentRunner(AgentRegistry* agents, store::Store* store, const Clock* clock,
                                   RunnerOptions options)
    : agents_(agents), store_(store), clock_(clock), options_(options) {}

Status ExperimentRunner::Place(const experiment::ExperimentSpec& spec, Placement* p) {
  // The victim runs on the first node its selector (or the experiment's) picks.
  const auto& vsel = spec.victim.nodes.kind == experiment::NodeSelector::Kind::kAll
                         ? spec.nodes : spec.victim.nodes;
  auto victim_nodes = agents_->Select(vsel);
  if (!victim_nodes.ok()) return Err("victim: " + victim_nodes.error());
  p->victim_node = victim_nodes->front();
  for (const auto& a : spec.antagonists) {
    // Default placement: the victim's node (colocated interference).
    std::vector<std::string> nodes = {p->victim_node};
    if (a.nodes.specified) {
      auto sel = agents_->Select(a.nodes);
      if (!sel.ok()) return Err("antagonist '" + a.name + "': " + sel.error());
      nodes = *sel;
    }
    p->antagonist_nodes.push_back(nodes);
  }
  return Status::Ok();
}

Result<CalibrationRecord> ExperimentRunner::Calibrate(const std::string& agent_id,
                                                      const std::string& injector,
                                                      const std::map<std::string, std::string>& options,
                                                      double duration_s) {
  auto client = agents_->Client(agent_id);
  if (!client) return Err("unknown agent '" + agent_id + "'");
  v1::CalibrateRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  req.set_injector(injector);
  for (const auto& [k, v] : options) (*req.mutable_options())[k] = v;
  req.set_duration_s(duration_s);
  auto reply = client->Calibrate(req);
  if (!reply.ok()) return Err(reply.error());
  CalibrationRecord c;
  c.node = agent_id;
  c.injector = injector;
  c.options_key = OptionsKey(options);
  c.peak_rate = reply->peak_rate();
  c.unit = reply->unit();
  c.duration_s = duration_s;
  c.measured_unix_ms = NowMs(clock_);
  if (Status s = store_->PutCalibration(c); !s.ok()) return Err(s.error());
  return c;
}

Status ExperimentRunner::CalibrateAll(const experiment::ExperimentSpec& spec, Placement* p,
                                      RunListener* listener) {
  for (size_t i = 0; i < spec.antagonists.size(); ++i) {
    const auto& a = spec.antagonists[i];
    bool needs_peak = false;
    for (const auto& in : a.intensities) needs_peak |= !in.absolute;
    if (!needs_peak) continue;
    for (const auto& node : p->antagonist_nodes[i]) {
      auto cached = store_->GetCalibration(node, a.injector, OptionsKey(a.options));
      if (cached.ok() && cached->has_value()) {
        p->peaks[{static_cast<int>(i), node}] = **cached;
        listener->OnMessage("calibration of " + a.name + " on " + node + " (cached): peak " +
                            std::to_string((*cached)->peak_rate) + " " + (*cached)->unit);
        continue;
      }
      listener->OnMessage("calibrating " + a.name + " (" + a.injector + ") on " + node + " for " +
                          std::to_string(spec.calibration_s) + " s");
      auto c = Calibrate(node, a.injector, a.options, spec.calibration_s);
      if (!c.ok()) return Err("antagonist '" + a.name + "': " + c.error());
      p->peaks[{static_cast<int>(i), node}] = *c;
    }
  }
  return Status::Ok();
}

Status ExperimentRunner::Run(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
                             const std::vector<experiment::PlannedTrial>& plan,
                             const std::atomic<bool>& cancel, RunListener* listener) {
  Placement p;
  if (Status s = Place(spec, &p); !s.ok()) return s;
  // Connect to every placed agent before the first trial (channels connect lazily, and an idle
  // one disconnects): otherwise the first synchronized start pays a TCP + TLS handshake per
  // agent inside its start window (bench/run_scale_bench.sh, 256 of 1000 agents: the first
  // trial's last StartAntagonist arrived 175-480 ms after dispatch before, ~35 ms after).
  // All connections are started first, then awaited, 5 s at most in all; one that is not up
  // by then is left to the start call itself (and its deadline), as before.
  {
    std::vector<std::shared_ptr<AgentClient>> placed;
    for (const auto& nodes : p.antagonist_nodes) {
      for (const auto& n : nodes) {
        if (auto c = agents_->Client(n)) placed.push_back(std::move(c));
      }
    }
    const double t0 = clock_->MonotonicSeconds(), until = t0 + 5;
    for (auto& c : placed) c->Connect(0);
    size_t up = 0;
    for (auto& c : placed) up += c->Connect(std::max(0.0, until - clock_->MonotonicSeconds()));
    spdlog::info("[{}] connected to {}/{} antagonist agents in {:.3f} s", exp.id, up, placed.size(),
                 clock_->MonotonicSeconds() - t0);
  }
  listener->OnMessage("victim on " + p.victim_node);
  if (Status s = CalibrateAll(spec, &p, listener); !s.ok()) return s;
  int failed_in_a_row = 0;
  for (const auto& trial : plan) {
    if (cancel) return Err("cancelled");
    if (!agents_->Alive(p.victim_node)) {
      return Err("victim node " + p.victim_node + " stopped heartbeating");
    }
    listener->OnTrialStarted(trial);
    TrialRecord t = RunTrial(exp, spec, trial, p, cancel, listener);
    if (Status s = store_->SaveTrial(t); !s.ok()) return Err("saving trial: " + s.error());
    listener->OnTrialDone(t);
    if (t.state == TrialState::kCancelled) return Err("cancelled");
    // A victim that cannot run at all (bad command) fails every trial: stop early and say so.
    failed_in_a_row = t.state == TrialState::kFailed ? failed_in_a_row + 1 : 0;
    if (failed_in_a_row >= 3 && trial.index + 1 == failed_in_a_row) {
      return Err("the first 3 trials failed; last error: " + t.error);
    }
    if (spec.cooldown_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(spec.cooldown_s));
    }
  }
  return Status::Ok();
}

TrialRecord ExperimentRunner::RunTrial(const ExperimentRecord& exp,
                                       const experiment::ExperimentSpec& spec,
                                       const experiment::PlannedTrial& trial, const Placement& p,
                                       const std::atomic<bool>& cancel, RunListener* listener) {
  TrialRecord t;
  t.experiment_id = exp.id;
  t.index = trial.index;
  t.repetition = trial.repetition;
  t.baseline = trial.baseline;
  t.pairing = trial.pairing;
  t.victim_node = p.victim_node;
  t.started_unix_ms = NowMs(clock_);
  t.state = TrialState::kRunning;

  // 1. Antagonists, started together at a common time (each converted to its agent's clock).
  std::vector<Running> running;
  for (const auto& part : trial.parts) {
    const auto& a = spec.antagonists[part.antagonist];
    const auto& nodes = p.antagonist_nodes[part.antagonist];
    for (size_t ni = 0; ni < nodes.size(); ++ni) {
      const std::string& node = nodes[ni];
      Running r;
      r.antagonist = part.antagonist;
      r.node = node;
      r.options = CollectiveOptions(a, nodes.size(), ni, exp.id + "-t" + std::to_string(trial.index));
      r.id = exp.id + "-t" + std::to_string(trial.index) + "-" + a.name + "-" + node;
      r.client = agents_->Client(node);
      r.result.name = a.name;
      r.result.injector = a.injector;
      r.result.node = node;
      if (part.intensity.absolute) {
        r.result.target_rate = part.intensity.rate;
      } else {
        const auto& peak = p.peaks.at({part.antagonist, node});
        r.result.level = part.intensity.level;
        r.result.peak_rate = peak.peak_rate;
        r.result.unit = peak.unit;
        r.result.target_rate = part.intensity.level * peak.peak_rate;
      }
      running.push_back(std::move(r));
    }
  }
  const int64_t start_at_ctrl_ns =
      clock_->UnixNanos() + static_cast<int64_t>(options_.start_delay_s * 1e9);
  std::string error;
  {
    // The requests are built first, then issued back to back from this thread with the
    // callback API (no thread per antagonist): with hundreds of nodes the last agent has its
    // command a few ms after the first, well inside start_delay_s (bench/run_scale_bench.sh).
    std::vector<v1::StartAntagonistRequest> requests(running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      const Running& r = running[i];
      v1::StartAntagonistRequest& req = requests[i];
      req.set_idempotency_key(rpc::NewIdempotencyKey());
      req.set_antagonist_id(r.id);
      const auto& a = spec.antagonists[r.antagonist];
      auto* is = req.mutable_spec();
      is->set_injector(a.injector);
      for (const auto& [k, v] : r.options) (*is->mutable_options())[k] = v;
      is->set_rate(r.result.target_rate);
      is->set_max_duration_s(spec.victim.timeout_s + spec.settle_s + 120);
      req.set_lease_s(spec.lease_s);
      req.set_level(r.result.level);
      double offset = agents_->ClockOffset(r.node);
      req.set_start_at_unix_ns(start_at_ctrl_ns + static_cast<int64_t>(offset * 1e9));
    }
    std::mutex starts_mu;
    std::condition_variable starts_cv;
    size_t pending = running.size();
    std::vector<std::optional<Result<v1::StartAntagonistReply>>> starts(running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      auto done = [&, i](Result<v1::StartAntagonistReply> reply) {
        std::lock_guard<std::mutex> l(starts_mu);
        starts[i].emplace(std::move(reply));
        if (--pending == 0) starts_cv.notify_all();  // under the lock: the waiter owns these
      };
      if (running[i].client) {
        running[i].client->StartAntagonistAsync(requests[i], done);
      } else {
        done(Err("agent is gone"));
      }
    }
    {
      // Every call has a deadline, so every `done` runs.
      std::unique_lock<std::mutex> l(starts_mu);
      starts_cv.wait(l, [&] { return pending == 0; });
    }
    for (size_t i = 0; i < running.size(); ++i) {
      auto& reply = *starts[i];
      if (!reply.ok()) {
        if (error.empty()) error = "starting " + running[i].result.name + ": " + reply.error();
        continue;
      }
      running[i].started = true;
      running[i].started_agent_ns = reply->started_unix_ns();
      double offset = agents_->ClockOffset(running[i].node);
      running[i].result.start_skew_s =
          (reply->started_unix_ns() - static_cast<int64_t>(offset * 1e9) - start_at_ctrl_ns) / 1e9;
    }
  }

  // 2. Settle: every antagonist at >= settle_fraction of its target before the victim starts.
  if (error.empty() && !running.empty()) {
    const double t0 = clock_->MonotonicSeconds();
    const double limit = std::max(spec.settle_s, options_.min_settle_s);
    for (;;) {
      bool all = true;
      for (auto& r : running) {
        auto g = r.client->GetAntagonist(r.id);
        if (!g.ok()) { error = r.result.name + ": " + g.error(); break; }
        if (!g->error().empty()) { error = r.result.name + ": " + g->error(); break; }
        if (!g->running()) { error = r.result.name + ": antagonist exited early"; break; }
        if (!g->unit().empty()) r.result.unit = g->unit();
        r.result.reached_target =
            g->samples() > 0 && g->last_achieved() >= options_.settle_fraction * r.result.target_rate;
        all &= r.result.reached_target;
      }
      if (!error.empty() || all || cancel) break;
      if (clock_->MonotonicSeconds() - t0 > limit) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // 3. The victim.
  v1::RunVictimReply victim;
  bool victim_ran = false;
  if (error.empty() && !cancel) {
    auto client = agents_->Client(p.victim_node);
    v1::RunVictimRequest req;
    req.set_idempotency_key(rpc::NewIdempotencyKey());
    req.set_trial_id(exp.id + "-t" + std::to_string(trial.index));
    *req.mutable_victim() = ToProto(spec.victim);
    // Victim progress as it happens (for `codlctl watch`); the record comes with the reply.
    std::unique_ptr<AgentClient::TelemetryStream> live;
    if (client) {
      live = client->OpenTelemetry(req.trial_id(), [listener](const v1::TelemetryEvent& ev) {
        if (!ev.has_victim_step()) return;
        VictimStep s;
        s.step = ev.victim_step().step();
        s.step_time_s = ev.victim_step().step_time_s();
        s.t_s = ev.victim_step().t_s();
        s.warmup = ev.victim_step().warmup();
        listener->OnVictimStep(s);
      });
    }
    auto reply = client ? client->RunVictim(req, spec.victim.timeout_s + 30)
                        : Result<v1::RunVictimReply>(Err("victim agent is gone"));
    if (reply.ok()) {
      victim = *reply;
      victim_ran = true;
    } else {
      error = reply.error();
    }
  }

  // 4. Stop every antagonist we started, whatever happened above.
  {
    std::vector<std::future<Result<v1::StopAntagonistReply>>> stops;
    for (auto& r : running) {
      if (!r.started) {
        stops.push_back(std::async(std::launch::deferred, [] {
          return Result<v1::StopAntagonistReply>(v1::StopAntagonistReply());
        }));
        continue;
      }
      v1::StopAntagonistRequest req;
      req.set_idempotency_key(rpc::NewIdempotencyKey());
      req.set_antagonist_id(r.id);
      auto client = r.client;
      stops.push_back(std::async(std::launch::async, [client, req] { return client->StopAntagonist(req); }));
    }
    const double victim_offset = agents_->ClockOffset(p.victim_node);
    const int64_t victim_start_ctrl =
        victim_ran ? victim.started_unix_ns() - static_cast<int64_t>(victim_offset * 1e9) : start_at_ctrl_ns;
    const double victim_wall = victim_ran ? victim.wall_s() : 0;
    for (size_t i = 0; i < running.size(); ++i) {
      auto reply = stops[i].get();
      auto& r = running[i];
      if (!r.started) continue;
      if (!reply.ok()) {
        spdlog::error("stopping {}: {} (the agent's lease will stop it)", r.id, reply.error());
        continue;
      }
      if (!reply->unit().empty()) r.result.unit = reply->unit();
      const double offset = agents_->ClockOffset(r.node);
      double sum = 0, sq = 0;
      int n = 0;
      for (const auto& s : reply->samples()) {
        RateSample rs;
        const int64_t abs_ctrl = r.started_agent_ns + static_cast<int64_t>(s.t_s() * 1e9) -
                                 static_cast<int64_t>(offset * 1e9);
        rs.t_s = (abs_ctrl - victim_start_ctrl) / 1e9;
        rs.achieved = s.achieved();
        rs.target = s.target();
        r.result.samples.push_back(rs);
        // Each sample covers the interval that ends at its time stamp.
        if (victim_ran && rs.t_s > 0 && rs.t_s <= victim_wall + 0.25) {
          sum += rs.achieved;
          sq += rs.achieved * rs.achieved;
          ++n;
        }
      }
      if (n > 0) {
        double mean = sum / n;
        r.result.achieved_rate = mean;
        r.result.achieved_cov = mean > 0 ? std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean : 0;
      } else {
        r.result.achieved_rate = reply->achieved_rate();
        r.result.achieved_cov = reply->cov();
      }
      if (!reply->error().empty() && error.empty()) error = r.result.name + ": " + reply->error();
      // Whether the antagonist held its target is judged on the victim's window, not on the
      // settle phase: that is the interference the victim actually saw.
      r.result.reached_target =
          !(r.result.target_rate > 0) ||
          r.result.achieved_rate >= options_.settle_fraction * r.result.target_rate;
    }
  }
  for (auto& r : running) t.antagonists.push_back(std::move(r.result));

  // 5. The record.
  t.finished_unix_ms = NowMs(clock_);
  if (victim_ran) {
    t.exit_code = victim.exit_code();
    t.wall_s = victim.wall_s();
    t.metric = victim.metric();
    t.stderr_tail = victim.stderr_tail();
    for (const auto& [k, v] : victim.phase_medians()) t.phase_medians[k] = v;
    for (const auto& s : victim.steps()) {
      VictimStep vs;
      vs.step = s.step();
      vs.step_time_s = s.step_time_s();
      vs.t_s = s.t_s();
      vs.warmup = s.warmup();
      for (const auto& [k, v] : s.phases()) vs.phases[k] = v;
      t.steps.push_back(std::move(vs));
    }
  }
  if (cancel) {
    t.state = TrialState::kCancelled;
    t.error = "cancelled";
  } else if (!error.empty()) {
    t.state = TrialState::kFailed;
    t.error = error;
  } else if (!victim.ok()) {
    t.state = TrialState::kFailed;
    t.error = victim.error();
  } else {
    t.state = TrialState::kDone;
    for (const auto& a : t.antagonists) {
      if (!a.reached_target) {
        t.state = TrialState::kFlagged;
        char buf[256];
        snprintf(buf, sizeof buf, "%s reached %.3g of target %.3g %s", a.name.c_str(),
                 a.achieved_rate, a.target_rate, a.unit.c_str());
        t.error += (t.error.empty() ? "" : "; ") + std::string(buf);
      }
    }
  }
  return t;
}

}  // namespace codl::controller
