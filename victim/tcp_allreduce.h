// The allreduce between processes (`codl-victim run --comm tcp`): one rank per process, on one
// node or many, a ring reduce-scatter + all-gather over TCP — what Gloo's ring and NCCL's socket
// transport do, so a network antagonist between the nodes slows the victim's comm phase as it
// slows a multi-node training job's.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "lib/common/result.h"
#include "victim/device.h"

namespace codl::victim {

struct TcpCommConfig {
  int rank = 0;
  int world_size = 2;
  std::string master_host;  // rank 0's address; dialled by ranks > 0 only
  int master_port = 29500;  // rank 0 listens here (every address)
  // Setup: ranks > 0 retry reaching rank 0 (and their ring neighbour) for this long, and rank 0
  // waits this long for them all.
  double connect_timeout_s = 60;
  // A step: an allreduce that moves no byte for this long fails (a peer hung without closing).
  double io_timeout_s = 300;
};

// Connects the ring before returning, so that setup never lands in a step's time. The error
// says which rank could not reach which address, or which peer disagreed (world size, bytes).
// Allreduce(rank) ignores its argument: this process is one rank, `config.rank`. Gradients
// are averaged, as in the shared-memory allreduce. Peers must share the byte order (floats are
// sent as they lie in memory).
Result<std::unique_ptr<Communicator>> MakeTcpCommunicator(const TcpCommConfig& config,
                                                          Device* device, size_t floats);

}  // namespace codl::victim
