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

namespace {

// "nodes a, b" / "node a".
std::string NodeList(const std::vector<std::string>& nodes) {
  std::string out = nodes.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < nodes.size(); ++i) out += (i ? ", " : "") + TerminalSafe(nodes[i]);
  return out;
}

}  // namespace

void ExperimentScheduler::DispatchLocked(std::vector<std::shared_ptr<Live>>* waiting) {
  // node -> the running experiment that holds it, or the earlier queued one it is promised to
  std::map<std::string, std::string> held, promised;
  std::set<std::string> taken;  // both
  for (const auto& [id, live] : live_) {
    if (live->record.state != ExperimentState::kRunning) continue;
    for (const auto& n : live->reserved) held[n] = id;
  }
  for (const auto& [n, id] : held) taken.insert(n);
  for (auto it = queue_.begin(); it != queue_.end();) {
    std::shared_ptr<Live> live = *it;
    auto nodes = runner_->Nodes(live->spec, {nullptr, &taken});
    if (!nodes.ok()) {
      live->placement = nodes.status();  // fails now, with the runner's own words
      it = queue_.erase(it);
      StartLocked(live);
      continue;
    }
    // Why it waits, grouped by who has its nodes: "nodes a, b held by X, node c promised to Y
    // (queued earlier)".
    std::map<std::pair<int, std::string>, std::vector<std::string>> by_owner;
    for (const auto& n : *nodes) {
      if (auto h = held.find(n); h != held.end()) {
        by_owner[{0, h->second}].push_back(n);
      } else if (auto p = promised.find(n); p != promised.end()) {
        by_owner[{1, p->second}].push_back(n);
      }
    }
    if (by_owner.empty()) {
      live->reserved = std::move(*nodes);
      for (const auto& n : live->reserved) {
        held[n] = live->record.id;
        taken.insert(n);
      }
      it = queue_.erase(it);
      StartLocked(live);
      continue;
    }
    std::string why = "waits for ";
    bool first = true;
    for (const auto& [owner, ns] : by_owner) {
      why += (first ? "" : ", ") + NodeList(ns) +
             (owner.first == 0 ? " held by " + owner.second
                               : " promised to " + owner.second + " (queued earlier)");
      first = false;
    }
    if (why != live->waiting_for) {
      live->waiting_for = why;
      waiting->push_back(live);
    }
    for (const auto& n : *nodes) {
      promised.emplace(n, live->record.id);
      taken.insert(n);
    }
    ++it;
  }
}

void ExperimentScheduler::StartLocked(const std::shared_ptr<Live>& live) {
  live->record.state = ExperimentState::kRunning;
  live->started_s = clock_->MonotonicSeconds();
  live->waiting_for.clear();
  const uint64_t run = next_run_++;
  runs_[run] = std::thread([this, live, run] {
    RunOne(live, live->placement);
    std::lock_guard<std::mutex> l(mu_);
    finished_runs_.push_back(run);
    redispatch_ = true;
    cv_.notify_all();
  });
}

void ExperimentScheduler::WorkerLoop() {
  std::unique_lock<std::mutex> l(mu_);
  if (hold_s_ > 0) {
    cv_.wait_for(l, std::chrono::duration<double>(hold_s_), [this] { return stopping_; });
  }
  while (!stopping_) {
    for (uint64_t run : finished_runs_) {
      // Its thread said so as its last step: the join returns at once.
      runs_[run].join();
      runs_.erase(run);
    }
    if (!finished_runs_.empty()) {
      finished_runs_.clear();
      l.unlock();
      ReturnFreedMemory();
      l.lock();
    }
    std::vector<std::shared_ptr<Live>> waiting;
    DispatchLocked(&waiting);
    if (!waiting.empty()) {
      l.unlock();
      for (const auto& w : waiting) {
        Publish(w, events::Note(v1::Note::INFO, "queued: " + w->waiting_for), false);
      }
      l.lock();
    }
    // Woken by a submission, a cancel or an experiment's end; the tick notices agents that
    // came or went.
    auto woken = [this] { return stopping_ || redispatch_; };
    if (queue_.empty()) {
      cv_.wait(l, woken);
    } else {
      cv_.wait_for(l, std::chrono::seconds(1), woken);
    }
    redispatch_ = false;
  }
  // Queued experiments stay queued in the store; the next controller start queues them again
  // (or marks them interrupted) rather than silently dropping them. Running ones were
  // cancelled by Shutdown.
  std::map<uint64_t, std::thread> runs = std::move(runs_);
  runs_.clear();
  l.unlock();
  for (auto& [run, t] : runs) t.join();
}

void ExperimentScheduler::RunOne(const std::shared_ptr<Live>& live, const Status& placement) {
  (void)store_->UpdateExperiment(live->record.id, ExperimentState::kRunning, "", 0);
  Publish(live,
          events::ExperimentChanged(ExperimentState::kRunning,
                                    StartedLine(live->spec, live->plan.size())),
          false);
  Listener listener(this, live);
  Status s = placement.ok() ? runner_->Run(live->record, live->spec, live->plan, live->cancel,
                                           &listener, live->resume, &live->reserved)
                            : placement;
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
  } else if (!s.ok() && s.code() == StatusCode::kAborted) {
    // Lost agents beyond agent_grace: stopped, not failed; `codlctl resume` continues it.
    state = ExperimentState::kInterrupted;
    error = s.error();
    code = s.code();
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
