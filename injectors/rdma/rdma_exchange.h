// The rdma pair's TCP half of the connection setup (plain sockets, no verbs, so it is tested
// everywhere). Rank 0's connection info reaches rank 1 through the controller's rendezvous
// (rdma_wire.h: Endpoint); rank 1's goes back over a TCP connection to an address rank 0
// published, after net's token handshake (net_socket.h), as one line. Then:
//   rank 0: connect its QPs to rank 1's info, answer "ready" (or "error <why>"),
//           wait for rank 1's "ready";
//   rank 1: on "ready", connect its QPs to rank 0's info and answer "ready".
// So neither side posts before the other's QPs can receive. The connection stays open: its
// close tells each side that the other process has gone.
#pragma once

#include <functional>
#include <string>

#include "injectors/core/stop_token.h"
#include "injectors/rdma/rdma_wire.h"
#include "lib/common/result.h"

namespace codl::injectors::rdma {

// Moves this side's QPs to RTR/RTS towards the peer's half.
using ConnectFn = std::function<Status(const ConnInfo& remote)>;

// Rank 0: accepts on listen_fd until a connection presents `token` (others are closed without a
// byte), within timeout_s or until `stop`. The open connection on success.
Result<int> AcceptRank1(int listen_fd, const std::string& token, double timeout_s,
                        const StopToken& stop, const ConnectFn& connect);

// Rank 1: tries rank 0's addresses in order, sends `local`, connects. The open connection on
// success, and the address that answered in *peer.
Result<int> JoinRank0(const Endpoint& rank0, const ConnInfo& local, const ConnectFn& connect,
                      std::string* peer);

}  // namespace codl::injectors::rdma
