// ExperimentScheduler: accepts submitted experiments (validated, planned, stored as queued),
// runs them through the ExperimentRunner, tracks live status, and fans events out to watchers.
//
// Node reservations: an experiment reserves the agents its victim and antagonists are placed on
// (ExperimentRunner::Nodes) for as long as it runs, and runs on its own thread. Experiments
// whose agents are disjoint run at the same time; an agent is never in two running ones. The
// dispatcher goes through the queue in submission order: an experiment starts when none of its
// agents is held by a running experiment or promised to an earlier queued one; one that cannot
// start promises its agents to itself, so a later experiment may start before it only on
// other agents (backfill) and none waits behind later ones forever. A `count: N` selector
// takes free agents before held or promised ones. An experiment whose selectors no set of live
// agents can meet fails at once, as it always did.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codl/v1/controller.pb.h"
#include "controller/controller_metrics.h"
#include "controller/experiment_runner.h"
#include "lib/common/clock.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"

namespace codl::controller {

class ExperimentScheduler {
 public:
  ExperimentScheduler(store::Store* store, ExperimentRunner* runner, const Clock* clock,
                      experiment::ParseHooks hooks, ControllerMetrics* metrics = nullptr);
  ~ExperimentScheduler();
  void Start();
  // Before Start: the worker starts nothing for this long (wall clock). After a restart that
  // queued experiments again, their agents need a heartbeat or two to re-register.
  void HoldFirstStart(double seconds) { hold_s_ = seconds; }
  // Before Start: for this long after Start, an experiment whose node selectors match no live
  // agent (a FAILED_PRECONDITION from the registry) stays queued, saying so, instead of failing:
  // after a restart, `codlctl resume` may come before the agents are back.
  void SetAgentRejoinGrace(double seconds) { rejoin_grace_s_ = seconds; }
  // Submissions beyond this many queued (not yet running) experiments are refused with
  // RESOURCE_EXHAUSTED: the queue, its YAML and plans live in memory.
  void SetMaxQueued(size_t n) { max_queued_ = n; }
  static constexpr size_t kDefaultMaxQueued = 100;
  void Shutdown();  // cancels the running experiments (their antagonists are stopped); joins

  struct Submitted {
    std::string id;
    int total_trials = 0;
  };
  // Bad YAML -> error "FILE:LINE:COL: message" (the caller maps it to INVALID_ARGUMENT).
  // `submitter`: the caller as the service identified it (ExperimentRecord::submitter).
  Result<Submitted> Submit(const std::string& yaml, const std::string& source_path,
                           const std::string& submitter = "");
  Result<v1::ExperimentStatus> GetStatus(const std::string& id);  // id or "latest"
  // The state after the call; `stopping` while a running experiment's trial is being stopped.
  struct CancelOutcome {
    ExperimentState state = ExperimentState::kCancelled;
    bool stopping = false;
  };
  Result<CancelOutcome> Cancel(const std::string& id);

  // Continues an interrupted, cancelled or failed experiment (id or "latest") from its stored
  // plan: the same seed and order, its committed trials kept, the rest queued to run (a trial
  // stored as cancelled, cut off mid-run, runs again under its index, as its next attempt; one
  // cut off by a controller restart only while the retry policy allows another attempt, else it
  // is stored failed). `retry_failed` (`codlctl resume --retry-failed`): its failed trials run
  // again too, as their next attempts, and a done experiment with failed trials may be resumed.
  // FAILED_PRECONDITION for one that is queued, running, or done with nothing to run.
  struct Resumed {
    std::string id;
    int total_trials = 0;
    int kept_trials = 0;
    ExperimentState previous_state = ExperimentState::kInterrupted;
    int retried_trials = 0;  // failed trials that run again (retry_failed)
  };
  Result<Resumed> Resume(const std::string& id, bool retry_failed = false);
  // Queues again an experiment the store says is queued (a controller restart: the durable
  // queue), from its stored YAML and seed.
  Status Requeue(const std::string& id);

  using Watcher = std::function<void(const v1::ExperimentEvent& event, bool final)>;
  // Calls `w` with the current status at once; then on every event until the experiment ends
  // (final=true). Returns a handle for Unwatch, or an error for an unknown id.
  Result<int> Watch(const std::string& id, Watcher w);
  void Unwatch(int handle);

  // How many experiments are queued and running now (for metrics).
  std::pair<int, int> QueuedAndRunning();

 private:
  struct Live;
  class Listener;
  void WorkerLoop();
  // Starts every queued experiment whose agents are free (the rule above); `waiting` gets those
  // whose reason for waiting changed (a note to publish). Holds mu_.
  void DispatchLocked(std::vector<std::shared_ptr<Live>>* waiting);
  void StartLocked(const std::shared_ptr<Live>& live);
  // One experiment, on its own thread; `placement`: why it cannot be placed at all (not ok).
  void RunOne(const std::shared_ptr<Live>& live, const Status& placement);
  v1::ExperimentStatus StatusOf(const Live& live) const;
  // Sends `ev` with the live status to the experiment's watchers; {}: a status update only.
  void Publish(const std::shared_ptr<Live>& live, v1::ExperimentEvent ev, bool final);
  std::string NewExperimentId();
  // A Live for a stored experiment: its YAML parsed again, its seed, its plan (checked against
  // the stored trial count).
  Result<std::shared_ptr<Live>> LiveFromRecord(const ExperimentRecord& rec);
  Status Enqueue(const std::shared_ptr<Live>& live);
  // Resume: which stored trials stay (live->resume.kept) and which run again (their attempts
  // kept in the store, live->resume.attempts_used); `retried`: the failed ones run again.
  Status SortStoredTrials(const std::shared_ptr<Live>& live, std::vector<TrialRecord> trials,
                          bool retry_failed, int* retried);
  Status CheckQueueRoom();
  Error QueueFull() const;

  store::Store* store_;
  ExperimentRunner* runner_;
  const Clock* clock_;
  experiment::ParseHooks hooks_;
  ControllerMetrics* metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Live>> queue_;
  std::map<std::string, std::shared_ptr<Live>> live_;  // queued or running
  std::map<int, std::pair<std::string, Watcher>> watchers_;
  int next_watcher_ = 1;
  bool stopping_ = false;
  bool redispatch_ = false;  // something changed that may let a queued experiment start
  size_t max_queued_ = kDefaultMaxQueued;
  double hold_s_ = 0;
  double rejoin_grace_s_ = 0;
  double started_s_ = 0;                  // clock_'s monotonic time at Start
  std::thread worker_;                    // the dispatcher
  std::map<uint64_t, std::thread> runs_;  // one per running experiment
  std::vector<uint64_t> finished_runs_;   // to be joined by the dispatcher
  uint64_t next_run_ = 1;
};

}  // namespace codl::controller
