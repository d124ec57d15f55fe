// Internal to the scheduler (experiment_scheduler.cc, experiment_dispatch.cc): one queued or
// running experiment's state (Live) and the RunListener that feeds its events to watchers.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "controller/eta.h"
#include "controller/experiment_scheduler.h"
#include "controller/run_events.h"

namespace codl::controller {

struct ExperimentScheduler::Live {
  ExperimentRecord record;
  experiment::ExperimentSpec spec;
  std::vector<experiment::PlannedTrial> plan;
  std::atomic<bool> cancel{false};
  int completed = 0;
  int failed = 0;
  std::string current_pairing;
  std::string precision;  // adaptive repetitions: after the last checked block
  int64_t victim_step = 0;
  double victim_step_time_s = 0;
  double last_step_publish_s = 0;
  int64_t dataset_generated = 0;  // the victim's dataset generation; total 0: none under way
  int64_t dataset_total = 0;
  double started_s = 0;
  double estimate_s = 0;
  double trial_started_s = 0;
  std::unique_ptr<EtaModel> eta;
  ResumeFrom resume;  // a resumed experiment's committed trials (empty otherwise)
  // Running: the agents it holds. Queued: why it waits ("waits for node a held by ID"), or "".
  std::set<std::string> reserved;
  std::string waiting_for;
  Status placement;  // why it cannot be placed at all: it fails without running
};

class ExperimentScheduler::Listener : public RunListener {
 public:
  Listener(ExperimentScheduler* s, std::shared_ptr<Live> live) : s_(s), live_(std::move(live)) {}
  void OnEvent(const v1::ExperimentEvent& ev) override { s_->Publish(live_, ev, false); }
  void OnTrialStarted(const experiment::PlannedTrial& t) override {
    {
      std::lock_guard<std::mutex> l(s_->mu_);
      live_->current_pairing = t.pairing;
      live_->trial_started_s = s_->clock_->MonotonicSeconds();
      live_->victim_step = 0;
      live_->victim_step_time_s = 0;
      live_->dataset_generated = live_->dataset_total = 0;
    }
    s_->Publish(live_,
                events::TrialStarted(t.index, static_cast<int>(live_->plan.size()), t.pairing),
                false);
  }
  void OnVictimStep(const VictimStep& step) override {
    bool publish;
    {
      std::lock_guard<std::mutex> l(s_->mu_);
      live_->victim_step = step.step;
      live_->victim_step_time_s = step.step_time_s;
      // At most 4 updates a second reach the watchers.
      double now = s_->clock_->MonotonicSeconds();
      publish = now - live_->last_step_publish_s >= 0.25;
      if (publish) live_->last_step_publish_s = now;
    }
    if (publish) s_->Publish(live_, {}, false);
  }
  // Its start and end are messages (the phase shows in every view); updates between them are
  // throttled like steps.
  void OnVictimDataset(int64_t generated, int64_t total) override {
    bool started, publish;
    {
      std::lock_guard<std::mutex> l(s_->mu_);
      started = live_->dataset_total == 0;
      live_->dataset_generated = generated;
      live_->dataset_total = total;
      double now = s_->clock_->MonotonicSeconds();
      publish = started || generated >= total || now - live_->last_step_publish_s >= 0.25;
      if (publish) live_->last_step_publish_s = now;
    }
    if (generated >= total || started)
      s_->Publish(live_, events::DatasetChanged(generated, total), false);
    else if (publish) s_->Publish(live_, {}, false);
  }
  void OnTrialDone(const TrialRecord& t) override {
    int completed;
    {
      std::lock_guard<std::mutex> l(s_->mu_);
      // A cut-off trial (cancelled) is not one of the committed ones: it runs again on resume.
      completed = live_->completed += Committed(t.state);
      live_->eta->OnTrialDone(t.index, s_->clock_->MonotonicSeconds() - live_->trial_started_s);
      if (t.state == TrialState::kFailed) ++live_->failed;
    }
    if (s_->metrics_) {
      s_->metrics_->OnTrialDone(t);
      s_->metrics_->OnTrialProgress(t.experiment_id, completed,
                                    static_cast<int>(live_->plan.size()));
    }
    s_->Publish(
        live_,
        events::TrialFinished(t, static_cast<int>(live_->plan.size()), live_->spec.victim.metric),
        false);
  }
  void OnPrecision(const std::string& line) override {
    {
      std::lock_guard<std::mutex> l(s_->mu_);
      live_->precision = line;
    }
    s_->Publish(live_, events::Note(v1::Note::INFO, line), false);
  }
  void OnStopped(const std::string& reason) override {
    {
      std::lock_guard<std::mutex> l(s_->mu_);
      live_->record.stop_reason = reason;
    }
    s_->Publish(live_, events::Note(v1::Note::INFO, "stopped: " + reason), false);
  }

 private:
  ExperimentScheduler* s_;
  std::shared_ptr<Live> live_;
};

namespace scheduler_internal {
// Hands the freed pages of an ended experiment's plan back to the kernel (malloc_trim).
void ReturnFreedMemory();
}  // namespace scheduler_internal

}  // namespace codl::controller
