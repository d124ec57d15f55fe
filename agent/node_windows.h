// Node telemetry on a node that runs antagonists but not the victim (docs/results.md, "Node
// telemetry"): the controller opens a window there as it starts the victim on another node
// (BeginNodeWindow) and closes it when the victim is done (EndNodeWindow); the agent counts what
// its node did in between, with the sampler the victim's node uses. One thread ticks every open
// window (MemAvailable's minimum, every NodeTelemetrySampler::kMemSampleS). A window not ended
// within its lease (a controller that went away) is dropped; at most kMaxOpen are open.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/node_telemetry.h"
#include "lib/common/clock.h"
#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::agent {

class NodeWindows {
 public:
  static constexpr size_t kMaxOpen = 64;
  static constexpr size_t kMaxTrialIdBytes = 256;
  static constexpr double kMaxLeaseS = 24 * 3600;

  explicit NodeWindows(const Clock* clock, TelemetrySources sources = {});
  ~NodeWindows();  // stops and joins the ticker; open windows are dropped
  NodeWindows(const NodeWindows&) = delete;
  NodeWindows& operator=(const NodeWindows&) = delete;

  // Opens trial_id's window now; one already open for it is kept (a retried call). Refused: an
  // empty or over-long trial id, a lease outside [kMinLeaseS, kMaxLeaseS], kMaxOpen open.
  Status Begin(const std::string& trial_id, double lease_s);
  // Closes trial_id's window: the figures over it (`node` left empty). NotFound when none is
  // open (never begun, already ended, or dropped at its lease).
  Result<NodeTelemetry> End(const std::string& trial_id);
  size_t open() const;

 private:
  struct Window {
    std::unique_ptr<NodeTelemetrySampler> sampler;
    double deadline_s = 0;  // monotonic: dropped unless ended by then
  };
  void Loop();

  const Clock* clock_;
  TelemetrySources sources_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, Window> open_;
  std::thread ticker_;
};

}  // namespace codl::agent
