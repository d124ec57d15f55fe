#include "lib/rpc/unix_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <grpcpp/server_posix.h>
#include <spdlog/spdlog.h>

namespace codl::rpc {

bool AdmitLocalPeer(uid_t peer_uid, uid_t self_uid) {
  return peer_uid == 0 || peer_uid == self_uid;
}

Status EnsurePrivateDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return FailedPrecondition("cannot create socket directory " + dir + ": " + strerror(errno));
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return FailedPrecondition("socket directory " + dir + " is not a directory");
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return FailedPrecondition("socket directory " + dir + " belongs to uid " +
                              std::to_string(st.st_uid) + ", not to this daemon");
  }
  if ((st.st_mode & 077) != 0) {
    return FailedPrecondition("socket directory " + dir +
                              " is open to group or others: chmod 0700 it (or pick a private "
                              "directory), or any local user could reach the daemon");
  }
  return Status::Ok();
}

Result<std::unique_ptr<UnixListener>> UnixListener::Open(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return InvalidArgument("unix socket path '" + path + "' is empty or too long");
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  if (Status s = EnsurePrivateDirectory(dir); !s.ok()) return s;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(std::string("socket: ") + strerror(errno));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size());
  unlink(path.c_str());  // a stale socket of a previous run
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, 64) != 0) {
    const std::string err = strerror(errno);
    close(fd);
    return Unavailable("cannot listen on unix:" + path + ": " + err);
  }
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return Unavailable(std::string("eventfd: ") + strerror(errno));
  }
  return std::unique_ptr<UnixListener>(new UnixListener(fd, wake, path));
}

UnixListener::~UnixListener() {
  Stop();
  close(fd_);
  close(wake_fd_);
}

void UnixListener::Start(grpc::Server* server) {
  thread_ = std::thread([this, server] { AcceptLoop(server); });
}

void UnixListener::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
  unlink(path_.c_str());
}

void UnixListener::AcceptLoop(grpc::Server* server) {
  const uid_t self = geteuid();
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("unix:{}: poll: {}", path_, strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      // Out of descriptors (EMFILE...): the socket stays readable; do not spin on it.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) usleep(100 * 1000);
      continue;
    }
    ucred peer{};
    socklen_t len = sizeof peer;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
        !AdmitLocalPeer(peer.uid, self)) {
      spdlog::warn("unix:{}: refused a connection from uid {} pid {}", path_, peer.uid, peer.pid);
      close(conn);
      continue;
    }
    grpc::AddInsecureChannelFromFd(server, conn);  // the server owns the fd from here on
  }
}

}  // namespace codl::rpc
