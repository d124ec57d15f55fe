// UnixListener: the daemons' unix-socket endpoint ("unix:/run/codl/agent.sock"). gRPC's own
// unix listener cannot tell who connected, so this one accepts, reads the peer's uid
// (SO_PEERCRED) and hands only admitted connections to the server (AddInsecureChannelFromFd).
// Admitted: root and the daemon's own uid, as local admins (they could ptrace the daemon
// anyway), and the uids and groups LocalRoles grants a role (local_roles.h); the connection's
// identity is recorded for CallerOf (LocalPeerOf). Everyone else is closed on, and logged.
// The socket's directory must be owned by us (or root) and closed to group and others (created
// 0700 when missing), or Open refuses to start — unless roles are granted to others: then the
// directory may be entered by all (0711 when created) but still written by nobody else, and the
// socket is 0666; the peer check is the gate.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "lib/common/result.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/connection_registry.h"
#include "lib/rpc/listener.h"
#include "lib/rpc/local_roles.h"

namespace codl::rpc {

// Whether a peer with `peer_uid` may use a daemon running as `self_uid`.
bool AdmitLocalPeer(uid_t peer_uid, uid_t self_uid);

// Creates `dir` 0700 when missing; refuses one that group or others can enter or that belongs
// to another (non-root) user.
Status EnsurePrivateDirectory(const std::string& dir);
// The same, but group and others may enter it (created 0711): for sockets that serve other
// local users (LocalRoles::GrantsOthers). Writable by group or others is still refused.
Status EnsureSocketDirectory(const std::string& dir);

// The identity UnixListener recorded for a connection handed to gRPC, from the call's peer
// string ("fd:N"); nullopt for anything else or a descriptor that is no longer that connection.
std::optional<Identity> LocalPeerOf(const std::string& peer);

class UnixListener final : public Listener {
 public:
  // Binds and listens on `path` (without "unix:"); the socket file is made 0600 (0666 when
  // `roles` grant others). `roles`: null takes CurrentLocalRoles().
  static Result<std::unique_ptr<UnixListener>> Open(const std::string& path,
                                                    const LocalRoles* roles = nullptr);
  ~UnixListener() override;
  void Start(grpc::Server* server) override;
  // Also removes the socket file.
  void Stop() override;

 private:
  UnixListener(int fd, int wake_fd, std::string path, LocalRoles roles)
      : fd_(fd), wake_fd_(wake_fd), path_(std::move(path)), roles_(std::move(roles)) {}
  void AcceptLoop(grpc::Server* server);
  // The connection's identity, or nullopt when its peer has no role here. `uid`: the peer's.
  std::optional<Identity> Admit(int conn, uid_t* uid) const;
  // Registers the connection (connection_registry.h) when it fits the caps; logs a refusal
  // (at most once a second) naming the cap.
  bool Register(int conn, uid_t uid, const Identity& who, bool admin);

  int fd_;
  int wake_fd_;  // eventfd: Stop wakes the accept loop's poll
  std::string path_;
  LocalRoles roles_;
  std::thread thread_;
  double last_refusal_log_s_ = 0;
};

}  // namespace codl::rpc
