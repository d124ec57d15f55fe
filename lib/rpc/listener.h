// A daemon endpoint that accepts connections itself and hands them to the gRPC server, so that
// it can cap and close them (connection_registry.h): UnixListener ("unix:/path") and
// TcpListener ("host:port", TLS or token).
#pragma once

#include <grpcpp/grpcpp.h>

namespace codl::rpc {

class Listener {
 public:
  virtual ~Listener() = default;
  // Starts the accept thread; connections go to `server` (which must outlive Stop).
  virtual void Start(grpc::Server* server) = 0;
  // Stops accepting. Connections already handed over stay with the server until it shuts down.
  // Call it before shutting the server down.
  virtual void Stop() = 0;
};

}  // namespace codl::rpc
