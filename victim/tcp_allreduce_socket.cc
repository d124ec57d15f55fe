#include "victim/tcp_allreduce_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#include "lib/common/clock.h"

namespace codl::victim::tcp {
namespace {

std::string Errno() { return std::strerror(errno); }

// Milliseconds left until `deadline` for poll(), at least 0, at most 1 s (so a long wait still
// re-checks the clock).
int PollMs(double deadline) {
  const double left = deadline - SteadySeconds();
  return left <= 0 ? 0 : static_cast<int>(std::min(1000.0, std::ceil(left * 1000)));
}

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits for `events` on fd until the deadline: true when ready.
bool WaitUntil(int fd, short events, double deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, PollMs(deadline));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
    if (SteadySeconds() >= deadline) return false;
  }
}

// One non-blocking connect attempt that completes (or fails) by the deadline; "" on success.
std::string TryConnect(const addrinfo* ai, double deadline, int* out) {
  const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return "socket: " + Errno();
  Socket s(fd);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return Errno();
    if (!WaitUntil(fd, POLLOUT, deadline)) return "timed out";
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return Errno();
    if (err != 0) return std::strerror(err);
  }
  NoDelay(fd);
  *out = s.release();
  return "";
}

}  // namespace

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

std::string HostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Socket> Listen(int port) {
  const int one = 1, zero = 0;
  // Dual-stack first, so that MASTER_ADDR may be an IPv4 or an IPv6 address of this node.
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0) {
    Socket s(fd);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd, 64) == 0) return s;
    if (errno == EADDRINUSE)
      return Err("listening on port " + std::to_string(port) + ": " + Errno());
  }
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Err("socket: " + Errno());
  Socket s(fd);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0) {
    return Err("listening on port " + std::to_string(port) + ": " + Errno());
  }
  return s;
}

int LocalPort(const Socket& s) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
}

std::string PeerHost(const Socket& s) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char host[NI_MAXHOST] = "";
  if (getpeername(s.fd(), reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "";
  }
  std::string h = host;
  // A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d; dial them back as a.b.c.d.
  if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h = h.substr(7);
  return h;
}

Result<Socket> ConnectUntil(const std::string& host, int port, double deadline) {
  const std::string where = HostPort(host, port);
  std::string last = "not tried";
  int attempts = 0;
  do {
    ++attempts;
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    // Resolved on every attempt: a name may only come to resolve once its node is up.
    const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
      last = std::string("cannot resolve: ") + gai_strerror(gai);
    } else {
      for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        int fd = -1;
        last = TryConnect(ai, deadline, &fd);
        if (last.empty()) {
          freeaddrinfo(res);
          return Socket(fd);
        }
      }
      freeaddrinfo(res);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (SteadySeconds() < deadline);
  return Err("cannot connect to " + where + " (" + std::to_string(attempts) +
             " attempts until the connect timeout; last: " + last + ")");
}

Result<Socket> AcceptUntil(const Socket& listener, double deadline) {
  while (true) {
    const int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      NoDelay(fd);
      return Socket(fd);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      return Err("accept: " + Errno());
    }
    if (!WaitUntil(listener.fd(), POLLIN, deadline)) return Err("timed out");
  }
}

Status SendAll(const Socket& s, const void* data, size_t n, double deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(s.fd(), p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return Err("send: " + Errno());
    if (!WaitUntil(s.fd(), POLLOUT, deadline)) return Err("send: timed out");
  }
  return Status::Ok();
}

Status RecvAll(const Socket& s, void* data, size_t n, double deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = recv(s.fd(), p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return Err("the peer closed the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Err("recv: " + Errno());
    if (!WaitUntil(s.fd(), POLLIN, deadline)) return Err("recv: timed out");
  }
  return Status::Ok();
}

}  // namespace codl::victim::tcp
