// Node telemetry windows on antagonist-only nodes: see node_windows.h.
#include "agent/node_windows.h"

#include <spdlog/spdlog.h>

#include "lib/common/tunables.h"
#include "lib/common/utf8.h"

namespace codl::agent {

NodeWindows::NodeWindows(const Clock* clock, TelemetrySources sources)
    : clock_(clock), sources_(std::move(sources)), ticker_([this] { Loop(); }) {}

NodeWindows::~NodeWindows() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  ticker_.join();
}

Status NodeWindows::Begin(const std::string& trial_id, double lease_s) {
  if (trial_id.empty() || trial_id.size() > kMaxTrialIdBytes)
    return InvalidArgument("trial_id: give 1 to " + std::to_string(kMaxTrialIdBytes) + " bytes");
  if (!(lease_s >= tunables::kMinLeaseS && lease_s <= kMaxLeaseS))
    return InvalidArgument("lease_s " + std::to_string(lease_s) + " is out of range [" +
                           std::to_string(tunables::kMinLeaseS) + ", " +
                           std::to_string(kMaxLeaseS) + "]");
  std::lock_guard<std::mutex> l(mu_);
  const double now = clock_->MonotonicSeconds();
  if (auto it = open_.find(trial_id); it != open_.end()) {
    it->second.deadline_s = now + lease_s;  // a retried call: the window stays as it began
    return Status::Ok();
  }
  if (open_.size() >= kMaxOpen)
    return ResourceExhausted("already " + std::to_string(kMaxOpen) +
                             " node telemetry windows open on this agent");
  Window w;
  w.sampler = std::make_unique<NodeTelemetrySampler>(sources_);
  w.sampler->Start(now);
  w.deadline_s = now + lease_s;
  open_.emplace(trial_id, std::move(w));
  cv_.notify_all();
  return Status::Ok();
}

Result<NodeTelemetry> NodeWindows::End(const std::string& trial_id) {
  std::unique_ptr<NodeTelemetrySampler> sampler;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = open_.find(trial_id);
    if (it == open_.end())
      return NotFound("no node telemetry window is open for trial '" + trial_id +
                      "' (never begun, already ended, or dropped when its lease ran out)");
    sampler = std::move(it->second.sampler);
    open_.erase(it);
  }
  return sampler->Finish(clock_->MonotonicSeconds());
}

size_t NodeWindows::open() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_.size();
}

void NodeWindows::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (open_.empty()) {
      cv_.wait(l, [this] { return stop_ || !open_.empty(); });
      continue;
    }
    const double now = clock_->MonotonicSeconds();
    for (auto it = open_.begin(); it != open_.end();) {
      if (now > it->second.deadline_s) {
        spdlog::warn("node telemetry window of trial '{}' dropped: not ended within its lease",
                     TerminalSafe(it->first));
        it = open_.erase(it);
        continue;
      }
      it->second.sampler->Tick(now);
      ++it;
    }
    cv_.wait_for(l, std::chrono::duration<double>(NodeTelemetrySampler::kMemSampleS));
  }
}

}  // namespace codl::agent
