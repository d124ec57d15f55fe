// AntagonistManager: the agent's table of antagonists, each a `codl-inject` child (InjectChild:
// spawn, protocol, summary), and their leases (dead-man switch): start, look up, stop, calibrate,
// and what the table as a whole knows (learned setup times, calibrated peaks, victim variables,
// metrics). The agent's gRPC layer is a thin shell over this class.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/inject_child.h"
#include "agent/lease_monitor.h"
#include "lib/common/clock.h"
#include "lib/common/records.h"
#include "lib/common/result.h"
#include "lib/spec/spec.h"

namespace codl::agent {

struct InjectorRequest {
  std::string injector;
  std::map<std::string, std::string> options;
  bool max = false;
  double rate = 0;  // absolute target in the injector's unit (when !max)
  double max_duration_s = 3600;
  int64_t start_at_unix_ns = 0;         // common start (agent clock); 0 = now
  double start_timeout_s = 0;           // give up on the load's start after this; 0 = default
  experiment::PlacementSpec placement;  // cpus / numa; empty: anywhere
  // Set: a workload antagonist (injector "workload"): `command` runs instead of codl-inject,
  // under the agent's supervision like any antagonist (lease, StopAll, leftovers), and is
  // stopped after max_duration_s by the agent itself.
  std::vector<std::string> command;
  std::optional<InjectChild::Spec::Workload> workload;
};

class TelemetryHub;
class Placer;

struct AntagonistPolicy {
  std::string inject_binary = "codl-inject";
  RendezvousRelay relay;
  TelemetryHub* telemetry = nullptr;       // live samples go here too (may be null)
  std::vector<std::string> scratch_roots;  // passed to codl-inject as --scratch-root
  double max_duration_s = 4 * 3600;        // cap on any request
  double default_lease_s = 10;             // when a start request carries no lease
  const Placer* placer = nullptr;          // null: placement requests are refused
};

class AntagonistManager {
 public:
  AntagonistManager(AntagonistPolicy policy, const LeaseMonitor* lease, const Clock* clock);
  ~AntagonistManager();  // stops everything

  struct Started {
    int64_t pid = 0;
    int64_t started_unix_ns = 0;
    // codl-inject's account of a synchronized start (docs/injectors.md); ready_unix_ns 0: none.
    int64_t ready_unix_ns = 0;  // its setup and calibration were done, the wait began
    double setup_s = 0;         // Setup()'s measured duration
  };
  Result<Started> Start(const std::string& id, const InjectorRequest& req, double lease_s);

  using Snapshot = InjectChild::Live;
  Result<Snapshot> Get(const std::string& id) const;

  using Final = InjectChild::Outcome;
  // Stops (SIGTERM, then SIGKILL after a grace period) and forgets the antagonist.
  Result<Final> Stop(const std::string& id);
  int StopAll(const std::string& reason);
  int Running() const;

  // Stops antagonists whose lease ran out. Called by the agent's watchdog every ~100 ms.
  int EnforceLeases();

  struct Calibration {
    double peak_rate = 0;
    std::string unit;
  };
  // Runs `codl-inject INJECTOR --calibrate` synchronously (at most kMaxCalibrationS), as a
  // registered antagonist: StopAll, the lease and Children() cover it while it runs.
  Result<Calibration> Calibrate(const std::string& injector,
                                const std::map<std::string, std::string>& options,
                                double duration_s);
  static constexpr double kMaxCalibrationS = 600;
  // The setup time to expect with these options on this node, for the controller's common
  // start: the injector's own estimate (Injector::SetupEstimateS), raised to kLearnedSetupMargin
  // x the setup the last synchronized start of the same injector and options measured here (a
  // loaded or shared disk can be slower than any fixed rate assumed). An error for an unknown
  // injector or invalid options (the start would refuse them too).
  Result<double> EstimateSetupS(const std::string& injector,
                                const std::map<std::string, std::string>& options) const;
  static constexpr double kLearnedSetupMargin = 1.2;
  // The peak the last successful calibration of `injector` on this agent measured: what the
  // agent's max_level policy compares absolute rates against.
  std::optional<double> CalibratedPeak(const std::string& injector) const;

  // Counters and the latest achieved rate per injector (summed over its running antagonists),
  // for the agent's metrics.
  struct Stats {
    int64_t started = 0;
    int64_t lease_expirations = 0;
    std::map<std::string, std::pair<double, std::string>> achieved_by_injector;  // rate, unit
  };
  Stats GetStats() const;

  // Environment a victim needs to share what running antagonists set up: the variables of their
  // VictimEnv records (only injectors declaring exports_victim_env; safe names only), e.g. an
  // mps_cotenant's CUDA_MPS_PIPE_DIRECTORY.
  std::map<std::string, std::string> VictimEnvironment() const;

  // Every (pid, start time) the manager has running, for the agent's leftovers file.
  std::vector<std::pair<int64_t, uint64_t>> Children() const;

 private:
  // A table entry: the child and the lease it runs under.
  struct Antagonist {
    std::shared_ptr<InjectChild> child;
    std::string injector;
    double lease_s = 10;
    double max_run_s = 0;  // > 0: the agent stops it after this long (a workload)
  };
  // A non-zero rank of a collective injector: rank 0's rendezvous value, as the option the
  // injector reads it from (nothing to add for anyone else).
  Status FetchRendezvous(const std::string& id, const injectors::Capabilities& caps,
                         std::map<std::string, std::string>* options) const;
  // codl-inject's command line for a run: options, intensity, --duration, --start-at.
  std::vector<std::string> RunArgs(const InjectorRequest& req, bool deferred) const;
  std::vector<std::string> BaseArgs(const std::string& injector,
                                    const std::map<std::string, std::string>& options) const;
  // Spawns and registers (so StopAll, the leases and Children() reach it at once).
  Result<std::shared_ptr<InjectChild>> Launch(InjectChild::Spec spec, double lease_s,
                                              double max_run_s = 0);
  Result<Started> StartWorkload(const std::string& id, const InjectorRequest& req, double lease_s);
  // The placement of a request (Placer::Prepare), or why it cannot be placed.
  Status Place(const std::string& id, const InjectorRequest& req, InjectChild::Spec* spec) const;
  void Unregister(const std::string& id);
  // The running entries, copied out of the table: callers query the children without mu_ held,
  // so the table's lock never nests with a child's.
  std::vector<Antagonist> Entries() const;

  AntagonistPolicy policy_;
  const LeaseMonitor* lease_;
  const Clock* clock_;
  mutable std::mutex mu_;  // the table and the counters below; never held while calling a child
  std::map<std::string, Antagonist> antagonists_;
  int64_t started_ = 0;
  int64_t lease_expirations_ = 0;
  int64_t calibrations_ = 0;
  std::map<std::string, double> peaks_;  // injector -> calibrated peak rate
  // SetupKey(injector, options) -> the setup time its last synchronized start measured.
  std::map<std::string, double> measured_setup_s_;
};

}  // namespace codl::agent
