// UnixListener: the daemons' unix-socket endpoint ("unix:/run/codl/agent.sock"). gRPC's own
// unix listener cannot tell who connected, so this one accepts, reads the peer's uid
// (SO_PEERCRED) and hands only admitted connections to the server (AddInsecureChannelFromFd).
// Admitted: root and the daemon's own uid; they are local admins (authz.h CallerOf) — they
// could ptrace the daemon anyway. Everyone else is closed on, and logged.
// The socket's directory must be private: created 0700 when missing; an existing one must be
// owned by us (or root) and closed to group and others, or Open refuses to start.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "lib/common/result.h"

namespace codl::rpc {

// Whether a peer with `peer_uid` may use a daemon running as `self_uid`.
bool AdmitLocalPeer(uid_t peer_uid, uid_t self_uid);

// Creates `dir` 0700 when missing; refuses one that group or others can enter or that belongs
// to another (non-root) user.
Status EnsurePrivateDirectory(const std::string& dir);

class UnixListener {
 public:
  // Binds and listens on `path` (without "unix:"); the socket file is made 0600.
  static Result<std::unique_ptr<UnixListener>> Open(const std::string& path);
  ~UnixListener();
  // Starts the accept thread; connections go to `server` (which must outlive Stop).
  void Start(grpc::Server* server);
  // Stops accepting and removes the socket file. Connections already handed over stay with the
  // server until it shuts down.
  void Stop();

 private:
  UnixListener(int fd, int wake_fd, std::string path)
      : fd_(fd), wake_fd_(wake_fd), path_(std::move(path)) {}
  void AcceptLoop(grpc::Server* server);

  int fd_;
  int wake_fd_;  // eventfd: Stop wakes the accept loop's poll
  std::string path_;
  std::thread thread_;
};

}  // namespace codl::rpc
