#include "controller/experiment_scheduler.h"

#include "controller/eta.h"
#include "controller/run_events.h"
#include "lib/rpc/records_proto.h"

#include <malloc.h>

#include <memory>
#include <random>

#include <spdlog/spdlog.h>

#include "lib/common/utf8.h"
#include "lib/rpc/status.h"

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
      completed = ++live_->completed;
      live_->eta->OnTrialDone(t.index, s_->clock_->MonotonicSeconds() - live_->trial_started_s);
      if (t.state == TrialState::kFailed) ++live_->failed;
    }
    if (s_->metrics_) {
      s_->metrics_->OnTrialDone(t);
      s_->metrics_->OnTrialProgress(t.experiment_id, completed,
                                    static_cast<int>(live_->plan.size()));
    }
    const auto metric = experiment::ParseTrialMetric(live_->spec.victim.metric);
    s_->Publish(live_,
                events::TrialFinished(t, static_cast<int>(live_->plan.size()),
                                      metric.ok() ? *metric : experiment::TrialMetric{}),
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

namespace {

// A plan of 100,000 trials is ~30 MB of small allocations; once its experiment ends glibc keeps
// the freed pages in its arenas (RSS stayed ~180 MB above the start after a large cancel).
// malloc_trim hands them back to the kernel.
void ReturnFreedMemory() { malloc_trim(0); }

// "12 trials", or for adaptive repetitions "up to 80 trials (adaptive: 5..40 blocks until every
// CI half-width <= 2%)".
std::string StartedLine(const experiment::ExperimentSpec& spec, size_t trials) {
  if (!spec.adaptive.enabled) return std::to_string(trials) + " trials";
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "up to %zu trials (adaptive: %d..%d blocks until every CI half-width <= %.3g%%)",
                trials, spec.adaptive.min, spec.adaptive.max, spec.adaptive.ci_halfwidth * 100);
  return buf;
}

}  // namespace

ExperimentScheduler::ExperimentScheduler(store::Store* store, ExperimentRunner* runner,
                                         const Clock* clock, experiment::ParseHooks hooks,
                                         ControllerMetrics* metrics)
    : store_(store), runner_(runner), clock_(clock), hooks_(std::move(hooks)), metrics_(metrics) {}

std::pair<int, int> ExperimentScheduler::QueuedAndRunning() {
  std::lock_guard<std::mutex> l(mu_);
  int queued = 0, running = 0;
  for (const auto& [id, live] : live_) {
    (live->record.state == ExperimentState::kRunning ? running : queued) += 1;
  }
  return {queued, running};
}

ExperimentScheduler::~ExperimentScheduler() { Shutdown(); }

void ExperimentScheduler::Start() {
  worker_ = std::thread([this] { WorkerLoop(); });
}

void ExperimentScheduler::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    for (auto& [id, live] : live_) live->cancel = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::string ExperimentScheduler::NewExperimentId() {
  // Sortable and unique enough for one controller: time plus a random suffix.
  static std::mt19937_64 rng(std::random_device{}());
  time_t now = clock_->UnixNanos() / 1'000'000'000;
  struct tm tm;
  gmtime_r(&now, &tm);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d%02d%02d-%02d%02d%02d-%04x", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(rng() & 0xffff));
  return buf;
}

Result<ExperimentScheduler::Submitted> ExperimentScheduler::Submit(const std::string& yaml,
                                                                   const std::string& source_path) {
  auto spec =
      experiment::ParseExperiment(yaml, source_path.empty() ? "<submitted>" : source_path, hooks_);
  if (!spec.ok()) return spec.status();
  // Before the store: a refused experiment leaves no record. (Submissions racing past this
  // check together overshoot by at most the service's handler threads.)
  if (Status s = CheckQueueRoom(); !s.ok()) return s;
  auto live = std::make_shared<Live>();
  live->spec = std::move(spec.value());
  live->plan = experiment::ExpandPlan(live->spec);
  live->estimate_s = experiment::EstimateDurationSeconds(live->spec, live->plan, 10);
  live->eta = std::make_unique<EtaModel>(live->plan, live->estimate_s, live->spec.settle_s);
  auto& r = live->record;
  r.id = NewExperimentId();
  r.name = live->spec.name;
  r.source_path = source_path;
  r.yaml = yaml;
  r.state = ExperimentState::kQueued;
  r.seed = live->spec.seed;
  r.total_trials = static_cast<int>(live->plan.size());
  r.created_unix_ms = clock_->UnixNanos() / 1'000'000;
  if (Status s = store_->CreateExperiment(r); !s.ok()) return s;
  if (Status s = Enqueue(live); !s.ok()) return s;
  // Names are the submitter's bytes: escaped, so a CR/LF cannot add a line to the log.
  spdlog::info("experiment {} '{}' queued: {} trials", r.id, TerminalSafe(r.name), r.total_trials);
  return Submitted{r.id, r.total_trials};
}

Result<std::shared_ptr<ExperimentScheduler::Live>> ExperimentScheduler::LiveFromRecord(
    const ExperimentRecord& rec) {
  auto spec = experiment::ParseExperiment(
      rec.yaml, rec.source_path.empty() ? "<submitted>" : rec.source_path, hooks_);
  if (!spec.ok()) {
    return FailedPrecondition("its stored experiment file no longer parses: " + spec.error());
  }
  auto live = std::make_shared<Live>();
  live->spec = std::move(spec.value());
  live->spec.seed = rec.seed;  // a drawn seed was stored: the same order again
  live->plan = experiment::ExpandPlan(live->spec);
  if (static_cast<int>(live->plan.size()) != rec.total_trials) {
    return FailedPrecondition("its stored file now plans " + std::to_string(live->plan.size()) +
                              " trials, not the " + std::to_string(rec.total_trials) +
                              " it was run with (a different CoDL version?)");
  }
  live->estimate_s = experiment::EstimateDurationSeconds(live->spec, live->plan, 10);
  live->eta = std::make_unique<EtaModel>(live->plan, live->estimate_s, live->spec.settle_s);
  live->record = rec;
  return live;
}

Status ExperimentScheduler::Enqueue(const std::shared_ptr<Live>& live) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return Unavailable("controller is shutting down");
    // Two resumes of one experiment at once: the second finds the first's here.
    if (live_.count(live->record.id)) {
      return FailedPrecondition("experiment " + live->record.id + " is already " +
                                ToString(live_[live->record.id]->record.state));
    }
    live_[live->record.id] = live;
    queue_.push_back(live);
  }
  cv_.notify_all();
  return Status::Ok();
}

Status ExperimentScheduler::Requeue(const std::string& id) {
  auto rec = store_->GetExperiment(id);
  if (!rec.ok()) return rec.status();
  auto live = LiveFromRecord(*rec);
  if (!live.ok()) {
    (void)store_->UpdateExperiment(
        rec->id, ExperimentState::kFailed,
        "could not be queued again after a controller restart: " + live.error(),
        clock_->UnixNanos() / 1'000'000, live.code());
    return live.status();
  }
  (*live)->record.state = ExperimentState::kQueued;
  return Enqueue(*live);
}

Result<ExperimentScheduler::Resumed> ExperimentScheduler::Resume(const std::string& id) {
  auto rec = store_->GetExperiment(id);
  if (!rec.ok()) return rec.status();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (live_.count(rec->id)) {
      return FailedPrecondition("experiment " + rec->id + " is " +
                                ToString(live_[rec->id]->record.state) +
                                ": only an interrupted, cancelled or failed one can be resumed");
    }
  }
  const ExperimentState was = rec->state;
  if (was != ExperimentState::kInterrupted && was != ExperimentState::kCancelled &&
      was != ExperimentState::kFailed) {
    return FailedPrecondition("experiment " + rec->id + " is " + ToString(was) +
                              (was == ExperimentState::kDone
                                   ? ": every planned trial ran; nothing to resume"
                                   : ": only an interrupted, cancelled or failed one can be "
                                     "resumed (another process may be running it)"));
  }
  auto live_or = LiveFromRecord(*rec);
  if (!live_or.ok()) return live_or.status().WithContext("experiment " + rec->id);
  std::shared_ptr<Live> live = *live_or;
  auto trials = store_->GetTrials(rec->id, /*with_series=*/false);
  if (!trials.ok()) return trials.status();
  for (auto& t : *trials) {
    // Committed results stay; a trial cut off mid-run (cancelled, or left running) runs again.
    if (t.state == TrialState::kDone || t.state == TrialState::kFailed ||
        t.state == TrialState::kFlagged) {
      if (t.state == TrialState::kFailed) ++live->failed;
      live->resume.kept.push_back(std::move(t));
    }
  }
  live->completed = static_cast<int>(live->resume.kept.size());
  live->resume.resumed = true;
  live->resume.previous_state = was;
  live->resume.previous_error = rec->error;
  live->record.state = ExperimentState::kQueued;
  live->record.error.clear();
  live->record.error_code = StatusCode::kOk;
  live->record.finished_unix_ms = 0;
  live->record.stop_reason.clear();
  if (Status s = store_->UpdateExperiment(rec->id, ExperimentState::kQueued, "", 0); !s.ok())
    return s;
  if (!rec->stop_reason.empty()) {
    if (Status s = store_->SetStopReason(rec->id, ""); !s.ok()) return s;
  }
  if (Status s = Enqueue(live); !s.ok()) return s;
  spdlog::info("experiment {} '{}' resumed ({} before): {} of {} trials kept", rec->id,
               TerminalSafe(rec->name), ToString(was), live->completed, rec->total_trials);
  return Resumed{rec->id, rec->total_trials, live->completed, was};
}

Error ExperimentScheduler::QueueFull() const {
  return ResourceExhausted(std::to_string(max_queued_) +
                           " experiments are already queued (the limit); wait for one to finish "
                           "or cancel one with `codlctl cancel`");
}

Status ExperimentScheduler::CheckQueueRoom() {
  std::lock_guard<std::mutex> l(mu_);
  if (queue_.size() >= max_queued_) return QueueFull();
  return Status::Ok();
}

v1::ExperimentStatus ExperimentScheduler::StatusOf(const Live& live) const {
  v1::ExperimentStatus s;
  s.set_experiment_id(live.record.id);
  s.set_name(live.record.name);
  rpc::SetState(live.record.state, &s);
  s.set_error(live.record.error);
  s.set_error_code(static_cast<int>(rpc::ToGrpcCode(live.record.error_code)));
  s.set_total_trials(live.record.total_trials);
  s.set_completed_trials(live.completed);
  s.set_failed_trials(live.failed);
  s.set_current_pairing(live.current_pairing);
  s.set_victim_step(live.victim_step);
  s.set_victim_step_time_s(live.victim_step_time_s);
  s.set_dataset_generated(live.dataset_generated);
  s.set_dataset_total(live.dataset_total);
  s.set_precision(live.precision);
  s.set_stop_reason(live.record.stop_reason);
  s.set_created_unix_ms(live.record.created_unix_ms);
  s.set_finished_unix_ms(live.record.finished_unix_ms);
  if (live.record.state == ExperimentState::kRunning) {
    s.set_eta_s(live.eta->RemainingSeconds(clock_->MonotonicSeconds() - live.started_s));
  } else if (live.record.state == ExperimentState::kQueued) {
    s.set_eta_s(live.estimate_s);
  }
  return s;
}

Result<v1::ExperimentStatus> ExperimentScheduler::GetStatus(const std::string& id) {
  auto rec = store_->GetExperiment(id);
  if (!rec.ok()) return rec.status();
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = live_.find(rec->id);
    if (it != live_.end()) return StatusOf(*it->second);
  }
  Live finished;
  finished.record = *rec;
  auto trials = store_->GetTrials(rec->id, /*with_series=*/false);
  if (trials.ok()) {
    for (const auto& t : *trials) {
      ++finished.completed;
      if (t.state == TrialState::kFailed) ++finished.failed;
    }
  }
  return StatusOf(finished);
}

Result<ExperimentScheduler::CancelOutcome> ExperimentScheduler::Cancel(const std::string& id) {
  auto rec = store_->GetExperiment(id);
  if (!rec.ok()) return rec.status();
  std::shared_ptr<Live> live;
  bool cancelling = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = live_.find(rec->id);
    if (it == live_.end()) return CancelOutcome{rec->state, false};  // already finished
    live = it->second;
    live->cancel = true;
    if (live->record.state == ExperimentState::kQueued) {
      // Never started: finish it here.
      for (auto q = queue_.begin(); q != queue_.end(); ++q) {
        if (*q == live) {
          queue_.erase(q);
          break;
        }
      }
      live->record.state = ExperimentState::kCancelled;
      live->record.finished_unix_ms = clock_->UnixNanos() / 1'000'000;
      live_.erase(it);
    } else {
      cancelling = true;
    }
  }
  if (cancelling) {
    // The runner notices the flag between steps; a victim mid-run is stopped by its agent.
    runner_->StopPlaced("experiment " + live->record.id + " cancelled");
    return CancelOutcome{ExperimentState::kRunning, true};
  }
  (void)store_->UpdateExperiment(live->record.id, ExperimentState::kCancelled,
                                 "cancelled before it started", live->record.finished_unix_ms);
  Publish(live, events::ExperimentChanged(ExperimentState::kCancelled, ""), true);
  live.reset();
  ReturnFreedMemory();
  return CancelOutcome{ExperimentState::kCancelled, false};
}

Result<int> ExperimentScheduler::Watch(const std::string& id, Watcher w) {
  auto status = GetStatus(id);
  if (!status.ok()) return status.status();
  const v1::ExperimentState state = status->state();
  bool final = state != v1::EXPERIMENT_QUEUED && state != v1::EXPERIMENT_RUNNING;
  auto rec_state = rpc::FromProto(state);
  if (!rec_state.ok()) return rec_state.status();
  v1::ExperimentEvent ev =
      final ? events::ExperimentChanged(*rec_state, "") : events::WatchStarted();
  *ev.mutable_status() = *status;
  int handle = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool still_live = live_.count(status->experiment_id()) > 0;
    if (!final && still_live) {
      handle = next_watcher_++;
      watchers_[handle] = {status->experiment_id(), w};
    }
    final = final || !still_live;
  }
  w(ev, final);
  return handle;
}

void ExperimentScheduler::Unwatch(int handle) {
  std::lock_guard<std::mutex> l(mu_);
  watchers_.erase(handle);
}

void ExperimentScheduler::Publish(const std::shared_ptr<Live>& live, v1::ExperimentEvent ev,
                                  bool final) {
  std::vector<Watcher> targets;
  {
    std::lock_guard<std::mutex> l(mu_);
    *ev.mutable_status() = StatusOf(*live);
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      if (it->second.first == live->record.id) {
        targets.push_back(it->second.second);
        if (final) {
          it = watchers_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  if (!ev.message().empty()) spdlog::info("[{}] {}", live->record.id, ev.message());
  for (auto& w : targets) w(ev, final);
}

void ExperimentScheduler::WorkerLoop() {
  if (hold_s_ > 0) {
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, std::chrono::duration<double>(hold_s_), [this] { return stopping_; }))
      return;
  }
  for (;;) {
    std::shared_ptr<Live> live;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        // Queued experiments stay queued in the store; the next controller start marks them
        // interrupted rather than silently dropping them.
        return;
      }
      live = queue_.front();
      queue_.pop_front();
    }
    RunOne(live);
    live.reset();
    ReturnFreedMemory();
  }
}

void ExperimentScheduler::RunOne(const std::shared_ptr<Live>& live) {
  {
    std::lock_guard<std::mutex> l(mu_);
    live->record.state = ExperimentState::kRunning;
    live->started_s = clock_->MonotonicSeconds();
  }
  (void)store_->UpdateExperiment(live->record.id, ExperimentState::kRunning, "", 0);
  Publish(live,
          events::ExperimentChanged(ExperimentState::kRunning,
                                    StartedLine(live->spec, live->plan.size())),
          false);
  Listener listener(this, live);
  Status s =
      runner_->Run(live->record, live->spec, live->plan, live->cancel, &listener, live->resume);
  ExperimentState state = ExperimentState::kDone;
  std::string error;
  StatusCode code = StatusCode::kOk;
  bool shutting_down;
  {
    std::lock_guard<std::mutex> l(mu_);
    shutting_down = stopping_;
  }
  if (shutting_down) {
    state = ExperimentState::kInterrupted;
    error = "controller stopped while the experiment ran";
  } else if (live->cancel) {
    state = ExperimentState::kCancelled;
    error = "cancelled";
  } else if (!s.ok()) {
    state = ExperimentState::kFailed;
    error = s.error();
    code = s.code();
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    live->record.state = state;
    live->record.error = error;
    live->record.error_code = code;
    live->record.finished_unix_ms = clock_->UnixNanos() / 1'000'000;
    live->current_pairing.clear();
  }
  if (Status st = store_->UpdateExperiment(live->record.id, state, error,
                                           live->record.finished_unix_ms, code);
      !st.ok()) {
    // Still `running` in the file: the next start (or `codlctl resume`) marks it interrupted.
    spdlog::error("[{}] cannot store its final state '{}': {}", live->record.id, ToString(state),
                  st.error());
  }
  if (metrics_) metrics_->OnExperimentFinished(live->record.id, state);
  Publish(live, events::ExperimentChanged(state, error), true);
  std::lock_guard<std::mutex> l(mu_);
  live_.erase(live->record.id);
}

}  // namespace codl::controller
