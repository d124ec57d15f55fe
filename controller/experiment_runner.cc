#include "controller/experiment_runner.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "controller/block_stopper.h"
#include "controller/distributed_victim.h"
#include "controller/provenance.h"
#include "controller/rendezvous.h"
#include "controller/run_events.h"
#include "controller/runner_wire.h"
#include "controller/settle.h"
#include "controller/tolerance_search.h"
#include "controller/trial_policies.h"
#include "injectors/core/registry.h"
#include "lib/analysis/adaptive.h"
#include "lib/common/tunables.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/rpc_util.h"

namespace codl::controller {

using namespace runner;

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

std::string ExperimentRunner::VictimPlacementMessage(const Placement& p) {
  if (p.victim_nodes.size() <= 1) return "victim on " + p.victim_node;
  return "victim distributed on " + JoinNodes(p.victim_nodes) + " (ranks 0-" +
         std::to_string(p.victim_nodes.size() - 1) + " in that order; MASTER_ADDR " +
         p.master_addr + ")";
}

ExperimentRunner::ExperimentRunner(AgentRegistry* agents, store::Store* store, const Clock* clock,
                                   RunnerOptions options)
    : agents_(agents), store_(store), clock_(clock), options_(options) {}

Status ExperimentRunner::PlaceVictim(const experiment::VictimSpec& v,
                                     const experiment::NodeSelector& sel,
                                     const std::vector<std::string>& selected, Placement* p) const {
  p->victim_nodes = {selected.front()};
  if (v.distributed) {
    // One rank per selected node, in the registry's (sorted agent id) order, as collectives.
    if (selected.size() < 2) {
      return Err("victim.distributed needs at least 2 nodes (one rank per node); victim.nodes '" +
                 DescribeSelector(sel) + "' matched only " + selected.front());
    }
    p->victim_nodes = selected;
    std::string registered;
    for (const auto& a : agents_->List()) {
      if (a.agent_id() == selected.front()) registered = a.address();
    }
    auto addr = MasterAddress(selected.front(), registered);
    if (!addr.ok()) return addr.status();
    p->master_addr = *addr;
  }
  p->victim_node = p->victim_nodes.front();
  return Status::Ok();
}

Result<VictimRun> ExperimentRunner::RunVictimOnce(const experiment::ExperimentSpec& spec,
                                                  const Placement& p,
                                                  const v1::RunVictimRequest& base) const {
  std::vector<std::shared_ptr<AgentClient>> clients;
  for (const auto& n : p.victim_nodes) clients.push_back(agents_->Client(n));
  auto ranks = VictimRanks(base, p.victim_nodes, clients, spec.victim.distributed, p.master_addr,
                           spec.victim.master_port);
  if (spec.victim.distributed) {
    // One common start, on each agent's clock, start_delay_s ahead for the fan-out.
    const int64_t start_ctrl_ns = clock_->UnixNanos() + Nanos(options_.start_delay_s);
    for (auto& r : ranks) {
      r.request.set_start_at_unix_ns(start_ctrl_ns + Nanos(agents_->ClockOffset(r.node)));
    }
  }
  return RunVictimRanks(std::move(ranks), spec.victim.timeout_s + tunables::kVictimDeadlineMarginS);
}

Status ExperimentRunner::Place(const experiment::ExperimentSpec& spec, Placement* p,
                               AgentRegistry::SelectScope scope) const {
  // The victim runs on the first node its selector (or the experiment's) picks.
  const auto& vsel = spec.victim.nodes.kind == experiment::NodeSelector::Kind::kAll
                         ? spec.nodes
                         : spec.victim.nodes;
  auto victim_nodes = agents_->Select(vsel, scope);
  if (!victim_nodes.ok()) return victim_nodes.status().WithContext("victim");
  if (Status s = PlaceVictim(spec.victim, vsel, *victim_nodes, p); !s.ok()) return s;
  for (const auto& a : spec.antagonists) {
    // Default placement: the victim's node (colocated interference).
    std::vector<std::string> nodes = {p->victim_node};
    if (a.nodes.specified) {
      auto sel = agents_->Select(a.nodes, scope);
      if (!sel.ok()) return sel.status().WithContext("antagonist '" + a.name + "'");
      nodes = *sel;
    }
    p->antagonist_nodes.push_back(nodes);
  }
  return Status::Ok();
}

Result<std::set<std::string>> ExperimentRunner::Nodes(const experiment::ExperimentSpec& spec,
                                                      AgentRegistry::SelectScope scope) const {
  Placement p;
  if (Status s = Place(spec, &p, scope); !s.ok()) return s;
  std::set<std::string> nodes(p.victim_nodes.begin(), p.victim_nodes.end());
  for (const auto& n : p.antagonist_nodes) nodes.insert(n.begin(), n.end());
  return nodes;
}

Result<CalibrationRecord> ExperimentRunner::Calibrate(
    const std::string& agent_id, const std::string& injector,
    const std::map<std::string, std::string>& options, double duration_s) {
  auto client = agents_->Client(agent_id);
  if (!client) return Err("unknown agent '" + agent_id + "'");
  v1::CalibrateRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  req.set_injector(injector);
  for (const auto& [k, v] : options) (*req.mutable_options())[k] = v;
  req.set_duration_s(duration_s);
  auto reply = client->Calibrate(req);
  if (!reply.ok()) return reply.status();
  CalibrationRecord c;
  c.node = agent_id;
  c.node_fingerprint = NodeFingerprint(agents_->Snapshot(agent_id));
  c.injector = injector;
  // Without the rendezvous key, which is new for every run (a collective's calibration).
  auto keyed = options;
  keyed.erase("rendezvous_key");
  c.options_key = OptionsKey(keyed);
  c.peak_rate = reply->peak_rate();
  c.unit = reply->unit();
  c.duration_s = duration_s;
  c.measured_unix_ms = NowMs(clock_);
  if (Status s = store_->PutCalibration(c); !s.ok()) return s;
  return c;
}

std::string ExperimentRunner::StaleReason(const experiment::ExperimentSpec& spec,
                                          const CalibrationRecord& cached) const {
  const double age_s = (NowMs(clock_) - cached.measured_unix_ms) / 1e3;
  if (age_s > spec.calibration_max_age_s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the cached one is %.0f s old (calibration.max_age %.0f s)",
                  age_s, spec.calibration_max_age_s);
    return buf;
  }
  if (cached.node_fingerprint != NodeFingerprint(agents_->Snapshot(cached.node))) {
    return "the node changed since the cached one (kernel, CPU, governor, memory, GPU or CoDL "
           "version)";
  }
  return "";
}

Status ExperimentRunner::CalibrateAll(const experiment::ExperimentSpec& spec, Placement* p,
                                      const std::atomic<bool>& cancel, RunListener* listener,
                                      Provenance* prov) {
  for (size_t i = 0; i < spec.antagonists.size(); ++i) {
    const auto& a = spec.antagonists[i];
    if (a.workload) continue;               // a real command has no peak: it runs as it runs
    bool needs_peak = a.tolerance.enabled;  // the search runs levels
    for (const auto& in : a.intensities) needs_peak |= !in.absolute;
    if (!needs_peak) continue;
    const injectors::Descriptor* d = injectors::FindDescriptor(a.injector);
    if (d != nullptr && d->capabilities.collective && p->antagonist_nodes[i].size() > 1) {
      if (cancel) return Cancelled("cancelled");
      if (Status s = CalibrateCollective(spec, i, p, listener, prov); !s.ok()) return s;
      continue;
    }
    for (const auto& node : p->antagonist_nodes[i]) {
      auto cached = store_->GetCalibration(node, a.injector, OptionsKey(a.options));
      std::string why = "none cached";
      if (cached.ok() && cached->has_value()) {
        why = StaleReason(spec, **cached);
        if (why.empty()) {
          p->peaks[{static_cast<int>(i), node}] = **cached;
          prov->AddCalibration(a.name, **cached, "cached");
          listener->OnEvent(events::Note(
              v1::Note::INFO, "calibration of " + a.name + " on " + node + " (cached): peak " +
                                  std::to_string((*cached)->peak_rate) + " " + (*cached)->unit));
          continue;
        }
      }
      if (cancel) return Cancelled("cancelled");
      listener->OnEvent(events::Calibrating(a.name, a.injector, node, spec.calibration_s, why));
      auto c = Calibrate(node, a.injector, a.options, spec.calibration_s);
      if (!c.ok()) return c.status().WithContext("antagonist '" + a.name + "'");
      p->peaks[{static_cast<int>(i), node}] = *c;
      prov->AddCalibration(a.name, *c, "measured: " + why);
    }
  }
  return Status::Ok();
}

// A collective antagonist on several nodes is calibrated as it runs: all its ranks at once,
// through a rendezvous of their own, so each node's peak is the bus bandwidth of the
// communicator the trials use. (Calibrated rank by rank, each ran alone as a 1-rank
// communicator: for NCCL a device-local copy, whose "peak" was the HBM's; every level trial
// then missed its target. Found on gpusim.)
Status ExperimentRunner::CalibrateCollective(const experiment::ExperimentSpec& spec, size_t i,
                                             Placement* p, RunListener* listener,
                                             Provenance* prov) {
  const auto& a = spec.antagonists[i];
  const std::vector<std::string>& nodes = p->antagonist_nodes[i];
  const std::string scope = NewRendezvousScope("calibration-" + a.name);
  std::vector<std::map<std::string, std::string>> options;
  for (size_t k = 0; k < nodes.size(); ++k) {
    options.push_back(CollectiveOptions(a, nodes.size(), k, scope));
  }
  auto key = [&](size_t k) {
    auto o = options[k];
    o.erase("rendezvous_key");
    return OptionsKey(o);
  };
  std::string why;
  std::vector<CalibrationRecord> cached;
  for (size_t k = 0; k < nodes.size() && why.empty(); ++k) {
    auto c = store_->GetCalibration(nodes[k], a.injector, key(k));
    why = c.ok() && c->has_value() ? StaleReason(spec, **c) : "none cached";
    if (why.empty()) cached.push_back(**c);
  }
  if (why.empty()) {
    for (size_t k = 0; k < nodes.size(); ++k) {
      p->peaks[{static_cast<int>(i), nodes[k]}] = cached[k];
      prov->AddCalibration(a.name, cached[k], "cached");
    }
    return Status::Ok();
  }
  listener->OnEvent(
      events::Calibrating(a.name, a.injector, JoinNodes(nodes), spec.calibration_s, why));
  ScopedRendezvousGrant grant(&grants_, scope, std::set<std::string>(nodes.begin(), nodes.end()));
  std::vector<std::optional<Result<CalibrationRecord>>> ranks(nodes.size());
  {
    std::vector<std::thread> threads;
    for (size_t k = 0; k < nodes.size(); ++k) {
      threads.emplace_back(
          [&, k] { ranks[k] = Calibrate(nodes[k], a.injector, options[k], spec.calibration_s); });
    }
    for (auto& t : threads) t.join();
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (!ranks[k]->ok()) {
      return ranks[k]->status().WithContext("antagonist '" + a.name + "' (rank " +
                                            std::to_string(k) + " on " + nodes[k] + ")");
    }
    p->peaks[{static_cast<int>(i), nodes[k]}] = **ranks[k];
    prov->AddCalibration(a.name, **ranks[k], "measured: " + why);
  }
  return Status::Ok();
}

Status ExperimentRunner::Run(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
                             const std::vector<experiment::PlannedTrial>& plan,
                             const std::atomic<bool>& cancel, RunListener* listener,
                             const ResumeFrom& resume, const std::set<std::string>* reserved) {
  Provenance prov(store_, exp.id);
  if (resume.resumed) {
    prov.Resumed(exp.provenance_json, NowMs(clock_), ToString(resume.previous_state),
                 resume.previous_error, static_cast<int>(resume.kept.size()));
    listener->OnEvent(events::Note(
        v1::Note::INFO, "resumed (it was " + std::string(ToString(resume.previous_state)) +
                            "): " + std::to_string(resume.kept.size()) + " of " +
                            std::to_string(plan.size()) + " trials kept, " +
                            std::to_string(plan.size() - resume.kept.size()) + " to run"));
  } else {
    prov.Started(NowMs(clock_), spec.seed, spec.seed_explicit);
  }
  prov.Save();
  Status s = RunPlaced(exp, spec, plan, cancel, listener, &prov, resume, reserved);
  // A cancel ends adaptive blocks too: said where the other stop reasons are.
  if (spec.adaptive.enabled && !s.ok() && cancel) {
    RecordStop(exp.id, experiment::kCancelledReason, listener);
  }
  prov.Finished(NowMs(clock_));
  prov.Save();
  return s;
}

void ExperimentRunner::RecordNodes(const Placement& p, Provenance* prov) const {
  prov->SetVictimNodes(p.victim_nodes, p.master_addr);
  for (const auto& n : p.victim_nodes) prov->AddNode(n, agents_->Snapshot(n));
  for (const auto& nodes : p.antagonist_nodes) {
    for (const auto& n : nodes) prov->AddNode(n, agents_->Snapshot(n));
  }
}

void ExperimentRunner::SetPlaced(const std::string& experiment_id, std::set<std::string> nodes) {
  std::lock_guard<std::mutex> l(placed_mu_);
  if (nodes.empty()) {
    placed_.erase(experiment_id);
  } else {
    placed_[experiment_id] = std::move(nodes);
  }
}

void ExperimentRunner::StopPlaced(const std::string& experiment_id, const std::string& reason) {
  std::set<std::string> nodes;
  {
    std::lock_guard<std::mutex> l(placed_mu_);
    auto it = placed_.find(experiment_id);
    if (it != placed_.end()) nodes = it->second;
  }
  for (const auto& node : nodes) {
    auto client = agents_->Client(node);
    if (!client) continue;
    if (Status s = client->StopAll(reason); !s.ok())
      spdlog::warn("stopping agent {} for '{}': {}", node, reason, s.error());
  }
}

void ExperimentRunner::EndPlaced(const std::string& experiment_id) {
  std::set<std::string> nodes;
  {
    std::lock_guard<std::mutex> l(placed_mu_);
    auto it = placed_.find(experiment_id);
    if (it != placed_.end()) nodes = it->second;
  }
  // What an agent held for it (its victims' uid) is released; one that cannot be reached lets
  // it go on its own once idle (agent/victim_identities.h).
  for (const auto& node : nodes) {
    if (auto client = agents_->Client(node)) {
      if (Status s = client->EndExperiment(experiment_id); !s.ok())
        spdlog::warn("ending experiment {} on agent {}: {}", experiment_id, node, s.error());
    }
  }
  SetPlaced(experiment_id, {});
}

Status ExperimentRunner::RunWarmups(const ExperimentRecord& exp,
                                    const experiment::ExperimentSpec& spec, const Placement& p,
                                    const std::atomic<bool>& cancel, RunListener* listener,
                                    Provenance* prov, std::vector<double>* walls) {
  // Dataset generation, page-cache fill, JIT and allocator warm-up happen in these runs, not in
  // trial 1 (whose wall time they once multiplied by five).
  for (int run = 1; run <= spec.warmup_trials; ++run) {
    if (cancel) return Cancelled("cancelled");
    listener->OnEvent(events::WarmUpStarted(run, spec.warmup_trials, JoinNodes(p.victim_nodes)));
    v1::RunVictimRequest req;
    req.set_trial_id(exp.id + "-warmup" + std::to_string(run));
    req.set_experiment_id(exp.id);
    *req.mutable_victim() = ToProto(spec.victim);
    req.mutable_victim()->set_trace_steps(0);  // traces are of trials (victim.trace)
    // The first run usually generates the victim's dataset: rank 0's progress is shown live.
    std::unique_ptr<AgentClient::TelemetryStream> live;
    if (auto client = agents_->Client(p.victim_node)) {
      live = client->OpenTelemetry(req.trial_id(), [listener](const v1::TelemetryEvent& ev) {
        if (ev.has_victim_dataset())
          listener->OnVictimDataset(ev.victim_dataset().generated(), ev.victim_dataset().total());
      });
    }
    auto run_reply = RunVictimOnce(spec, p, req);
    live.reset();
    const v1::RunVictimReply* reply = run_reply.ok() ? &run_reply->reply : nullptr;
    const bool ok = reply && reply->ok();
    const std::string error =
        !reply ? run_reply.error() : FailureWithStderr(reply->error(), reply->stderr_tail());
    prov->AddWarmup(run, reply ? reply->wall_s() : 0, ok, error);
    prov->Save();
    if (!ok) {
      // An agent that could not be reached keeps its code; a victim that failed is unclassified.
      const StatusCode code = reply ? StatusCode::kUnknown : run_reply.code();
      return Error{"warm-up run " + std::to_string(run) + " failed: " + error, code};
    }
    listener->OnEvent(events::WarmUpFinished(run, spec.warmup_trials, reply->wall_s()));
    walls->push_back(reply->wall_s());
  }
  return Status::Ok();
}

// The warm-ups include dataset generation and first-run effects: baselines, once there are
// any, are what a solo run must last as long as.
double ExperimentRunner::SoloClock::Seconds() const {
  const std::vector<double>& walls = baselines.empty() ? warmups : baselines;
  if (walls.empty()) return 0;
  std::vector<double> sorted = walls;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

void ExperimentRunner::ConnectPlaced(const ExperimentRecord& exp, const Placement& p,
                                     const std::atomic<bool>& cancel) {
  // Connect to every placed agent before the first trial (channels connect lazily, and an idle
  // one disconnects): otherwise the first synchronized start pays a TCP + TLS handshake per
  // agent inside its start window (docs/performance.md has the scale bench's figures).
  // All connections are started first, then awaited, 5 s at most in all; one that is not up
  // by then is left to the start call itself (and its deadline).
  std::vector<std::shared_ptr<AgentClient>> placed;
  for (const auto& nodes : p.antagonist_nodes) {
    for (const auto& n : nodes) {
      if (auto c = agents_->Client(n)) placed.push_back(std::move(c));
    }
  }
  const double t0 = clock_->MonotonicSeconds(), until = t0 + 5;
  for (auto& c : placed) c->Connect(0);
  size_t up = 0;
  for (auto& c : placed) {
    if (cancel) break;  // the trial loop returns "cancelled" next
    up += c->Connect(std::max(0.0, until - clock_->MonotonicSeconds()));
  }
  spdlog::info("[{}] connected to {}/{} antagonist agents in {:.3f} s", exp.id, up, placed.size(),
               clock_->MonotonicSeconds() - t0);
}

// One trial, in the order it happens: make the instances, start them all at a common time,
// await their settling, run the victim, stop and collect every instance, classify. The first
// error is kept and skips the victim, but the stops always run: no path leaves an antagonist
// running. Waits go through the Clock with the cancel flag. The agent calls do not: each has a
// deadline, the stops need to know what started, and a victim, once running, runs to its end
// (the agent API has no call to stop it early).

}  // namespace codl::controller
