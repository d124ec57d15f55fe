#include "lib/rpc/health.h"

#include <grpcpp/health_check_service_interface.h>

#include <chrono>

namespace codl::rpc {

bool IsHealthMethod(std::string_view method_path) {
  return method_path == "/grpc.health.v1.Health/Check" ||
         method_path == "/grpc.health.v1.Health/Watch";
}

void EnableHealthService() { grpc::EnableDefaultHealthCheckService(true); }

void SetServing(grpc::Server* server, const std::string& service, bool serving) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;      // built before EnableHealthService
  health->SetServingStatus(serving);  // "" and every name set so far
  health->SetServingStatus(service, serving);
}

void MarkDraining(grpc::Server* server) {
  if (server == nullptr) return;
  if (grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService())
    health->Shutdown();
}

Result<std::unique_ptr<HealthOnlyServer>> HealthOnlyServer::Start(const std::string& listen,
                                                                  const std::string& service) {
  EnableHealthService();
  auto s = std::unique_ptr<HealthOnlyServer>(new HealthOnlyServer());
  grpc::ServerBuilder builder;
  // Probes send a few bytes; nothing else is served here.
  builder.SetMaxReceiveMessageSize(4096);
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  s->others_ = std::make_unique<grpc::CallbackGenericService>();
  builder.RegisterCallbackGenericService(s->others_.get());
  s->server_ = builder.BuildAndStart();
  if (!s->server_ || port == 0)
    return Unavailable("--health-listen: cannot listen on '" + listen + "'");
  s->address_ = listen.substr(0, listen.rfind(':')) + ":" + std::to_string(port);
  SetServing(s->server_.get(), service, true);
  return s;
}

HealthOnlyServer::~HealthOnlyServer() {
  if (!server_) return;
  MarkDraining(server_.get());
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_->Wait();
}

}  // namespace codl::rpc
