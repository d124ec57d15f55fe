// The standard gRPC health service (grpc.health.v1.Health: Check and Watch) in both daemons,
// for load balancers and Kubernetes `grpc:` probes. gRPC's built-in implementation serves it;
// this file says which service names it reports and when:
//   ""  and the daemon's own service ("codl.v1.Agent" / "codl.v1.Controller"): SERVING once
//   started, NOT_SERVING from the moment a SIGTERM starts the drain (Watch streams see it).
// Health calls need no role: CallAuthorizer admits exactly IsHealthMethod (docs/security.md,
// "Health checks"). HealthOnlyServer serves it alone on a plaintext port, for probes that
// cannot present the mTLS certificate the main port demands (docs/deploy.md).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include "lib/common/result.h"

namespace codl::rpc {

inline constexpr const char* kHealthService = "grpc.health.v1.Health";

// "/grpc.health.v1.Health/Check" or "/grpc.health.v1.Health/Watch".
bool IsHealthMethod(std::string_view method_path);

// Turns gRPC's built-in health service on for every server built afterwards (process-wide).
void EnableHealthService();

// Reports "" and `service` as SERVING (or NOT_SERVING) on `server`.
void SetServing(grpc::Server* server, const std::string& service, bool serving);
// Draining: every name NOT_SERVING for good (later SetServing calls are ignored).
void MarkDraining(grpc::Server* server);

// A plaintext server that carries nothing but the health service.
class HealthOnlyServer {
 public:
  // `listen`: host:port (port 0: ephemeral). Reports "" and `service` SERVING.
  static Result<std::unique_ptr<HealthOnlyServer>> Start(const std::string& listen,
                                                         const std::string& service);
  ~HealthOnlyServer();
  void Drain() { MarkDraining(server_.get()); }
  const std::string& address() const { return address_; }

 private:
  // Answers every other method UNIMPLEMENTED; also gives the server the callback methods it
  // needs to poll at all (the built-in health service is added only as it starts).
  std::unique_ptr<grpc::CallbackGenericService> others_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace codl::rpc
