// ExperimentRunner::RunPlaced: one placement's run of the plan, trial by trial, with the
// per-trial policies it calls (controller/trial_policies.h, block_stopper.h,
// tolerance_search.h) and the lost-agent grace (agent_grace) around each trial.
#include <spdlog/spdlog.h>
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include "controller/block_stopper.h"
#include "controller/distributed_victim.h"
#include "controller/experiment_runner.h"
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

namespace {

// Interrupted, resumable: the scheduler maps ABORTED to the state `interrupted`.
Error LostAgentsError(const std::vector<std::string>& missing,
                      const experiment::PlannedTrial& trial, double grace_s) {
  return Error{"lost agent(s) " + JoinNodes(missing) + " at trial " +
                   std::to_string(trial.index + 1) + ": not back within agent_grace (" +
                   FormatSeconds(grace_s) + "); `codlctl resume` continues once they are",
               StatusCode::kAborted};
}

// The plan, and after it the tolerance searches' steps as they are decided from every trial so
// far (`done`: what the searches judge).
struct GrowingPlan {
  GrowingPlan(const ExperimentRecord& e, const experiment::ExperimentSpec& s,
              const std::vector<experiment::PlannedTrial>& l, RunListener* r,
              std::vector<TrialRecord> judged)
      : exp(e), spec(s), listed(l), listener(r), trials(l), done(std::move(judged)) {}

  // Adds the searches' next steps; false when there are none (every search has stopped).
  bool Extend() {
    int next_index = 0;
    for (const auto& t : trials) next_index = std::max(next_index, t.index + 1);
    for (const auto& t : done) next_index = std::max(next_index, t.index + 1);
    ToleranceExtension ext =
        NextToleranceTrials(exp, spec, listed.size(), done, next_index, &announced);
    for (const std::string& line : ext.finished)
      listener->OnEvent(events::Note(v1::Note::INFO, line));
    trials.insert(trials.end(), ext.trials.begin(), ext.trials.end());
    return !ext.trials.empty();
  }

  const ExperimentRecord& exp;
  const experiment::ExperimentSpec& spec;
  const std::vector<experiment::PlannedTrial>& listed;
  RunListener* listener;
  std::vector<experiment::PlannedTrial> trials;
  std::vector<TrialRecord> done;
  std::set<std::string> announced;  // searches reported stopped
};

}  // namespace

Status ExperimentRunner::WaitForDownAgents(const std::set<std::string>& placed,
                                           const experiment::PlannedTrial& trial, double grace_s,
                                           const std::atomic<bool>& cancel,
                                           RunListener* listener) const {
  std::vector<std::string> down;
  for (const auto& n : placed) {
    if (!agents_->Alive(n)) down.push_back(n);
  }
  if (down.empty()) return Status::Ok();
  listener->OnEvent(events::Note(
      v1::Note::WARNING, "agent(s) " + JoinNodes(down) + " stopped heartbeating; waiting up to " +
                             FormatSeconds(grace_s) + " (agent_grace) for them"));
  down = AwaitAgents(down, -1, grace_s, cancel);
  if (cancel) return Cancelled("cancelled");
  if (!down.empty()) return LostAgentsError(down, trial, grace_s);
  return Status::Ok();
}

Result<bool> ExperimentRunner::RetryAfterAgentLoss(
    const PlacedRun& run, const experiment::PlannedTrial& trial, TrialRecord* t,
    const std::map<std::string, std::string>& sessions, StatusCode failure) {
  if (t->state == TrialState::kDone || t->state == TrialState::kCancelled || run.cancel)
    return false;
  const double grace_s = run.spec.agent_grace_s;
  const double ended_s = clock_->MonotonicSeconds();
  std::vector<std::string> lost = LostAgents(sessions, failure, ended_s, run.cancel);
  if (lost.empty()) return false;
  t->failure = FailureKind::kAgentLost;
  // A flagged attempt too: its antagonists were cut off with their agent.
  if (!run.spec.retry.Retries(t->failure, t->attempt)) return false;
  const std::string which =
      "trial " + std::to_string(trial.index + 1) + ": agent(s) " + JoinNodes(lost);
  run.listener->OnEvent(events::Note(
      v1::Note::WARNING, which + " lost (" + t->error + "); waiting up to " +
                             FormatSeconds(grace_s) + " (agent_grace) for them to come back"));
  const std::vector<std::string> missing = AwaitAgents(lost, ended_s, grace_s, run.cancel);
  if (run.cancel) return Cancelled("cancelled");
  if (!missing.empty()) return LostAgentsError(missing, trial, grace_s);
  const double back_s = clock_->MonotonicSeconds() - ended_s;
  run.prov->AddRetry(trial.index, lost, t->error, back_s, NowMs(clock_));
  run.prov->Save();
  run.listener->OnEvent(events::Note(
      v1::Note::WARNING, which + " back after " + FormatSeconds(back_s) +
                             "; the trial runs again (recorded in the provenance's retries)"));
  ConnectPlaced(run.exp, *run.p, run.cancel);
  return true;
}

Result<bool> ExperimentRunner::RetryFailedAttempt(const PlacedRun& run, const TrialRecord& t,
                                                  bool again) {
  if (!again) {
    if (t.state != TrialState::kFailed || run.cancel ||
        !run.spec.retry.Retries(t.failure, t.attempt))
      return false;
    run.listener->OnEvent(events::Note(
        v1::Note::WARNING, "trial " + std::to_string(t.index + 1) + ": attempt " +
                               std::to_string(t.attempt) + " failed (" + ToString(t.failure) +
                               ": " + FailureWithStderr(t.error, t.stderr_tail) +
                               "); it runs again (retry: attempt " + std::to_string(t.attempt + 1) +
                               " of " + std::to_string(run.spec.retry.attempts) + ")"));
  }
  if (Status s = store_->SaveAttempt(t.experiment_id, AttemptOf(t, t.failure)); !s.ok())
    return s.WithContext("keeping the failed attempt");
  if (!again &&
      !clock_->SleepFor(std::max(options_.retry_pause_s, run.spec.cooldown_s), run.cancel))
    return Cancelled("cancelled");
  return true;
}

Status ExperimentRunner::MarkRunning(const PlacedRun& run, const experiment::PlannedTrial& trial,
                                     int attempt, bool first_in_run) {
  if (first_in_run) run.prov->AddTrial(trial.index, agents_->LoadAverage1m(run.p->victim_node));
  TrialRecord t;
  t.experiment_id = run.exp.id;
  t.index = trial.index;
  t.attempt = attempt;
  t.repetition = trial.repetition;
  t.baseline = trial.baseline;
  t.solo = trial.solo;
  t.pairing = trial.pairing;
  t.victim_node = run.p->victim_node;
  t.started_unix_ms = NowMs(clock_);
  t.state = TrialState::kRunning;
  if (Status s = store_->SaveTrial(t); !s.ok()) return s.WithContext("saving trial");
  return Status::Ok();
}

Result<bool> ExperimentRunner::AfterAttempt(const PlacedRun& run,
                                            const experiment::PlannedTrial& trial,
                                            const std::map<std::string, std::string>& sessions,
                                            StatusCode failure, TrialRecord* t) {
  auto lost = RetryAfterAgentLoss(run, trial, t, sessions, failure);
  Result<bool> again = lost.ok() ? RetryFailedAttempt(run, *t, *lost) : Result<bool>(lost.status());
  if (again.ok()) return again;
  // The experiment stops here: the attempt is stored cut off (a resume runs it again), never
  // left `running`.
  t->state = TrialState::kCancelled;
  if (t->failure == FailureKind::kNone) t->failure = FailureKind::kCancelled;
  if (Status s = store_->SaveTrial(*t); !s.ok())
    spdlog::warn("[{}] trial {}: {}", t->experiment_id, t->index + 1, s.error());
  return again;
}

Status ExperimentRunner::PrepareNodes(const PlacedRun& run, const ResumeFrom& resume,
                                      SoloClock* solo) {
  RecordNodes(*run.p, run.prov);
  ConnectPlaced(run.exp, *run.p, run.cancel);
  run.listener->OnEvent(events::Note(v1::Note::INFO, VictimPlacementMessage(*run.p)));
  if (Status s = CalibrateAll(run.spec, run.p, run.cancel, run.listener, run.prov); !s.ok())
    return s;
  run.prov->Save();
  for (const auto& t : resume.kept) {
    if (IsMeasuredBaseline(t)) solo->baselines.push_back(t.wall_s);
  }
  if (Status s =
          RunWarmups(run.exp, run.spec, *run.p, run.cancel, run.listener, run.prov, &solo->warmups);
      !s.ok()) {
    return s;
  }
  run.p->solo_s = solo->Seconds();
  return Status::Ok();
}

Result<std::vector<TrialRecord>> ExperimentRunner::ResumedTrialsToJudge(
    const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
    const ResumeFrom& resume) const {
  std::vector<TrialRecord> done;
  if (!HasToleranceSearch(spec) || !resume.resumed) return done;
  auto stored = store_->GetTrials(exp.id, /*with_series=*/true);
  if (!stored.ok()) return stored.status().WithContext("reading the trials to resume");
  for (auto& t : *stored) {
    if (t.state == TrialState::kDone || t.state == TrialState::kFailed ||
        t.state == TrialState::kFlagged)
      done.push_back(std::move(t));
  }
  return done;
}

Status ExperimentRunner::CommitTrial(const PlacedRun& run, bool traced, SoloClock* solo,
                                     TrialRecord* t) {
  run.prov->Save();
  if (traced && t->trace_zlib.empty() && t->state != TrialState::kCancelled) {
    run.listener->OnEvent(
        events::Note(v1::Note::WARNING,
                     "trial " + std::to_string(t->index + 1) + ": no profiler trace kept: " +
                         (t->trace_error.empty() ? "the victim returned none" : t->trace_error)));
  }
  if (IsMeasuredBaseline(*t)) {
    solo->baselines.push_back(t->wall_s);
    run.p->solo_s = solo->Seconds();
  }
  if (Status s = store_->SaveTrial(*t); !s.ok()) return s.WithContext("saving trial");
  t->trace_zlib.clear();  // stored: not carried to the listeners
  return Status::Ok();
}

Status ExperimentRunner::RunPlaced(const ExperimentRecord& exp,
                                   const experiment::ExperimentSpec& spec,
                                   const std::vector<experiment::PlannedTrial>& listed,
                                   const std::atomic<bool>& cancel, RunListener* listener,
                                   Provenance* prov, const ResumeFrom& resume,
                                   const std::set<std::string>* reserved) {
  auto judged = ResumedTrialsToJudge(exp, spec, resume);
  if (!judged.ok()) return judged.status();
  GrowingPlan growing{exp, spec, listed, listener, std::move(*judged)};
  std::vector<experiment::PlannedTrial>& plan = growing.trials;
  std::map<int, const TrialRecord*> kept;
  for (const auto& t : resume.kept) kept[t.index] = &t;
  std::optional<BlockStopper> stopper;
  if (spec.adaptive.enabled) stopper.emplace(exp, spec);
  FailureStreak failures;
  // A trial kept from an earlier run counts for adaptive repetitions and the 3-failures rule
  // as if just run; true: the blocks stop after it.
  auto replay = [&](size_t i, const TrialRecord& t) {
    if (stopper) stopper->Add(t);
    failures.Add(t);
    return stopper && i < listed.size() && BlockStopper::ClosesBlock(listed, i) &&
           StopAfterBlock(exp, *stopper, plan[i].repetition + 1, listener);
  };
  // The kept head of the plan is replayed before anything is placed: a resume with nothing
  // left to run starts no antagonist and no warm-up.
  size_t first_to_run = 0;
  for (; first_to_run < plan.size() && kept.count(plan[first_to_run].index); ++first_to_run) {
    if (replay(first_to_run, *kept[plan[first_to_run].index])) return Status::Ok();
  }
  // Everything listed was kept: a tolerance search may still have steps to run.
  if (first_to_run == plan.size() && !(first_to_run >= listed.size() && growing.Extend()))
    return Status::Ok();
  Placement p;
  if (Status s = Place(spec, &p, {reserved, nullptr}); !s.ok()) return s;
  std::set<std::string> placed_nodes(p.victim_nodes.begin(), p.victim_nodes.end());
  for (const auto& n : p.antagonist_nodes) placed_nodes.insert(n.begin(), n.end());
  SetPlaced(exp.id, placed_nodes);
  struct Unplace {
    ExperimentRunner* r;
    const std::string& id;
    ~Unplace() { r->EndPlaced(id); }
  } unplace{this, exp.id};
  const PlacedRun run{exp, spec, &p, cancel, listener, prov};
  SoloClock solo;
  if (Status s = PrepareNodes(run, resume, &solo); !s.ok()) return s;
  const TracePolicy traces(spec, listed);
  // trial index -> the attempt running now (1-based); a resumed trial goes on from its count.
  std::map<int, int> attempt(resume.attempts_used.begin(), resume.attempts_used.end());
  std::set<int> prov_trials;  // trials in the provenance's per-trial load (once each)
  for (size_t i = first_to_run; i < plan.size(); ++i) {
    const auto& trial = plan[i];
    if (cancel) return Cancelled("cancelled");
    if (auto it = kept.find(trial.index); it != kept.end()) {
      if (replay(i, *it->second)) return Status::Ok();
      continue;
    }
    // A placed agent down before the trial: it has agent_grace to come back.
    Status down = WaitForDownAgents(placed_nodes, trial, spec.agent_grace_s, cancel, listener);
    if (!down.ok()) return down;
    const std::map<std::string, std::string> sessions = Sessions(p);
    listener->OnTrialStarted(trial);
    const int this_attempt = ++attempt[trial.index];
    Status marked = MarkRunning(run, trial, this_attempt, prov_trials.insert(trial.index).second);
    if (!marked.ok()) return marked;
    StatusCode failure = StatusCode::kOk;
    const bool traced = traces.Traced(trial);  // a searched level's trials are not
    TrialRecord t =
        RunTrial(exp, traces.SpecFor(trial), trial, p, cancel, listener, &failure, this_attempt);
    auto again = AfterAttempt(run, trial, sessions, failure, &t);
    if (!again.ok()) return again.status();
    if (*again) {
      --i;
      continue;
    }
    if (Status s = CommitTrial(run, traced, &solo, &t); !s.ok()) return s;
    if (HasToleranceSearch(spec)) growing.done.push_back(t);
    listener->OnTrialDone(t);
    if (stopper) stopper->Add(t);
    if (t.state == TrialState::kCancelled) return Cancelled("cancelled");
    failures.Add(t);
    if (failures.StopsAt(trial.index)) {
      // The last failure's kind (kOk, read as kUnknown, when the victim itself failed).
      return Error{"the first " + std::to_string(FailureStreak::kLimit) +
                       " trials failed; last error: " + FailureWithStderr(t.error, t.stderr_tail),
                   failure};
    }
    if (stopper && i < listed.size() && BlockStopper::ClosesBlock(listed, i) &&
        StopAfterBlock(exp, *stopper, trial.repetition + 1, listener)) {
      if (!HasToleranceSearch(spec)) return Status::Ok();
      plan.resize(i + 1);  // the blocks stop here; the searches follow
    }
    if (spec.cooldown_s > 0 && !clock_->SleepFor(spec.cooldown_s, cancel)) {
      return Cancelled("cancelled");
    }
    // `trial` is not used past here: the plan may grow (and move) now.
    if (i + 1 == plan.size() && i + 1 >= listed.size()) growing.Extend();
  }
  return Status::Ok();
}

std::map<std::string, std::string> ExperimentRunner::Sessions(const Placement& p) const {
  std::map<std::string, std::string> out;
  for (const auto& n : p.victim_nodes) out[n] = agents_->Session(n);
  for (const auto& nodes : p.antagonist_nodes) {
    for (const auto& n : nodes) out[n] = agents_->Session(n);
  }
  return out;
}

std::vector<std::string> ExperimentRunner::LostAgents(
    const std::map<std::string, std::string>& sessions, StatusCode failure, double ended_s,
    const std::atomic<bool>& cancel) const {
  auto lost_now = [&] {
    std::vector<std::string> lost;
    for (const auto& [n, session] : sessions) {
      if (!agents_->Alive(n) || agents_->Session(n) != session) lost.push_back(n);
    }
    return lost;
  };
  std::vector<std::string> lost = lost_now();
  if (!lost.empty() || failure != StatusCode::kUnavailable) return lost;
  // Unreachable, yet still alive by its last heartbeat: dead, or a passing error? A live agent
  // is heard from again within a heartbeat; a dead one goes silent past the liveness timeout.
  const double until = ended_s + agents_->dead_after_s() + 0.5;
  while (clock_->MonotonicSeconds() < until && !cancel) {
    bool all_heard = true;
    for (const auto& [n, session] : sessions) all_heard &= agents_->LastSeen(n) > ended_s;
    if (all_heard) return {};
    if (!clock_->SleepFor(0.1, cancel)) return {};
    lost = lost_now();
    if (!lost.empty()) return lost;
  }
  return lost_now();
}

std::vector<std::string> ExperimentRunner::AwaitAgents(const std::vector<std::string>& lost,
                                                       double since_s, double grace_s,
                                                       const std::atomic<bool>& cancel) const {
  const double until = clock_->MonotonicSeconds() + grace_s;
  for (;;) {
    std::vector<std::string> missing;
    for (const auto& n : lost) {
      if (!agents_->Alive(n) || agents_->LastSeen(n) <= since_s) missing.push_back(n);
    }
    if (missing.empty() || cancel || clock_->MonotonicSeconds() >= until) return missing;
    if (!clock_->SleepFor(0.25, cancel)) return missing;
  }
}

bool ExperimentRunner::StopAfterBlock(const ExperimentRecord& exp, const BlockStopper& stopper,
                                      int blocks, RunListener* listener) {
  const BlockStopper::Verdict v = stopper.AfterBlock(blocks);
  if (v.checked) listener->OnPrecision(v.precision);
  if (v.stop) RecordStop(exp.id, v.reason, listener);
  return v.stop;
}

void ExperimentRunner::RecordStop(const std::string& experiment_id, const std::string& reason,
                                  RunListener* listener) {
  // The trials are stored already; a reason that cannot be saved is still shown live.
  if (Status s = store_->SetStopReason(experiment_id, reason); !s.ok()) {
    spdlog::warn("[{}] saving the stop reason '{}': {}", experiment_id, reason, s.error());
  }
  listener->OnStopped(reason);
}

}  // namespace codl::controller
