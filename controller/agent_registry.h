// AgentRegistry: the agents the controller knows, their liveness (heartbeats) and clock offset
// estimates, and node selection for experiments.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "codl/v1/common.pb.h"
#include "codl/v1/controller.pb.h"
#include "controller/agent_client.h"
#include "controller/peer_identity.h"
#include "lib/common/clock.h"
#include "lib/spec/spec.h"

namespace codl::controller {

// Which agents a selection may see and which it should rather not take (node reservations:
// controller/experiment_scheduler.h). Null: no restriction.
struct NodeSelectScope {
  const std::set<std::string>* only = nullptr;   // agents outside it are not seen at all
  const std::set<std::string>* avoid = nullptr;  // `count: N` takes these last
};

class AgentRegistry {
 public:
  // dead_after_s: an agent without a heartbeat for this long is not alive.
  // evict_after_s: ... and is forgotten after this long (the registry never grows without
  // bound); at least dead_after_s.
  // max_agents: registrations beyond this many known agents are refused (16,384: the 10,000-agent
  // scale goal with room; ~100 KiB of controller memory each with mTLS, docs/performance.md).
  AgentRegistry(const Clock* clock, AgentClientFactory factory, double dead_after_s,
                double evict_after_s = 600, size_t max_agents = 16384);

  // `who` is the caller (PeerIdentityOf); an in-process caller passes none. A live agent id
  // can only be re-registered by the same identity: anyone else would redirect the
  // controller's calls (victims, antagonists) to their own address. `node`: the host as the
  // agent found it (absent from agents older than NodeSnapshot). Nor, in any security mode, by
  // another agent process: while the id's agent is alive, a registration from another
  // `session` (RegisterAgentRequest.session_id) or address is refused (ALREADY_EXISTS, naming
  // both); a restarted agent takes over once its predecessor is silent past dead_after_s.
  Status Register(const v1::AgentInfo& info, const PeerIdentity& who = {},
                  const v1::NodeSnapshot& node = {}, const std::string& session = "");
  // False when the agent is unknown (the controller restarted, or it was evicted) or the caller
  // is not the identity that registered it: it must (re-)register. load_avg_1m < 0: the agent
  // could not read it (the last known value stays).
  // A heartbeat from another session than the registered one ("" matches any) is not counted.
  bool Heartbeat(const std::string& agent_id, double rtt_s, double offset_s, int running,
                 const PeerIdentity& who = {}, double load_avg_1m = -1,
                 const std::string& session = "");

  // The snapshot the agent registered with (empty when unknown).
  v1::NodeSnapshot Snapshot(const std::string& agent_id) const;
  // The agent's 1-minute load average from its latest heartbeat; -1 when unknown.
  double LoadAverage1m(const std::string& agent_id) const;

  std::vector<v1::AgentInfo> List() const;  // sorted by id, alive computed now
  std::shared_ptr<AgentClient> Client(const std::string& agent_id) const;
  bool Alive(const std::string& agent_id) const;
  // Monotonic seconds of its last registration or counted heartbeat; -1 for an unknown id.
  double LastSeen(const std::string& agent_id) const;
  // The registering process's session ("" for an unknown id): a restarted agent has a new one.
  std::string Session(const std::string& agent_id) const;
  // An agent silent longer than this is not alive.
  double dead_after_s() const { return dead_after_s_; }
  // Whether `who` registered an agent that is alive now.
  bool IsLiveAgent(const PeerIdentity& who) const;
  // Whether `who` registered `agent_id` and that agent is alive now.
  bool IsLiveAgent(const PeerIdentity& who, const std::string& agent_id) const;
  // Agent clock minus controller clock, from the heartbeat with the smallest round trip among
  // the recent ones (NTP's clock filter: the least-delayed sample is the least biased).
  double ClockOffset(const std::string& agent_id) const;

  using SelectScope = NodeSelectScope;
  // Alive agents matching the selector, sorted by id; error names the selector when none match.
  // `count: N` takes the first N in id order, those in scope.avoid after all others.
  Result<std::vector<std::string>> Select(const experiment::NodeSelector& sel,
                                          SelectScope scope = {}) const;

 private:
  struct Entry {
    v1::AgentInfo info;
    std::shared_ptr<AgentClient> client;
    double last_heartbeat_s = 0;                    // monotonic
    std::deque<std::pair<double, double>> samples;  // (rtt, offset)
    PeerIdentity owner;                             // who registered it
    std::string session;                            // the registering agent process's
    v1::NodeSnapshot node;
    double load_avg_1m = -1;
  };
  bool AliveLocked(const Entry& e) const;
  bool ExpiredLocked(const Entry& e, double now_s) const;  // silent longer than evict_after_s_
  // Forgets expired agents; walks the registry at most once per kEvictSweepS.
  void EvictLocked();

  static constexpr double kEvictSweepS = 1;

  const Clock* clock_;
  AgentClientFactory factory_;
  double dead_after_s_;
  double evict_after_s_;
  size_t max_agents_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> agents_;
  bool swept_once_ = false;
  double last_sweep_s_ = 0;  // monotonic
};

std::string DescribeSelector(const experiment::NodeSelector& sel);

}  // namespace codl::controller
