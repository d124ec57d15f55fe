#include "controller/experiment_scheduler.h"

#include <malloc.h>

#include <algorithm>
#include <memory>
#include <random>

#include <spdlog/spdlog.h>

#include "controller/experiment_scheduler_live.h"
#include "lib/common/utf8.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/status.h"

namespace codl::controller {

namespace scheduler_internal {
// A plan of 100,000 trials is ~30 MB of small allocations; once its experiment ends glibc keeps
// the freed pages in its arenas (RSS stayed ~180 MB above the start after a large cancel).
// malloc_trim hands them back to the kernel.
void ReturnFreedMemory() { malloc_trim(0); }
}  // namespace scheduler_internal

using scheduler_internal::ReturnFreedMemory;

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
  started_s_ = clock_->MonotonicSeconds();
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
  if (worker_.joinable()) worker_.join();  // it joins every experiment's thread
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
                                                                   const std::string& source_path,
                                                                   const std::string& submitter) {
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
  r.submitter = submitter;
  r.yaml = yaml;
  r.state = ExperimentState::kQueued;
  r.seed = live->spec.seed;
  r.total_trials = static_cast<int>(live->plan.size());
  r.created_unix_ms = clock_->UnixNanos() / 1'000'000;
  if (Status s = store_->CreateExperiment(r); !s.ok()) return s;
  if (Status s = Enqueue(live); !s.ok()) return s;
  // Names are the submitter's bytes: escaped, so a CR/LF cannot add a line to the log.
  spdlog::info("experiment {} '{}' queued by {}: {} trials", r.id, TerminalSafe(r.name),
               TerminalSafe(submitter.empty() ? "an unknown caller" : submitter), r.total_trials);
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
    redispatch_ = true;
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

namespace {

// Why a stored trial that did not commit was cut off: its own kind when it has one (an agent
// lost with no agent back), else a controller restart or a cancel.
FailureKind CutOffKind(const TrialRecord& t) {
  if (t.failure != FailureKind::kNone) return t.failure;
  return t.error == store::Store::kTrialCutOffError ? FailureKind::kControllerRestart
                                                    : FailureKind::kCancelled;
}

}  // namespace

Status ExperimentScheduler::SortStoredTrials(const std::shared_ptr<Live>& live,
                                             std::vector<TrialRecord> trials, bool retry_failed,
                                             int* retried) {
  const experiment::RetryPolicy& policy = live->spec.retry;
  for (auto& t : trials) {
    const bool committed = Committed(t.state);
    if (committed && (t.state != TrialState::kFailed || !retry_failed)) {
      if (t.state == TrialState::kFailed) ++live->failed;
      live->resume.kept.push_back(std::move(t));
      continue;
    }
    const FailureKind why = committed ? t.failure : CutOffKind(t);
    if (why == FailureKind::kControllerRestart && !policy.Retries(why, t.attempt)) {
      // Its policy allows no other attempt: it failed, for a reason that says so.
      t.state = TrialState::kFailed;
      t.failure = why;
      t.error = "cut off by a controller restart at attempt " + std::to_string(t.attempt) +
                " (retry allows " + std::to_string(policy.attempts) + ")";
      if (Status s = store_->SaveTrial(t); !s.ok()) return s;
      ++live->failed;
      live->resume.kept.push_back(std::move(t));
      continue;
    }
    // It runs again: this attempt is kept as one that did not count.
    if (Status s = store_->SaveAttempt(live->record.id, AttemptOf(t, why)); !s.ok()) return s;
    live->resume.attempts_used[t.index] = t.attempt;
    if (committed) ++*retried;
  }
  return Status::Ok();
}

Result<ExperimentScheduler::Resumed> ExperimentScheduler::Resume(const std::string& id,
                                                                 bool retry_failed) {
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
  auto trials = store_->GetTrials(rec->id, /*with_series=*/false);
  if (!trials.ok()) return trials.status();
  const bool has_failed = std::any_of(trials->begin(), trials->end(), [](const TrialRecord& t) {
    return t.state == TrialState::kFailed;
  });
  const bool resumable = was == ExperimentState::kInterrupted ||
                         was == ExperimentState::kCancelled || was == ExperimentState::kFailed ||
                         (was == ExperimentState::kDone && retry_failed && has_failed);
  if (!resumable) {
    return FailedPrecondition(
        "experiment " + rec->id + " is " + ToString(was) +
        (was == ExperimentState::kDone
             ? retry_failed ? ": every planned trial ran and none failed; nothing to retry"
               : has_failed ? ": every planned trial ran; its failed trials run "
                              "again with `codlctl resume " +
                                  rec->id + " --retry-failed`"
                            : ": every planned trial ran; nothing to resume"
             : ": only an interrupted, cancelled or failed one can be resumed (another process "
               "may be running it)"));
  }
  auto live_or = LiveFromRecord(*rec);
  if (!live_or.ok()) return live_or.status().WithContext("experiment " + rec->id);
  std::shared_ptr<Live> live = *live_or;
  int retried = 0;
  if (Status s = SortStoredTrials(live, std::move(*trials), retry_failed, &retried); !s.ok())
    return s;
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
  spdlog::info("experiment {} '{}' resumed ({} before): {} of {} trials kept, {} failed run again",
               rec->id, TerminalSafe(rec->name), ToString(was), live->completed, rec->total_trials,
               retried);
  return Resumed{rec->id, rec->total_trials, live->completed, was, retried};
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
  s.set_submitter(live.record.submitter);
  if (live.record.state == ExperimentState::kQueued) s.set_waiting_for(live.waiting_for);
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
      finished.completed += Committed(t.state);
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
      redispatch_ = true;  // what waited behind it may start
      cv_.notify_all();
    } else {
      cancelling = true;
    }
  }
  if (cancelling) {
    // The runner notices the flag between steps; a victim mid-run is stopped by its agent.
    runner_->StopPlaced(live->record.id, "experiment " + live->record.id + " cancelled");
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

}  // namespace codl::controller
