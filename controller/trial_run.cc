// One trial, step by step (ExperimentRunner::TrialRun): start the antagonists at a common
// time, wait until they hold their targets for the settle window, run the victim, stop and
// collect, classify. Split from experiment_runner.cc, which runs the experiment around it.
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "controller/experiment_runner.h"
#include "controller/rendezvous.h"
#include "controller/run_events.h"
#include "controller/runner_wire.h"
#include "controller/settle.h"
#include "controller/trial_detail.h"
#include "controller/workload_trial.h"
#include "lib/analysis/trial_metric.h"
#include "lib/common/fan_out.h"
#include "lib/common/statistics.h"
#include "lib/common/tunables.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/rpc_util.h"

namespace codl::controller {

using namespace runner;
using namespace trial_detail;

class ExperimentRunner::TrialRun {
 public:
  TrialRun(const ExperimentRunner& runner, const ExperimentRecord& exp,
           const experiment::ExperimentSpec& spec, const experiment::PlannedTrial& trial,
           const Placement& p, const std::atomic<bool>& cancel, RunListener* listener, int attempt)
      : runner_(runner),
        exp_(exp),
        spec_(spec),
        trial_(trial),
        p_(p),
        cancel_(cancel),
        listener_(listener),
        attempt_(attempt),
        // A new attempt has ids of its own: never one an agent still lists from an earlier one.
        trial_id_(exp.id + "-t" + std::to_string(trial.index) +
                  (attempt > 1 ? "-a" + std::to_string(attempt) : "")),
        rendezvous_scope_(NewRendezvousScope(trial_id_)),
        grant_(&runner.grants_, rendezvous_scope_, PlacedAgents(p)) {}

  static std::set<std::string> PlacedAgents(const Placement& p) {
    std::set<std::string> ids(p.victim_nodes.begin(), p.victim_nodes.end());
    for (const auto& nodes : p.antagonist_nodes) ids.insert(nodes.begin(), nodes.end());
    return ids;
  }

  TrialRecord Run() {
    TrialRecord t = NewRecord();
    MakeInstances();
    StartAll();
    if (error_.empty()) AwaitSettled();
    if (error_.empty() && !cancel_) {
      if (trial_.solo) RunSolo();
      else RunVictim();
    }
    StopAndCollect();
    return Finish(std::move(t));
  }
  StatusCode error_code() const { return error_code_; }

 private:
  const Clock* clock() const { return runner_.clock_; }
  AgentRegistry* agents() const { return runner_.agents_; }
  const RunnerOptions& options() const { return runner_.options_; }
  // An antagonist's failure: it did not start, died before the victim ran, or said an error.
  void Fail(const std::string& error) { Fail(Err(error), "", FailureKind::kAntagonistStart); }
  // Keeps its code (kUnavailable up to codlctl's exit) and kind (unreachable: kAgentLost).
  void Fail(const Status& failed, const std::string& context, FailureKind kind) {
    if (!error_.empty()) return;
    error_ = JoinContext(context, failed.message());
    error_code_ = failed.code();
    error_kind_ = failed.code() == StatusCode::kUnavailable ? FailureKind::kAgentLost : kind;
  }

  TrialRecord NewRecord() const {
    TrialRecord t;
    t.experiment_id = exp_.id;
    t.index = trial_.index;
    t.attempt = attempt_;
    t.repetition = trial_.repetition;
    t.baseline = trial_.baseline;
    t.solo = trial_.solo;
    t.pairing = trial_.pairing;
    t.victim_node = p_.victim_node;
    t.started_unix_ms = NowMs(clock());
    t.state = TrialState::kRunning;
    return t;
  }

  // 1. One instance per antagonist of the pairing and node it is placed on.
  void MakeInstances() {
    for (const auto& part : trial_.parts) {
      const auto& nodes = p_.antagonist_nodes[part.antagonist];
      for (size_t ni = 0; ni < nodes.size(); ++ni) instances_.push_back(MakeInstance(part, ni));
    }
  }

  Instance MakeInstance(const experiment::PlannedPart& part, size_t node_index) const {
    const auto& a = spec_.antagonists[part.antagonist];
    const auto& nodes = p_.antagonist_nodes[part.antagonist];
    Instance r;
    r.antagonist = part.antagonist;
    r.node = nodes[node_index];
    r.options = CollectiveOptions(a, nodes.size(), node_index, rendezvous_scope_);
    r.id = trial_id_ + "-" + a.name + "-" + r.node;
    r.client = agents()->Client(r.node);
    r.result.name = a.name;
    r.result.injector = a.injector;
    r.result.node = r.node;
    if (a.workload) {
      // A real command: no level, no target (settle waits for its warmup steps instead).
      r.max = true;
      r.result.unit = workload::Unit(*a.workload);
    } else if (part.intensity.absolute) {
      r.result.target_rate = part.intensity.rate;
    } else {
      const auto& peak = p_.peaks.at({part.antagonist, r.node});
      r.result.level = part.intensity.level;
      r.result.peak_rate = peak.peak_rate;
      r.result.unit = peak.unit;
      // max has no target: target_rate 0 makes the settle and held-target checks pass once it
      // runs, and its achieved rate is the outcome.
      r.max = part.intensity.max;
      r.result.target_rate = r.max ? 0 : part.intensity.level * peak.peak_rate;
    }
    return r;
  }

  // 2. Every instance started at one common time, converted to each agent's clock: after the
  // slowest setup the agents estimate (an io_uring file set being written), so that no
  // antagonist starts late, plus start_delay_s for the fan-out. The settle streams are opened
  // first, so that no sample is missed.
  void StartAll() {
    OpenSettleStreams();
    setup_estimate_s_ = SlowestSetupEstimate();
    start_at_ctrl_ns_ = clock()->UnixNanos() + Nanos(options().start_delay_s + setup_estimate_s_);
    if (setup_estimate_s_ > 0) {
      spdlog::info("trial {}: common start in {:.3f} s (slowest setup estimate {:.3f} s)",
                   trial_.index, options().start_delay_s + setup_estimate_s_, setup_estimate_s_);
    }
    // The requests are built first, then issued back to back from this thread with the
    // callback API (no thread per antagonist): with hundreds of nodes the last agent has its
    // command a few ms after the first, well inside start_delay_s (bench/run_scale_bench.sh).
    std::vector<v1::StartAntagonistRequest> requests;
    for (const Instance& r : instances_) requests.push_back(StartRequest(r));
    auto replies = IssueStarts(requests);
    for (size_t i = 0; i < instances_.size(); ++i) RecordStart(replies[i], &instances_[i]);
  }

  // The largest setup estimate over every instance's agent, asked all at once (callback API).
  double SlowestSetupEstimate() {
    const std::vector<double> setups =
        FanOut<double>(instances_.size(), [&](size_t i, std::function<void(double)> done) {
          const Instance& r = instances_[i];
          if (r.client) r.client->EstimateSetupAsync(Spec(r), std::move(done));
          else done(0);
        });
    double slowest = 0;
    for (double setup_s : setups) {
      if (std::isfinite(setup_s)) slowest = std::max(slowest, setup_s);
    }
    return slowest;
  }

  v1::InjectorSpec Spec(const Instance& r) const {
    const auto& a = spec_.antagonists[r.antagonist];
    v1::InjectorSpec is;
    is.set_injector(a.injector);
    for (const auto& [k, v] : r.options) (*is.mutable_options())[k] = v;
    if (r.max) is.set_max(true);
    else is.set_rate(r.result.target_rate);
    double max_duration_s = spec_.victim.timeout_s + spec_.settle_s + 120 + setup_estimate_s_;
    if (a.workload) {
      *is.mutable_workload() = workload::ToProto(*a.workload);
      max_duration_s += a.workload->settle_timeout_s + SoloSeconds();
    }
    is.set_max_duration_s(max_duration_s);
    return is;
  }

  v1::StartAntagonistRequest StartRequest(const Instance& r) const {
    v1::StartAntagonistRequest req;
    req.set_idempotency_key(rpc::NewIdempotencyKey());
    req.set_antagonist_id(r.id);
    const auto& a = spec_.antagonists[r.antagonist];
    *req.mutable_spec() = Spec(r);
    req.set_lease_s(spec_.lease_s);
    // The agent's clock for giving up starts at the request; the load only at the common start.
    req.set_start_timeout_s(tunables::kAntagonistStartTimeoutS + options().start_delay_s +
                            setup_estimate_s_);
    req.set_level(r.result.level);
    req.set_experiment_id(exp_.id);
    req.set_start_at_unix_ns(start_at_ctrl_ns_ + Nanos(agents()->ClockOffset(r.node)));
    if (!a.placement.empty()) SetPlacement(a.placement, req.mutable_placement());
    return req;
  }

  // Issues every start and waits for every reply. Not cancellable on purpose: every call has a
  // deadline (so every `done` runs), and the stops need to know which instances started.
  std::vector<Result<v1::StartAntagonistReply>> IssueStarts(
      const std::vector<v1::StartAntagonistRequest>& requests) {
    using Reply = Result<v1::StartAntagonistReply>;
    return FanOut<Reply>(requests.size(), [&](size_t i, std::function<void(Reply)> done) {
      if (instances_[i].client) {
        instances_[i].client->StartAntagonistAsync(requests[i], std::move(done));
      } else {
        done(Err("agent is gone"));
      }
    });
  }

  void RecordStart(const Result<v1::StartAntagonistReply>& reply, Instance* r) {
    if (!reply.ok()) {
      Fail(reply.status(), "starting " + r->result.name, FailureKind::kAntagonistStart);
      return;
    }
    r->started = true;
    r->started_agent_ns = reply->started_unix_ns();
    const int64_t started_ctrl_ns =
        reply->started_unix_ns() - Nanos(agents()->ClockOffset(r->node));
    r->result.start_skew_s = (started_ctrl_ns - start_at_ctrl_ns_) / 1e9;
    AccountForStart(*reply, r);
  }

  // What the agent said about the start beyond its time; a start made late by its preparation
  // (setup over the estimate) is said in the trial's messages and the log.
  void AccountForStart(const v1::StartAntagonistReply& reply, Instance* r) {
    StartAccount& a = r->start;
    a.skew_ms = r->result.start_skew_s * 1e3;
    a.setup_s = reply.setup_s();
    a.setup_estimate_s = reply.setup_estimate_s();
    if (reply.ready_unix_ns() > 0) a.ready_ms = AgentMsFromStart(reply.ready_unix_ns(), r->node);
    if (std::string late = LateStartReason(r->result.name, r->node, a); !late.empty()) {
      spdlog::warn("trial {}: {}", trial_.index + 1, late);
      listener_->OnEvent(events::Note(v1::Note::WARNING,
                                      "trial " + std::to_string(trial_.index + 1) + ": " + late));
    }
  }

  // An agent-clock time as ms after the common start, on the controller's clock.
  double AgentMsFromStart(int64_t agent_ns, const std::string& node) const {
    return (agent_ns - Nanos(agents()->ClockOffset(node)) - start_at_ctrl_ns_) / 1e6;
  }

  // 3. Settle: every instance at >= settle_fraction of its target through one whole settle
  // window (controller/settle.h) before the victim starts, judged on the agents' telemetry
  // streams as samples arrive. A trial whose antagonists never hold that long still runs its
  // victim, but is flagged "did not settle".
  void AwaitSettled() {
    if (instances_.empty()) return;
    AwaitSettledOnStream();
  }

  // One telemetry stream per agent, subscribed to the whole trial. An agent that cannot stream
  // has none: its instances settle on the answers AskWhyNotAtTarget gets.
  void OpenSettleStreams() {
    stream_ = std::make_unique<StreamSettle>(clock());
    std::set<AgentClient*> opened;
    for (const Instance& r : instances_) {
      stream_->board.Expect(r.id, AtTargetLine(r));
      if (!r.client || !opened.insert(r.client.get()).second) continue;
      StreamSettle* raw = stream_.get();
      auto h = r.client->OpenTelemetry(trial_id_,
                                       [raw](const v1::TelemetryEvent& ev) { raw->OnEvent(ev); });
      if (h) stream_->streams.push_back(std::move(h));
    }
  }

  double AtTargetLine(const Instance& r) const {
    return options().settle_fraction * r.result.target_rate;
  }

  // A workload's warmup steps may take longer than any injector's ramp (a Python job imports
  // torch first): its own settle timeout applies on top of the settle window.
  double GiveUpS() const {
    double give_up_s = std::max(spec_.settle_s + options().settle_grace_s, options().min_settle_s);
    for (const Instance& r : instances_) {
      if (const auto& w = spec_.antagonists[r.antagonist].workload)
        give_up_s = std::max(give_up_s, w->settle_timeout_s + spec_.settle_s);
    }
    return give_up_s;
  }

  double SoloSeconds() const { return p_.solo_s > 0 ? p_.solo_s : ExperimentRunner::kDefaultSoloS; }

  void AwaitSettledOnStream() {
    StreamSettle& s = *stream_;
    std::unique_lock<std::mutex> l(s.mu);
    const double t0 = clock()->MonotonicSeconds();
    s.window.emplace(spec_.settle_s, GiveUpS());
    s.Judge(t0);                            // samples that arrived before the wait count from now
    std::map<std::string, double> asked_s;  // instance id -> when last asked why it is not there
    while (error_.empty() && !cancel_) {
      if (s.verdict == SettleWindow::Verdict::kSettled) {
        settled_ctrl_ns_ = s.settled_ctrl_ns;
        return;
      }
      if (s.verdict == SettleWindow::Verdict::kDidNotSettle) {
        NotSettled(*s.window, clock()->MonotonicSeconds() - t0);
        return;
      }
      clock()->WaitFor(s.changed, l, kSettleWakeS);
      const double now = clock()->MonotonicSeconds();
      s.Judge(now);  // the give-up time, and samples going stale
      l.unlock();
      AskWhyNotAtTarget(now, &asked_s);
      l.lock();
    }
  }

  // An instance below its line, silent, or whose latest sample is getting old is asked (at most
  // once per kSilentCheckS) whether it failed or exited: the stream carries samples, not deaths.
  // Asking before its sample goes stale lets an agent that does not stream hold a window.
  void AskWhyNotAtTarget(double now_s, std::map<std::string, double>* asked_s) {
    for (auto& r : instances_) {
      {
        std::lock_guard<std::mutex> l(stream_->mu);
        if (stream_->board.AtTarget(r.id, now_s) &&
            stream_->board.SampleAgeS(r.id, now_s) < kSilentCheckS)
          continue;
      }
      auto it = asked_s->find(r.id);
      if (it != asked_s->end() && now_s - it->second < kSilentCheckS) continue;
      (*asked_s)[r.id] = now_s;
      auto g = r.client->GetAntagonist(r.id);
      if (std::string problem = SettleProblem(g); !problem.empty()) {
        Fail(r.result.name + ": " + problem);
        return;
      }
      if (!g->unit().empty()) r.result.unit = g->unit();
      // Its answer is a sample too: an agent whose stream carries nothing (one without
      // StreamTelemetry) still settles, on these polls.
      if (g->samples() > 0) stream_->OnSample(r.id, g->last_achieved());
    }
  }

  void NotSettled(const SettleWindow& window, double waited_s) {
    not_settled_ = DidNotSettleReason(window, waited_s);
    listener_->OnEvent(events::Note(
        v1::Note::WARNING, "trial " + std::to_string(trial_.index + 1) + ": " + not_settled_));
  }

  // 4. The victim, its progress streamed to the listener as it happens (for `codlctl watch`);
  // the full record comes with the reply. Distributed: every rank at once, rank 0's progress
  // and record (controller/distributed_victim.h).
  void RunVictim() {
    auto client = agents()->Client(p_.victim_node);
    if (!client) {
      Fail(Unavailable("victim agent is gone"), "", FailureKind::kAgentLost);
      return;
    }
    v1::RunVictimRequest req;
    req.set_trial_id(trial_id_);
    req.set_experiment_id(exp_.id);
    *req.mutable_victim() = ToProto(spec_.victim);
    if (!spec_.victim.placement.empty()) {
      SetPlacement(spec_.victim.placement, req.mutable_placement());
    }
    RunListener* listener = listener_;
    auto live = client->OpenTelemetry(req.trial_id(), [listener](const v1::TelemetryEvent& ev) {
      if (ev.has_victim_step()) listener->OnVictimStep(rpc::FromProto(ev.victim_step()));
      if (ev.has_victim_dataset())
        listener->OnVictimDataset(ev.victim_dataset().generated(), ev.victim_dataset().total());
    });
    BeginNodeWindows();
    auto reply = runner_.RunVictimOnce(spec_, p_, req);
    EndNodeWindows();
    if (!reply.ok()) {
      Fail(reply.status(), "", FailureKind::kVictimStart);
      return;
    }
    victim_ = std::move(reply->reply);
    ranks_ = std::move(reply->ranks);
    rank_telemetry_ = std::move(reply->node_telemetry);
    LogSettleToVictim();
  }

  // Nodes that run this trial's antagonists but not its victim count their node telemetry
  // over the victim's run too: in a window each agent opens just before the victim starts and
  // closes as it ends (BeginNodeWindow / EndNodeWindow). An agent that cannot (an older one, a
  // failed call) is left out: the trial has no record for its node, and the log says why.
  void BeginNodeWindows() {
    std::set<std::string> victims(p_.victim_nodes.begin(), p_.victim_nodes.end());
    victims.insert(p_.victim_node);
    std::set<std::string> others;
    for (const Instance& r : instances_) {
      if (r.started && r.client && !victims.count(r.node)) others.insert(r.node);
    }
    const std::vector<std::string> nodes(others.begin(), others.end());
    const double lease_s = std::min(spec_.victim.timeout_s + 60, 24 * 3600.0);
    const auto begun =
        FanOut<Status>(nodes.size(), [&](size_t i, std::function<void(Status)> done) {
          const std::shared_ptr<AgentClient> client = agents()->Client(nodes[i]);
          if (!client) return done(Unavailable("agent is gone"));
          client->BeginNodeWindowAsync(trial_id_, lease_s, std::move(done));
        });
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (begun[i].ok()) {
        window_nodes_.push_back(nodes[i]);
      } else {
        spdlog::warn("trial {}: no node telemetry from {}: {}", trial_.index, nodes[i],
                     begun[i].error());
      }
    }
  }

  void EndNodeWindows() {
    using Reply = Result<v1::NodeTelemetry>;
    auto ended =
        FanOut<Reply>(window_nodes_.size(), [&](size_t i, std::function<void(Reply)> done) {
          const std::shared_ptr<AgentClient> client = agents()->Client(window_nodes_[i]);
          if (!client) return done(Reply(Unavailable("agent is gone")));
          client->EndNodeWindowAsync(trial_id_, std::move(done));
        });
    for (size_t i = 0; i < window_nodes_.size(); ++i) {
      if (!ended[i].ok()) {
        spdlog::warn("trial {}: no node telemetry from {}: {}", trial_.index, window_nodes_[i],
                     ended[i].error());
        continue;
      }
      NodeTelemetry n = rpc::FromProto(*ended[i]);
      n.node = window_nodes_[i];
      window_telemetry_.push_back(std::move(n));
    }
  }

  // 4'. A workload's solo trial: no victim; the workload runs alone, once settled, for as long
  // as a baseline victim run (Placement::solo_s), and that span is its window.
  void RunSolo() {
    solo_start_ctrl_ns_ = clock()->UnixNanos();
    solo_ran_ = clock()->SleepFor(SoloSeconds(), cancel_);
    solo_wall_s_ = (clock()->UnixNanos() - solo_start_ctrl_ns_) / 1e9;
  }

  // "All antagonists at target" (the sample or answer that completed the settle window) to the
  // victim's start, both on the controller's clock: the runner's own reaction time, which
  // settling on the stream keeps small (docs/performance.md, "Settle on the stream").
  void LogSettleToVictim() const {
    if (settled_ctrl_ns_ == 0) return;
    const int64_t victim_ctrl_ns =
        victim_->started_unix_ns() - Nanos(agents()->ClockOffset(p_.victim_node));
    spdlog::info("trial {}: settle_to_victim_ms={:.3f}", trial_.index,
                 (victim_ctrl_ns - settled_ctrl_ns_) / 1e6);
  }

  // 5. Stop every instance that started, whatever happened above, and collect its samples.
  void StopAndCollect() {
    stream_.reset();  // the settle streams: not needed past the victim
    auto replies = StopStarted();
    const VictimWindow window = VictimWindowOnControllerClock();
    for (size_t i = 0; i < instances_.size(); ++i) {
      if (instances_[i].started) Collect(*replies[i], window, &instances_[i]);
    }
  }

  // One call per started instance, all at once: a slow or dead agent must not hold the others'
  // antagonists running while its call waits out its deadline. nullopt: never started.
  std::vector<std::optional<Result<v1::StopAntagonistReply>>> StopStarted() const {
    using Reply = std::optional<Result<v1::StopAntagonistReply>>;
    return FanOut<Reply>(instances_.size(), [&](size_t i, std::function<void(Reply)> done) {
      const Instance& r = instances_[i];
      if (!r.started) {
        done(std::nullopt);
        return;
      }
      v1::StopAntagonistRequest req;
      req.set_idempotency_key(rpc::NewIdempotencyKey());
      req.set_antagonist_id(r.id);
      r.client->StopAntagonistAsync(
          req, [done = std::move(done)](auto reply) { done(std::move(reply)); });
    });
  }

  VictimWindow VictimWindowOnControllerClock() const {
    VictimWindow w;
    if (trial_.solo) {
      w.ran = solo_ran_;
      w.start_ctrl_ns = solo_ran_ ? solo_start_ctrl_ns_ : start_at_ctrl_ns_;
      w.wall_s = solo_ran_ ? solo_wall_s_ : 0;
      return w;
    }
    w.ran = victim_.has_value();
    w.start_ctrl_ns =
        w.ran ? victim_->started_unix_ns() - Nanos(agents()->ClockOffset(p_.victim_node))
              : start_at_ctrl_ns_;
    w.wall_s = w.ran ? victim_->wall_s() : 0;
    return w;
  }

  void Collect(const Result<v1::StopAntagonistReply>& reply, const VictimWindow& window,
               Instance* r) {
    if (!reply.ok()) {
      spdlog::error("stopping {}: {} (the agent's lease will stop it)", r->id, reply.error());
      return;
    }
    if (!reply->unit().empty()) r->result.unit = reply->unit();
    r->result.cpu_s = reply->cpu_s();
    r->result.run_s = reply->run_s();
    r->result.effective_cpus = reply->effective_cpus();
    r->collected = true;
    if (reply->first_load_unix_ns() > 0) {
      r->start.first_load_ms = AgentMsFromStart(reply->first_load_unix_ns(), r->node);
    }
    if (reply->first_done_unix_ns() > 0) {
      r->start.first_done_ms = AgentMsFromStart(reply->first_done_unix_ns(), r->node);
    }
    spdlog::info("trial {}: start_account {}", trial_.index,
                 FormatStartAccount(r->result.name, r->node, r->start));
    AddSamples(*reply, window, Nanos(agents()->ClockOffset(r->node)), r);
    if (const auto& w = spec_.antagonists[r->antagonist].workload) {
      if (auto error = CollectWorkload(*reply, *w, window, trial_.solo, r, &neighbour_flags_))
        Fail(*error);
      return;
    }
    if (!reply->error().empty()) Fail(r->result.name + ": " + reply->error());
    // Whether the antagonist held its target is judged on the victim's window, not on the
    // settle phase: that is the interference the victim actually saw.
    r->result.reached_target =
        !(r->result.target_rate > 0) ||
        r->result.achieved_rate >= options().settle_fraction * r->result.target_rate;
  }

  // 6. The record.
  TrialRecord Finish(TrialRecord t) {
    for (auto& r : instances_) t.antagonists.push_back(std::move(r.result));
    t.finished_unix_ms = NowMs(clock());
    if (victim_) CopyVictim(*victim_, &t);
    t.ranks = ranks_;
    for (const NodeTelemetry& n : rank_telemetry_) t.node_telemetry.push_back(n);
    for (const NodeTelemetry& n : window_telemetry_) t.node_telemetry.push_back(n);
    if (trial_.solo) {
      ClassifySolo(cancel_, solo_ran_, error_, error_kind_, &t);
    } else {
      Classify(cancel_, error_, error_kind_, victim_ ? &*victim_ : nullptr, &t);
    }
    FlagUnjudgeable(&t);
    return t;
  }

  // A measured trial is also flagged when its antagonists did not settle or when its victim ran
  // too briefly to judge whether they held their targets (trial_detail.h).
  void FlagUnjudgeable(TrialRecord* t) const {
    std::vector<const Instance*> judged;
    for (const Instance& r : instances_) judged.push_back(&r);
    trial_detail::FlagUnjudgeable(spec_, not_settled_, neighbour_flags_, judged, t);
  }

  const ExperimentRunner& runner_;
  const ExperimentRecord& exp_;
  const experiment::ExperimentSpec& spec_;
  const experiment::PlannedTrial& trial_;
  const Placement& p_;
  const std::atomic<bool>& cancel_;
  RunListener* listener_;
  const int attempt_;  // 1-based
  const std::string trial_id_;
  const std::string rendezvous_scope_;  // unguessable key prefix (controller/rendezvous.h)
  ScopedRendezvousGrant grant_;         // only this trial's agents may use its keys
  std::vector<Instance> instances_;
  int64_t start_at_ctrl_ns_ = 0;
  double setup_estimate_s_ = 0;           // the slowest instance's, before the common start
  std::unique_ptr<StreamSettle> stream_;  // the settle state: from the starts to the stops
  int64_t settled_ctrl_ns_ = 0;           // when the settle window completed; 0: it did not
  std::optional<v1::RunVictimReply> victim_;
  std::vector<RankRecord> ranks_;  // several ranks: each rank's record (distributed_victim.h)
  std::vector<NodeTelemetry> rank_telemetry_;    // and the other ranks' nodes' telemetry
  std::vector<std::string> window_nodes_;        // antagonist-only nodes with a window open
  std::vector<NodeTelemetry> window_telemetry_;  // and what they counted, after the victim's
  std::string error_;                            // the first thing that went wrong
  StatusCode error_code_ = StatusCode::kOk;      // and its code
  FailureKind error_kind_ = FailureKind::kNone;  // and its kind (the retry policy's view)
  std::string not_settled_;                      // the "did not settle" reason, when it did not
  std::vector<FlagReason> neighbour_flags_;      // workloads that ended early or had no steps
  int64_t solo_start_ctrl_ns_ = 0;               // a solo trial's window (controller clock)
  double solo_wall_s_ = 0;
  bool solo_ran_ = false;
};

TrialRecord ExperimentRunner::RunTrial(const ExperimentRecord& exp,
                                       const experiment::ExperimentSpec& spec,
                                       const experiment::PlannedTrial& trial, const Placement& p,
                                       const std::atomic<bool>& cancel, RunListener* listener,
                                       StatusCode* failure_code, int attempt) {
  TrialRun run(*this, exp, spec, trial, p, cancel, listener, attempt);
  TrialRecord t = run.Run();
  if (failure_code != nullptr) *failure_code = run.error_code();
  return t;
}

}  // namespace codl::controller
