// The rpc edge: builds channels and servers for "unix:/path" or "host:port" addresses, sets
// deadlines and checks credentials. Status conversion is in status.h (included here for the
// callers). Nothing above this folder constructs grpc::Status or grpc::ClientContext by hand.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "lib/common/result.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/connection_registry.h"
#include "lib/rpc/listener.h"
#include "lib/rpc/status.h"

namespace codl::rpc {

// Client context with a deadline (every client call has one) and an optional bearer token.
std::unique_ptr<grpc::ClientContext> MakeContext(double deadline_s);

// Security settings shared by every channel and server.
struct TlsFiles {
  std::string ca;    // PEM CA bundle
  std::string cert;  // PEM certificate
  std::string key;   // PEM private key
  bool enabled() const { return !cert.empty() || !ca.empty(); }
};

struct Endpoint {
  std::string address;  // "unix:/run/codl.sock", "127.0.0.1:7700", "[::1]:7700", "host:7700"
  TlsFiles tls;
  // Servers: plaintext TCP (loopback only) is allowed. Without it a server listens on TLS or
  // a unix socket only, since any local user can reach a loopback port.
  bool insecure = false;
};

// True for unix sockets and loopback addresses (127.0.0.0/8, ::1, localhost).
bool IsLocalAddress(const std::string& address);

// Refuses plaintext on non-loopback addresses; validates TLS files exist (invalid-argument).
Status CheckEndpointSecurity(const Endpoint& e);

Result<std::shared_ptr<grpc::Channel>> MakeChannel(const Endpoint& e);
// The same with credentials built once by the caller (MakeChannelCredentials(e.tls)) and
// shared by many channels: a controller with 1,000 agents must not parse its key and build a
// TLS context 1,000 times.
Result<std::shared_ptr<grpc::Channel>> MakeChannel(
    const Endpoint& e, const std::shared_ptr<grpc::ChannelCredentials>& creds);
// Client credentials for `tls` (insecure when it is not enabled): for callers that build many
// channels with one credentials object.
Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsFiles& tls);
Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Endpoint& e);

// A started server and the address it is reachable at: the listen address with the port the
// kernel bound (":0" asks for an ephemeral one); unix sockets as given. The listener accepts
// for the server: keep it as long as the server serves, and Stop() it before shutting the
// server down (it ends the listener's accept thread, which hands connections to it).
struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  std::string address;
  std::unique_ptr<Listener> listener;  // UnixListener or TcpListener
  void Stop();
};

// The one way both daemons start their gRPC server, and where every call is authorized
// (authz.h) and every connection capped (connection_registry.h): "unix:PATH" through
// UnixListener (peer uid checked, private directory); TCP through TcpListener, TLS with the
// CallAuthorizer, or plaintext loopback only when listen.insecure (with the CallAuthorizer too:
// tokens when a tokens file is given, else everyone is admin). `tokens`
// may be null. `who` prefixes errors.
Result<StartedServer> StartServer(const Endpoint& listen,
                                  const std::vector<grpc::Service*>& services,
                                  const std::string& who,
                                  std::shared_ptr<const TokenTable> tokens = nullptr);

// The bearer token this process presents as a client (process-wide: a daemon has one
// identity); "" sends none.
void SetBearerToken(const std::string& token);
const std::string& BearerToken();

std::string NewIdempotencyKey();
int64_t UnixNanosNow();

// Turns off Abseil's mutex deadlock detection for the process. gRPC's locks are absl::Mutex,
// and Debian builds Abseil without NDEBUG, so every lock and unlock maintained a global
// lock-order graph: 5.6 % of the controller's CPU at 2,000 heartbeating agents
// (docs/performance.md). A debugging aid, not a safety check; StartServer calls it.
void DisableMutexDeadlockDetection();

}  // namespace codl::rpc
