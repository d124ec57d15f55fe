// What the receiver of a net pair (rank 0, ranks=2) publishes through the controller's
// rendezvous, and how the sender (rank 1) finds it. The value is text:
//   codl-net1 <token: 32 hex chars> <host:port> [<host:port> ...]
// The token is random per receiver and is the first thing it writes on every accepted
// connection; the sender streams only after reading it back. A bind address that is not
// reachable from the sender (127.0.0.1 across hosts, a private address that is another host's
// on the sender's network) thus fails with a clear error instead of flooding whoever answers.
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
