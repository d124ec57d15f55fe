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
// done. victim: null if it did not run.
void Classify(bool cancelled, const std::string& error, const v1::RunVictimReply* victim,
              TrialRecord* t);

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
