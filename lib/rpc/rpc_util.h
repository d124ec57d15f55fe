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
  bool insecure = false;  // plaintext; refused on non-loopback addresses
};

// True for unix sockets and loopback addresses (127.0.0.0/8, ::1, localhost).
bool IsLocalAddress(const std::string& address);

// Refuses plaintext on non-loopback addresses; validates TLS files exist (invalid-argument).
Status CheckEndpointSecurity(const Endpoint& e);

Result<std::shared_ptr<grpc::Channel>> MakeChannel(const Endpoint& e);
// Client credentials for `tls` (insecure when it is not enabled): for callers that build many
// channels with one credentials object.
Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsFiles& tls);
Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Endpoint& e);

// A started server and the address it is reachable at: the listen address with the port the
// kernel bound (":0" asks for an ephemeral one); unix sockets as given.
struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

// The one way both daemons start their gRPC server: credentials for `listen` (plaintext only on
// loopback/unix), the services registered, the bound port read back. `who` prefixes errors.
Result<StartedServer> StartServer(const Endpoint& listen,
                                  const std::vector<grpc::Service*>& services,
                                  const std::string& who);

// Bearer token: when set (process-wide), clients send it and servers require it.
void SetBearerToken(const std::string& token);
const std::string& BearerToken();
// Returns OK when the call carries the configured token (or none is configured), else
// UNAUTHENTICATED.
grpc::Status CheckBearer(const grpc::CallbackServerContext* ctx);

std::string NewIdempotencyKey();
int64_t UnixNanosNow();

}  // namespace codl::rpc
