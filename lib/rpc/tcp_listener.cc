#include "lib/rpc/tcp_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "lib/rpc/connection_registry.h"

namespace codl::rpc {

namespace {

// The accept loop's tick: how late past handshake_timeout a silent connection may be closed.
constexpr int kTcpTickMs = 250;
// Connections accepted per listening socket and wake-up, so one busy address cannot starve
// another or the deadline pass.
constexpr int kTcpAcceptBatch = 64;

double TcpNowS() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

// "host:port" or "[v6]:port" -> host (without brackets; "" for ":port") and port.
Result<std::pair<std::string, std::string>> SplitTcpAddress(const std::string& address) {
  std::string host, port;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || address.compare(close + 1, 1, ":") != 0) {
      return InvalidArgument("'" + address + "': expected [IPv6]:PORT");
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return InvalidArgument("'" + address + "' has no port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
    return InvalidArgument("'" + address + "': the port must be an integer in [0, 65535]");
  }
  return std::make_pair(host, port);
}

void SetPort(sockaddr* addr, int port) {
  if (addr->sa_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(addr)->sin_port = htons(static_cast<uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in6*>(addr)->sin6_port = htons(static_cast<uint16_t>(port));
  }
}

int BoundPort(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return a.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port)
                                : ntohs(reinterpret_cast<sockaddr_in6&>(a).sin6_port);
}

}  // namespace

Result<std::unique_ptr<TcpListener>> TcpListener::Open(
    const std::string& address, const std::shared_ptr<grpc::ServerCredentials>& creds,
    grpc::ServerBuilder* builder) {
  auto split = SplitTcpAddress(address);
  if (!split.ok()) return split.status();
  const auto& [host, port_text] = *split;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &found);
      rc != 0) {
    return Unavailable("cannot resolve '" + address + "': " + gai_strerror(rc));
  }
  bool any_v4 = false;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) any_v4 |= ai->ai_family == AF_INET;
  std::vector<int> fds;
  int port = std::stoi(port_text);
  std::string last_error;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      last_error = strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // restarts within TIME_WAIT
    if (ai->ai_family == AF_INET6) {
      // "[::]:P" alone serves IPv4 too; beside an IPv4 address of the same name, IPv6 only.
      const int v6only = any_v4 ? 1 : 0;
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    SetPort(ai->ai_addr, port);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      last_error = strerror(errno);
      close(fd);
      continue;
    }
    if (port == 0) port = BoundPort(fd);  // the other addresses take the same one
    fds.push_back(fd);
  }
  freeaddrinfo(found);
  if (fds.empty()) return Unavailable("cannot listen on '" + address + "': " + last_error);
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    for (int fd : fds) close(fd);
    return Unavailable(std::string("eventfd: ") + strerror(errno));
  }
  std::unique_ptr<TcpListener> l(new TcpListener(std::move(fds), wake, address, port));
  l->acceptor_ = builder->experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, creds);
  return l;
}

TcpListener::~TcpListener() {
  Stop();
  for (int fd : fds_) close(fd);
  close(wake_fd_);
}

void TcpListener::Start(grpc::Server* /*server: the acceptor's*/) {
  thread_ = std::thread([this] { AcceptLoop(); });
}

void TcpListener::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
}

bool TcpListener::LogNow(double* last_s) {
  const double now = TcpNowS();
  if (now - *last_s < 1) return false;
  *last_s = now;
  return true;
}

void TcpListener::AcceptLoop() {
  std::vector<pollfd> fds;
  for (int fd : fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({wake_fd_, POLLIN, 0});
  for (;;) {
    if (poll(fds.data(), fds.size(), kTcpTickMs) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("{}: poll: {}", address_, strerror(errno));
      return;
    }
    if (fds.back().revents != 0) return;
    if (int n = connections::CloseOverdue(); n > 0 && LogNow(&last_deadline_log_s_)) {
      spdlog::warn(
          "{}: closed {} connection(s) that made no authorized call within "
          "handshake_timeout {:g} s",
          address_, n, CurrentConnectionLimits().handshake_timeout_s);
    }
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents != 0) AcceptBatch(fds[i].fd);
    }
  }
}

void TcpListener::AcceptBatch(int listen_fd) {
  for (int i = 0; i < kTcpAcceptBatch; ++i) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    const int conn =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors (EMFILE...): the socket stays readable; do not spin on it.
      if (LogNow(&last_error_log_s_)) spdlog::warn("{}: accept: {}", address_, strerror(errno));
      usleep(100 * 1000);
      return;
    }
    const int one = 1;
    setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as gRPC's own listener
    if (auto evicted = connections::AdmitTcp(conn, peer); evicted && LogNow(&last_evict_log_s_)) {
      spdlog::warn("{}: closed the oldest connection without an authorized call: {}", address_,
                   *evicted);
    }
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
    p.listener_fd = listen_fd;
    p.fd = conn;
    acceptor_->HandleNewConnection(&p);  // the server owns the fd from here on
  }
}

}  // namespace codl::rpc
