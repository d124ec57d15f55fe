// What the receiver of a net pair (rank 0, ranks=2) publishes through the controller's
// rendezvous, and how the sender (rank 1) finds it. The value is text:
//   codl-net1 <token: 32 hex chars> <host:port> [<host:port> ...]
// The token is random per rank 0 and travels only through the controller's rendezvous. Rank 1
// writes it first on every connection; rank 0 uses a connection only once it has read it, and
// writes it back; rank 1 uses the connection only once it has read that. So a stranger that
// connects to rank 0's port gets no data, and an address that leads elsewhere from rank 1's
// side (127.0.0.1 across hosts, a private address that is another host's there) fails with a
// clear error instead of flooding whoever answers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors {

struct NetEndpoint {
  std::string token;                   // 32 lowercase hex characters
  std::vector<std::string> addresses;  // host:port or [v6]:port, in the order to try
};

std::string EncodeNetEndpoint(const NetEndpoint& e);
// Exact messages (tested): "not a net endpoint (expected 'codl-net1 <token> <host:port>...')",
// "net endpoint token must be 32 hex characters".
Result<NetEndpoint> DecodeNetEndpoint(std::string_view text);

// 16 random bytes from the kernel as 32 hex characters.
std::string NewNetToken();

// The addresses a receiver bound to `bind` on `port` can be reached at: just bind:port for a
// specific address; for a wildcard (0.0.0.0, ::) every up, non-loopback interface address
// (IPv4 first, IPv6 link-local skipped: it needs a scope the sender cannot know), loopback last.
std::vector<std::string> ReachableAddresses(const std::string& bind, int port);

}  // namespace codl::injectors
