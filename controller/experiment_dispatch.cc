// The scheduler's dispatcher: which queued experiment starts next (DispatchLocked: FIFO with
// reserved nodes and backfill, docs/control-plane.md), and the thread that runs each one.
#include <spdlog/spdlog.h>

#include "controller/experiment_scheduler.h"
#include "controller/experiment_scheduler_live.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/status.h"

namespace codl::controller {

namespace {

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
    if (!nodes.ok() && nodes.code() == StatusCode::kFailedPrecondition &&
        clock_->MonotonicSeconds() < started_s_ + rejoin_grace_s_) {
      // No live agent for it yet, and the controller has just started: its agents may not have
      // re-registered. It keeps its place in the queue (and promises no node) until the grace
      // ends, then fails with the registry's words.
      const std::string why = "waits for its agents to register (up to " +
                              FormatDuration(rejoin_grace_s_) +
                              " after the controller's start): " + nodes.error();
      if (why != live->waiting_for) {
        live->waiting_for = why;
        waiting->push_back(live);
      }
      ++it;
      continue;
    }
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
      scheduler_internal::ReturnFreedMemory();
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
