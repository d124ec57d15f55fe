// ExperimentRunner: executes one experiment's planned trials, one after the other. For each
// trial: start the antagonists on their nodes with a common start time, wait until they reach
// their targets (settle), run the victim, stop the antagonists, and commit the trial to the
// store before the next begins. No path leaves an antagonist running.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "codl/v1/controller.pb.h"
#include "controller/agent_registry.h"
#include "controller/distributed_victim.h"
#include "controller/rendezvous.h"
#include "lib/common/clock.h"
#include "lib/common/records.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"

namespace codl::controller {

class BlockStopper;  // controller/block_stopper.h
class Provenance;    // controller/provenance.h

struct RunnerOptions {
  double start_delay_s = 0.25;   // common start = now + this (lets every agent get the call)
  double settle_fraction = 0.9;  // an antagonist has "reached" its target at this fraction
  double min_settle_s = 1.0;     // settle never gives up sooner than this
  // How long past the settle window the antagonists get to complete one unbroken window
  // before the trial is flagged "did not settle" (controller/settle.h).
  double settle_grace_s = 10.0;
  // The pause before a failed attempt runs again (retry policy), or the spec's cooldown when
  // longer: what failed (a busy node, a full page cache) may pass.
  double retry_pause_s = 1.0;
};

// What the runner tells the world while it works (the scheduler turns it into status/events).
class RunListener {
 public:
  virtual ~RunListener() = default;
  // Calibration, warm-up runs and notes (controller/run_events.h); trials have their own calls.
  virtual void OnEvent(const v1::ExperimentEvent& event) = 0;
  virtual void OnTrialStarted(const experiment::PlannedTrial& trial) = 0;
  virtual void OnTrialDone(const TrialRecord& trial) = 0;
  // Live, from the victim node's telemetry stream while the victim runs.
  virtual void OnVictimStep(const VictimStep& step) {}
  // Live too: the victim generating its dataset (warm-up run or trial), samples so far / in all.
  virtual void OnVictimDataset(int64_t generated, int64_t total) {}
  // Adaptive repetitions: the precision after each checked block ("block 7 (min 5, max 40):
  // widest half-width 3.1% at membw@0.5, target 2%"), and why the blocks stopped (also stored).
  virtual void OnPrecision(const std::string& line) {}
  virtual void OnStopped(const std::string& reason) {}
};

// A resumed experiment (`codlctl resume`): what earlier runs committed, and how the last ended.
struct ResumeFrom {
  bool resumed = false;
  std::vector<TrialRecord> kept;  // done, flagged or failed: not run again
  // The trials that run again (cut off, or failed under --retry-failed): index -> the attempts
  // they used (their next is one more); their dropped attempts are in the store already.
  std::map<int, int> attempts_used;
  ExperimentState previous_state = ExperimentState::kInterrupted;
  std::string previous_error;
};

class ExperimentRunner {
 public:
  ExperimentRunner(AgentRegistry* agents, store::Store* store, const Clock* clock,
                   RunnerOptions options = {});

  // Runs every trial of `plan`. Returns an error when the experiment cannot go on (no nodes,
  // calibration failed, cancelled); trials done so far are already in the store.
  // A resumed one (`resume.resumed`) skips the trials in `resume.kept` (adaptive repetitions
  // and the 3-failures rule count them as if just run) and adds a resumption to the
  // provenance instead of starting a new one.
  // `reserved` (non-null): the agents the scheduler reserved for it (Nodes); it is placed on
  // those only. Several experiments may run at once, each on its own reserved agents.
  Status Run(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
             const std::vector<experiment::PlannedTrial>& plan, const std::atomic<bool>& cancel,
             RunListener* listener, const ResumeFrom& resume = {},
             const std::set<std::string>* reserved = nullptr);

  // The agents `spec` would be placed on now (victim and antagonists), choosing within `scope`
  // (a `count: N` selector takes scope.avoid's agents last); an error when its selectors
  // cannot be met by the live agents at all.
  Result<std::set<std::string>> Nodes(const experiment::ExperimentSpec& spec,
                                      AgentRegistry::SelectScope scope = {}) const;

  // Cancelling an experiment must not wait for its victim to finish on its own: tells every
  // agent the running experiment `experiment_id` is placed on to stop its antagonists and
  // victims now (StopAll). Safe from any thread; a no-op when it does not run.
  void StopPlaced(const std::string& experiment_id, const std::string& reason);

  // Calibrates one injector + options on one agent (bypassing the cache) and stores the result.
  Result<CalibrationRecord> Calibrate(const std::string& agent_id, const std::string& injector,
                                      const std::map<std::string, std::string>& options,
                                      double duration_s);

  // Which agents may use which running trial's rendezvous keys (the controller checks callers).
  RendezvousGrants& rendezvous_grants() const { return grants_; }

 private:
  void SetPlaced(const std::string& experiment_id, std::set<std::string> nodes);
  // EndExperiment on every agent it was placed on, then forgets them.
  void EndPlaced(const std::string& experiment_id);

  std::mutex placed_mu_;
  std::map<std::string, std::set<std::string>> placed_;  // running experiment -> its agents

  struct Placement {
    std::string victim_node;                // rank 0's (the only one unless distributed)
    std::vector<std::string> victim_nodes;  // rank order: agent ids sorted
    std::string master_addr;                // distributed: rank 0's node address
    std::vector<std::vector<std::string>> antagonist_nodes;          // per antagonist
    std::map<std::pair<int, std::string>, CalibrationRecord> peaks;  // (antagonist, node)
    // How long a workload's solo trial lasts: the median wall time of the baseline trials so
    // far, else of the warm-up runs; 0 before any (a solo trial then lasts kDefaultSoloS).
    double solo_s = 0;
  };
  static constexpr double kDefaultSoloS = 10;
  // Baseline and warm-up wall times, for Placement::solo_s.
  struct SoloClock {
    std::vector<double> warmups, baselines;
    double Seconds() const;
  };
  class TrialRun;  // one trial, step by step (experiment_runner.cc)

  // What the steps of one placed run share.
  struct PlacedRun {
    const ExperimentRecord& exp;
    const experiment::ExperimentSpec& spec;
    Placement* p;
    const std::atomic<bool>& cancel;
    RunListener* listener;
    Provenance* prov;
  };
  // The placed nodes recorded and connected, the antagonists calibrated, the warm-up runs run;
  // `solo` gets the resumed baselines' and the warm-ups' wall times.
  Status PrepareNodes(const PlacedRun& run, const ResumeFrom& resume, SoloClock* solo);
  // Lost-agent grace before a trial: a placed agent that stopped heartbeating has agent_grace
  // (`grace_s`) to come back, else the experiment stops interrupted (resumable).
  Status WaitForDownAgents(const std::set<std::string>& placed,
                           const experiment::PlannedTrial& trial, double grace_s,
                           const std::atomic<bool>& cancel, RunListener* listener) const;
  // Lost-agent grace after a trial that did not finish: an agent lost marks the attempt
  // kAgentLost; true when the retry policy gives the trial another attempt and the agents came
  // back within agent_grace (recorded in the provenance); an error when they did not come back;
  // false otherwise.
  Result<bool> RetryAfterAgentLoss(const PlacedRun& run, const experiment::PlannedTrial& trial,
                                   TrialRecord* t,
                                   const std::map<std::string, std::string>& sessions,
                                   StatusCode failure);
  // Stores the trial as running (attempt `attempt`) before it runs: a controller killed while it
  // runs leaves a row the next start marks cut off (Store::MarkUnfinishedInterrupted), so a
  // resume knows the attempt was made. `first_in_run`: its load goes into the provenance.
  Status MarkRunning(const PlacedRun& run, const experiment::PlannedTrial& trial, int attempt,
                     bool first_in_run);
  // After an attempt: whether it runs again (RetryAfterAgentLoss, then RetryFailedAttempt); on
  // an error (the experiment stops) the attempt is stored cut off.
  Result<bool> AfterAttempt(const PlacedRun& run, const experiment::PlannedTrial& trial,
                            const std::map<std::string, std::string>& sessions, StatusCode failure,
                            TrialRecord* t);
  // Whether a failed attempt runs again (the spec's retry policy; an agent loss was judged
  // above): keeps the attempt (Store::SaveAttempt) and says so. `again`: RetryAfterAgentLoss's
  // verdict.
  Result<bool> RetryFailedAttempt(const PlacedRun& run, const TrialRecord& t, bool again);
  // What the tolerance searches judge of a resumed run: its stored trials, with their steps.
  Result<std::vector<TrialRecord>> ResumedTrialsToJudge(const ExperimentRecord& exp,
                                                        const experiment::ExperimentSpec& spec,
                                                        const ResumeFrom& resume) const;
  // A trial that ran, kept: provenance saved, a missing trace warned about, a baseline's wall
  // time counted for the solo runs, the trial stored (then its trace dropped from `t`).
  Status CommitTrial(const PlacedRun& run, bool traced, SoloClock* solo, TrialRecord* t);
  Status RunPlaced(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
                   const std::vector<experiment::PlannedTrial>& listed,
                   const std::atomic<bool>& cancel, RunListener* listener, Provenance* prov,
                   const ResumeFrom& resume, const std::set<std::string>* reserved);
  Status Place(const experiment::ExperimentSpec& spec, Placement* p,
               AgentRegistry::SelectScope scope = {}) const;
  Status PlaceVictim(const experiment::VictimSpec& v, const experiment::NodeSelector& sel,
                     const std::vector<std::string>& selected, Placement* p) const;
  static std::string VictimPlacementMessage(const Placement& p);
  void RecordNodes(const Placement& p, Provenance* prov) const;
  void ConnectPlaced(const ExperimentRecord& exp, const Placement& p,
                     const std::atomic<bool>& cancel);
  Status CalibrateAll(const experiment::ExperimentSpec& spec, Placement* p,
                      const std::atomic<bool>& cancel, RunListener* listener, Provenance* prov);
  Status CalibrateCollective(const experiment::ExperimentSpec& spec, size_t i, Placement* p,
                             RunListener* listener, Provenance* prov);
  // Why a cached calibration cannot be used ("" when it can): too old, or its node changed.
  std::string StaleReason(const experiment::ExperimentSpec& spec,
                          const CalibrationRecord& cached) const;
  // warmup_trials whole victim runs, antagonists off, results discarded (kept as provenance).
  // `walls`: each successful run's wall time is added to it.
  Status RunWarmups(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
                    const Placement& p, const std::atomic<bool>& cancel, RunListener* listener,
                    Provenance* prov, std::vector<double>* walls);
  // Adaptive repetitions, after the trial that closed block `blocks`: whether to stop here.
  bool StopAfterBlock(const ExperimentRecord& exp, const BlockStopper& stopper, int blocks,
                      RunListener* listener);
  void RecordStop(const std::string& experiment_id, const std::string& reason,
                  RunListener* listener);
  // Agent loss (agent_grace): which placed agents are lost after a trial that ended at
  // `ended_s` (monotonic) with failure code `failure`, against their sessions at its start:
  // not alive, or restarted (a new session); after an UNAVAILABLE failure it first waits, up
  // to the liveness timeout, to tell a dead agent from a passing error.
  std::vector<std::string> LostAgents(const std::map<std::string, std::string>& sessions,
                                      StatusCode failure, double ended_s,
                                      const std::atomic<bool>& cancel) const;
  // Waits up to `grace_s` for every agent in `lost` to be alive and heard from after
  // `since_s`; returns those still missing.
  std::vector<std::string> AwaitAgents(const std::vector<std::string>& lost, double since_s,
                                       double grace_s, const std::atomic<bool>& cancel) const;
  std::map<std::string, std::string> Sessions(const Placement& p) const;
  // One run of the victim on its node(s) (controller/distributed_victim.h).
  Result<VictimRun> RunVictimOnce(const experiment::ExperimentSpec& spec, const Placement& p,
                                  const v1::RunVictimRequest& base) const;
  // `failure_code`: the kind of the trial's first failure (kOk when none was seen).
  TrialRecord RunTrial(const ExperimentRecord& exp, const experiment::ExperimentSpec& spec,
                       const experiment::PlannedTrial& trial, const Placement& p,
                       const std::atomic<bool>& cancel, RunListener* listener,
                       StatusCode* failure_code = nullptr, int attempt = 1);

  AgentRegistry* agents_;
  store::Store* store_;
  const Clock* clock_;
  RunnerOptions options_;
  mutable RendezvousGrants grants_;  // each TrialRun grants its scope while it runs
};

// The options one node's instance of an antagonist gets: for collectives (nccl) the rank, the
// rank count (one process per selected node) and a per-trial rendezvous key.
std::map<std::string, std::string> CollectiveOptions(const experiment::AntagonistSpec& a,
                                                     size_t nodes, size_t node_index,
                                                     const std::string& trial_scope);

// "k=v,k=v" over sorted keys: the calibration cache key of an option set.
std::string OptionsKey(const std::map<std::string, std::string>& options);

}  // namespace codl::controller
