// Agent: the per-node daemon. Wires the pieces: AntagonistManager (codl-inject children),
// VictimRunner, ControllerLink (register + heartbeat, renews the lease), the gRPC service, and
// the watchdog that enforces leases. Used by codl-agent and embedded by `codlctl run`.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lib/common/clock.h"
#include "lib/common/result.h"
#include "lib/common/subprocess.h"
#include "lib/common/tunables.h"
#include "lib/rpc/rpc_util.h"

namespace grpc {
class Server;
}

namespace codl::agent {

class AntagonistManager;
class AgentServiceImpl;
class AgentMetrics;
class TelemetryHub;
class ControllerLink;
class LeaseMonitor;
class Placer;

struct AgentOptions {
  std::string controller = tunables::kDefaultControllerAddress;  // controller address
  std::string listen = "127.0.0.1:0";         // this agent's service; TCP needs TLS or `insecure`
  std::string advertise;                      // address the controller dials; default: listen
  std::string agent_id;                       // default: hostname
  std::map<std::string, std::string> labels;  // user labels, added to the detected ones
  // Where injectors may write (the first also holds victims' HOMEs). Empty: CODL_SCRATCH_ROOTS,
  // else the agent's private directory (agent/scratch_roots.h), made at Start.
  std::vector<std::string> scratch_roots;
  // victim.cache.paths may also lie under these (read, evicted, warmed: never written).
  std::vector<std::string> cache_roots;
  // victim.cache's per-trial caps: bytes under its paths (0: the node's memory) and time.
  int64_t cache_max_bytes = 0;
  double cache_max_time_s = 300;
  bool allow_victim = true;                   // may the controller run victim commands here?
  double max_level = 1.0;                     // policy: highest level an antagonist may run at
  double lease_s = tunables::kDefaultLeaseS;  // dead-man switch default
  double heartbeat_interval_s = tunables::kDefaultHeartbeatIntervalS;
  std::string state_dir;  // leftovers file; empty: none
  std::string inject_binary = "codl-inject";
  rpc::TlsFiles tls;
  bool insecure = false;                          // plaintext TCP listen allowed (--insecure)
  std::shared_ptr<const rpc::TokenTable> tokens;  // callers' token hashes; null: none
  std::optional<RunAs> victim_run_as;             // victims' uid/gid; nullopt: the agent's own
  // Set (root agents only): each experiment's victims run as their own uid from this range
  // instead of victim_run_as (agent/victim_identities.h); locks under victim_uid_lock_dir.
  std::optional<std::pair<uid_t, uid_t>> victim_uid_range;
  std::string victim_uid_lock_dir = "/run/codl/victim-uids";
  // Victims get a clean environment (agent/victim_runner.h, CleanVictimEnvironment): the
  // default of a root agent. victim_env_keep: names passed on from the agent's environment.
  std::optional<bool> victim_env_clean;
  std::vector<std::string> victim_env_keep;
  std::string metrics_listen;  // Prometheus /metrics "host:port"; empty = off
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();

  // Cleans up leftovers of a previous run, starts the service and the controller link.
  Status Start();
  void Shutdown();  // stops every antagonist, then the service
  const std::string& address() const { return advertised_; }
  const std::string& agent_id() const { return options_.agent_id; }
  bool registered() const;
  int running_antagonists() const;

 private:
  void WatchdogLoop();
  void CleanLeftovers();
  void WriteLeftoversFile();

  AgentOptions options_;
  std::string advertised_;
  std::unique_ptr<LeaseMonitor> lease_;
  std::unique_ptr<Placer> placer_;
  std::unique_ptr<TelemetryHub> telemetry_;
  std::unique_ptr<AntagonistManager> antagonists_;
  std::unique_ptr<AgentServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::Listener> listener_;
  std::unique_ptr<ControllerLink> link_;
  std::unique_ptr<AgentMetrics> metrics_;
  std::thread watchdog_;
  std::atomic<bool> stopping_{false};
};

// Detected labels: hostname, cores, memory_bytes, gpus, gpu_names, injectors, ...
std::map<std::string, std::string> DetectHostLabels(const std::string& inject_binary);
// The `victim_user` label: the user victims run as (`run_as`, else this process's own user), or
// "uids LO-HI (one per experiment)" with a uid range.
std::string VictimUserLabel(const AgentOptions& options);

}  // namespace codl::agent
