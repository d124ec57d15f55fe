// The victim's instances in one run (a trial, a warm-up): one on one node, or one rank per node
// for victim.distributed, each with the torch.distributed environment. All ranks are started
// at once; the run's record is rank 0's; a rank that fails or times out stops the others.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codl/v1/agent.pb.h"
#include "controller/agent_client.h"
#include "lib/common/records.h"
#include "lib/common/result.h"
#include "lib/spec/spec.h"

namespace codl::controller {

// MASTER_ADDR: the host part of the address rank 0's agent registered with ("10.0.0.7:7001",
// "[fd00::7]:7001", "node-a:7001"). A wildcard (0.0.0.0, ::) is refused: the other ranks
// could not dial it; the error says to start that agent with --advertise.
Result<std::string> MasterAddress(const std::string& agent_id, const std::string& registered);

struct VictimRank {
  std::string node;
  std::shared_ptr<AgentClient> client;  // null: the agent is gone
  v1::RunVictimRequest request;
};

// One request per node, in rank order. `base` carries the trial id, victim and placement; each
// rank gets its own idempotency key and, when distributed, DistributedEnvironment() added to
// the victim's env. master_addr is ignored for a single instance.
std::vector<VictimRank> VictimRanks(const v1::RunVictimRequest& base,
                                    const std::vector<std::string>& nodes,
                                    const std::vector<std::shared_ptr<AgentClient>>& clients,
                                    bool distributed, const std::string& master_addr,
                                    int master_port);

// What one run of the victim gave.
struct VictimRun {
  v1::RunVictimReply reply;  // rank 0's: the run's record (its error names a failed rank)
  // Several ranks: every rank that replied, rank 0 first, each summarized from its steps
  // (rank 0's steps stay in `reply`). Empty for a single instance.
  std::vector<RankRecord> ranks;
  // Several ranks: the node telemetry of each node a rank after 0 ran on (rank 0's node is in
  // `reply`), once per node, in rank order.
  std::vector<NodeTelemetry> node_telemetry;
};

// Issues every rank's RunVictim at once and waits for all. The first rank to fail (or time
// out) makes the others stop (StopAll on their agents, which also stops that node's
// antagonists: the trial has failed anyway) and the error names it: "victim rank 1 (node b)
// failed: ...". A single instance's error is its own, unchanged.
Result<VictimRun> RunVictimRanks(std::vector<VictimRank> ranks, double deadline_s);

}  // namespace codl::controller
