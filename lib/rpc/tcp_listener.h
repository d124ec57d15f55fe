// TcpListener: the daemons' TCP endpoint ("0.0.0.0:7700", TLS or plaintext with tokens). gRPC's
// own listener neither says when a connection opens or closes nor lets anyone close one, so
// this one binds the address itself, accepts, registers each connection
// (connection_registry.h) and hands it to the server through an external connection acceptor
// with the endpoint's credentials: the TLS handshake and the CallAuthorizer run as on any
// gRPC port. Until its first authorized call names a caller a connection is unauthenticated:
// capped per remote IP and in total (the oldest is closed for a new one) and shut down after
// handshake_timeout. Then it counts for its caller's identity (AttributeConnection).
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "lib/common/result.h"
#include "lib/rpc/listener.h"

namespace codl::rpc {

class TcpListener final : public Listener {
 public:
  // Binds and listens on every address `address` ("host:port", "[v6]:port"; port 0: an
  // ephemeral one, the same for all) resolves to, and registers the acceptor that will carry
  // its connections, with `creds`, in `builder` (before BuildAndStart).
  static Result<std::unique_ptr<TcpListener>> Open(
      const std::string& address, const std::shared_ptr<grpc::ServerCredentials>& creds,
      grpc::ServerBuilder* builder);
  ~TcpListener() override;
  // `server`: the one built by the builder given to Open.
  void Start(grpc::Server* server) override;
  void Stop() override;
  int port() const { return port_; }

 private:
  TcpListener(std::vector<int> fds, int wake_fd, std::string address, int port)
      : fds_(std::move(fds)), wake_fd_(wake_fd), address_(std::move(address)), port_(port) {}
  void AcceptLoop();
  // Accepts what is waiting on `listen_fd` (a bounded batch) and hands it over.
  void AcceptBatch(int listen_fd);
  // Whether to log now: at most one line a second per kind of event (`last_s`), so that a
  // flood does not flood the log as well.
  static bool LogNow(double* last_s);

  std::vector<int> fds_;
  int wake_fd_;  // eventfd: Stop wakes the accept loop's poll
  std::string address_;
  int port_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::thread thread_;
  double last_evict_log_s_ = 0;
  double last_deadline_log_s_ = 0;
  double last_error_log_s_ = 0;
};

}  // namespace codl::rpc
