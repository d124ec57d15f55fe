// The pieces of one trial (ExperimentRunner::TrialRun, trial_run.cc) that are not its steps:
// the settle constants, one antagonist instance, the victim's window, the streamed settle state,
// and how a finished trial is copied and classified. Internal to codl_controller_lib.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/agent_client.h"
#include "controller/settle.h"
#include "lib/common/clock.h"
#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::controller {
// Named (not anonymous): TrialRun, a member of an exported class, holds these.
namespace trial_detail {

// Settling on the stream: a sample older than this no longer counts as "at target" (injectors
// report at least 4x/s). An antagonist not at target is asked why (GetAntagonist: failed,
// exited, or an agent that does not stream) at most once per kSilentCheckS, well inside the
// stale time so that its answers alone can hold a window. The waiting thread also wakes every
// kSettleWakeS for a cancel and the give-up time.
constexpr double kSampleStaleS = 1.0;
constexpr double kSilentCheckS = 0.4;
constexpr double kSettleWakeS = 0.1;

// The victim's reply copied into the trial record.
void CopyVictim(const v1::RunVictimReply& victim, TrialRecord* t);

// One reason per antagonist below its target: "membw reached 412 of target 1e+03 bytes/s".
std::vector<FlagReason> MissedTargets(const std::vector<AntagonistResult>& antagonists);

// The trial's state, in order of precedence: cancelled, failed (a step's error, then the
// victim's own), flagged (an antagonist missed its target: flag_reasons and error say which),
// done. victim: null if it did not run. t->failure says why a failed or cancelled one did not
// count: `error_kind` for a step's error, else the victim's (kVictimStart when the agent could
// not start it, kVictim for its own failure).
void Classify(bool cancelled, const std::string& error, FailureKind error_kind,
              const v1::RunVictimReply* victim, TrialRecord* t);

// One antagonist on one node in one trial.
struct Instance {
  int antagonist = 0;
  std::string node;
  std::map<std::string, std::string> options;  // as sent: ranks/rendezvous filled in
  std::string id;
  std::shared_ptr<AgentClient> client;
  AntagonistResult result;
  bool max = false;  // open loop (codl-inject --max): no target, never flagged
  int64_t started_agent_ns = 0;
  bool started = false;
  bool collected = false;  // its samples came back with the stop
  int window_samples = 0;  // of them, inside the victim's window
  StartAccount start;      // how its synchronized start went (logged once collected)
};

// The victim's run on the controller's clock: antagonist samples are timed from its start,
// and their statistics cover its window only.
struct VictimWindow {
  bool ran = false;
  int64_t start_ctrl_ns = 0;
  double wall_s = 0;
};

// The samples of one stopped antagonist, timed from the victim's start (`offset_ns`: its
// agent's clock offset); the achieved rate and its CoV over the victim's window (the agent's
// whole-run summary when no sample falls in it).
void AddSamples(const v1::StopAntagonistReply& reply, const VictimWindow& window, int64_t offset_ns,
                Instance* r);

// A workload antagonist's figure: its steps inside the victim's window; that it exited by
// itself first, or reported no step, adds a flag to `neighbour_flags` (its error, an exit
// status, is part of that reason). Returns the error that fails the trial, if any.
std::optional<std::string> CollectWorkload(const v1::StopAntagonistReply& reply,
                                           const experiment::WorkloadSpec& w,
                                           const VictimWindow& window, bool solo, Instance* r,
                                           std::vector<FlagReason>* neighbour_flags);

// Why an antagonist asked during the settle step is not at target: the call's error, its own
// error, or that it exited; "" when it runs.
std::string SettleProblem(const Result<v1::GetAntagonistReply>& g);

// A solo trial has no victim: done unless cancelled, not run, or failed (its flags follow).
// t->failure: `error_kind`, or kAntagonistStart when the solo run did not start.
void ClassifySolo(bool cancelled, bool ran, const std::string& error, FailureKind error_kind,
                  TrialRecord* t);

// A measured trial is also flagged when its victim's values cannot be step times, when its
// antagonists did not settle (`not_settled`), for its workloads (`neighbour_flags`), or when its
// victim ran too briefly to judge whether they held their targets; every reason is kept, in
// that order. `instances`: in the order of t->antagonists.
void FlagUnjudgeable(const experiment::ExperimentSpec& spec, const std::string& not_settled,
                     const std::vector<FlagReason>& neighbour_flags,
                     const std::vector<const Instance*>& instances, TrialRecord* t);

// The settle step's state: samples (streamed, or the answers of an agent asked why it is not at
// target) are judged as they arrive, one SettleWindow::Observe per sample, so a dip is never
// lost between two wake-ups of the waiting thread and the verdict is known the moment the
// sample that completes the window arrives.
struct StreamSettle {
  explicit StreamSettle(const Clock* c) : clock(c) {}
  // Under mu.
  void Judge(double now_s) {
    if (!window || verdict != SettleWindow::Verdict::kWaiting) return;
    verdict = window->Observe(now_s, board.AllAtTarget(now_s));
    if (verdict == SettleWindow::Verdict::kSettled) settled_ctrl_ns = clock->UnixNanos();
    if (verdict != SettleWindow::Verdict::kWaiting) changed.notify_all();
  }
  void OnEvent(const v1::TelemetryEvent& ev) {
    if (ev.has_antagonist())
      OnSample(ev.antagonist().antagonist_id(), ev.antagonist().sample().achieved());
  }
  void OnSample(const std::string& id, double achieved) {
    std::lock_guard<std::mutex> l(mu);
    const double now = clock->MonotonicSeconds();
    if (board.OnSample(id, achieved, now)) Judge(now);
  }

  const Clock* clock;
  std::mutex mu;
  std::condition_variable changed;
  TargetBoard board{kSampleStaleS};
  std::optional<SettleWindow> window;  // from the start of the wait
  SettleWindow::Verdict verdict = SettleWindow::Verdict::kWaiting;
  int64_t settled_ctrl_ns = 0;
  // Last: destroyed first (cancelled and joined) while the rest is still alive.
  std::vector<std::unique_ptr<AgentClient::TelemetryStream>> streams;
};

}  // namespace trial_detail
}  // namespace codl::controller
