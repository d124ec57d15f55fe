#include "lib/rpc/unix_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <pwd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <grpcpp/server_posix.h>
#include <spdlog/spdlog.h>

#include "lib/common/subprocess.h"

namespace codl::rpc {

bool AdmitLocalPeer(uid_t peer_uid, uid_t self_uid) {
  return peer_uid == 0 || peer_uid == self_uid;
}

namespace {

Status CheckSocketDirectory(const std::string& dir, mode_t create_mode, mode_t forbidden) {
  if (mkdir(dir.c_str(), create_mode) != 0 && errno != EEXIST) {
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
  if ((st.st_mode & forbidden) != 0) {
    return FailedPrecondition(
        "socket directory " + dir + " is " +
        (forbidden == 077 ? "open to group or others: chmod 0700 it (or pick a private "
                            "directory), or any local user could reach the daemon"
                          : "writable by group or others: chmod go-w it, or any local user "
                            "could replace the daemon's socket"));
  }
  return Status::Ok();
}

}  // namespace

Status EnsurePrivateDirectory(const std::string& dir) {
  return CheckSocketDirectory(dir, 0700, 077);
}

Status EnsureSocketDirectory(const std::string& dir) {
  return CheckSocketDirectory(dir, 0711, 022);
}

std::optional<Identity> LocalPeerOf(const std::string& peer) {
  if (peer.rfind("fd:", 0) != 0) return std::nullopt;
  const std::string n = peer.substr(3);
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return connections::UnixIdentity(std::stoi(n));
}

Result<std::unique_ptr<UnixListener>> UnixListener::Open(const std::string& path,
                                                         const LocalRoles* roles) {
  LocalRoles granted = roles ? *roles : CurrentLocalRoles();
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return InvalidArgument("unix socket path '" + path + "' is empty or too long");
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  const bool shared = granted.GrantsOthers();
  if (Status s = shared ? EnsureSocketDirectory(dir) : EnsurePrivateDirectory(dir); !s.ok()) {
    return s;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(std::string("socket: ") + strerror(errno));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size());
  unlink(path.c_str());  // a stale socket of a previous run
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), shared ? 0666 : 0600) != 0 || listen(fd, 64) != 0) {
    const std::string err = strerror(errno);
    close(fd);
    return Unavailable("cannot listen on unix:" + path + ": " + err);
  }
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return Unavailable(std::string("eventfd: ") + strerror(errno));
  }
  return std::unique_ptr<UnixListener>(new UnixListener(fd, wake, path, std::move(granted)));
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

bool UnixListener::Register(int conn, uid_t uid, const Identity& who, bool admin) {
  auto refusal = connections::AdmitUnix(conn, uid, who, admin);
  if (!refusal) return true;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const double now_s = now.tv_sec + now.tv_nsec * 1e-9;
  if (now_s - last_refusal_log_s_ >= 1) {
    last_refusal_log_s_ = now_s;
    spdlog::warn("unix:{}: refused a connection: {}", path_, *refusal);
  }
  return false;
}

std::optional<Identity> UnixListener::Admit(int conn, uid_t* uid) const {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return std::nullopt;
  *uid = peer.uid;
  // The peer's groups as they were at connect(): SO_PEERGROUPS (Linux 4.13).
  std::vector<gid_t> groups(256);
  socklen_t glen = groups.size() * sizeof(gid_t);
  if (getsockopt(conn, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0) glen = 0;
  groups.resize(glen / sizeof(gid_t));
  groups.push_back(peer.gid);
  auto role = roles_.RoleOf(peer.uid, groups, geteuid());
  if (!role) {
    spdlog::warn("unix:{}: refused a connection from uid {} pid {} (no unix role)", path_, peer.uid,
                 peer.pid);
    return std::nullopt;
  }
  // Named by the peer's user (root and the daemon's own uid are the local admins): the name is
  // what an experiment records as its submitter.
  return Identity{*role, UserName(peer.uid)};
}

void UnixListener::AcceptLoop(grpc::Server* server) {
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
    uid_t uid = 0;
    auto who = Admit(conn, &uid);
    const bool admin = uid == 0 || uid == geteuid();
    if (!who || !Register(conn, uid, *who, admin)) {
      close(conn);
      continue;
    }
    grpc::AddInsecureChannelFromFd(server, conn);  // the server owns the fd from here on
  }
}

}  // namespace codl::rpc
