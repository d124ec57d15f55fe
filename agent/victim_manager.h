// VictimManager: the victims of this agent, as AntagonistManager is for antagonists. It owns a
// victim's lifecycle: its start (the distributed common start time, the experiment's own uid,
// the antagonists' environment such as the MPS pipe), its progress published to the trial's
// telemetry subscribers, cache preparation, placement and reaping (through VictimRunner), its
// cancellation by StopAll and at shutdown, and the counts. AgentServiceImpl::RunVictim only
// translates the request and the reply.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/antagonist_manager.h"
#include "agent/telemetry_hub.h"
#include "agent/victim_identities.h"
#include "agent/victim_runner.h"
#include "lib/common/clock.h"
#include "lib/common/result.h"
#include "lib/spec/spec.h"

namespace codl::agent {

struct VictimRequest {
  experiment::VictimSpec spec;
  std::string experiment_id;     // whose uid (victim_uid_range) the victim runs as
  std::string trial_id;          // steps go to this trial's telemetry subscribers; "" none
  int64_t start_at_unix_ns = 0;  // a distributed victim's common start; 0 at once
};

class VictimManager {
 public:
  // antagonists: their environment for the victim (may be null); telemetry: where steps are
  // published (may be null); uid_pool: set, each experiment's victims run as its own uid.
  VictimManager(const Clock* clock, const Placer* placer, VictimIdentity identity,
                std::shared_ptr<VictimIdentities> uid_pool, AntagonistManager* antagonists,
                TelemetryHub* telemetry);
  VictimManager(const VictimManager&) = delete;
  VictimManager& operator=(const VictimManager&) = delete;

  // Runs one victim to its end on the calling thread. An error only when it could not start
  // (no uid for its experiment); how the victim itself ended is in the outcome.
  Result<VictimOutcome> Run(VictimRequest request);

  // Cancels the victims running now; returns how many.
  int StopRunning();
  // Cancels the victims running now and every later one (the agent is shutting down).
  void CancelAll();

  const VictimIdentity& identity() const { return runner_.identity(); }
  int64_t ok_count() const { return ok_.load(); }
  int64_t failed_count() const { return failed_.load(); }

 private:
  class Registration;  // a running victim's cancel flag, known to StopRunning while it runs

  void WaitForStart(int64_t start_at_unix_ns, const std::atomic<bool>& cancel) const;
  void Publish(const std::string& trial_id, v1::TelemetryEvent event) const;

  const Clock* clock_;
  VictimRunner runner_;
  std::shared_ptr<VictimIdentities> uid_pool_;
  AntagonistManager* antagonists_;
  TelemetryHub* telemetry_;
  std::atomic<bool> cancel_all_{false};
  std::mutex running_mu_;
  std::set<std::atomic<bool>*> running_;
  std::atomic<int64_t> ok_{0};
  std::atomic<int64_t> failed_{0};
};

}  // namespace codl::agent
