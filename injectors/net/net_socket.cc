#include "injectors/net/net_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace codl::injectors {

bool Resolve(const std::string& hostport, sockaddr_storage* addr, socklen_t* len) {
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = hostport.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), hostport.substr(colon + 1).c_str(), &hints, &res) != 0) {
    return false;
  }
  std::memcpy(addr, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

bool WaitFd(int fd, short events) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, 50) > 0;
}

std::string ReadExactly(int fd, size_t n, int timeout_ms, const StopToken* stop) {
  std::string got;
  char buf[64];
  for (int waited = 0; got.size() < n && waited < timeout_ms; waited += 50) {
    if (stop != nullptr && stop->stop_requested()) return "";
    if (!WaitFd(fd, POLLIN)) continue;
    const ssize_t r = recv(fd, buf, std::min(sizeof buf, n - got.size()), 0);
    if (r <= 0) return "";
    got.append(buf, static_cast<size_t>(r));
  }
  return got.size() == n ? got : "";
}

int ConnectVerified(const std::string& addr, const std::string& token, std::string* why) {
  sockaddr_storage sa;
  socklen_t len;
  if (!Resolve(addr, &sa, &len)) {
    *why = addr + ": cannot resolve";
    return -1;
  }
  const int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t elen = sizeof err;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 &&
      (errno != EINPROGRESS || poll(&p, 1, 2000) <= 0 ||
       getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0)) {
    *why = addr + ": connect: " + (err != 0 ? std::strerror(err) : "timed out");
    close(fd);
    return -1;
  }
  // A fresh socket's send buffer takes the 32 bytes at once.
  if (send(fd, token.data(), token.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(token.size()) ||
      ReadExactly(fd, token.size(), 2000, nullptr) != token) {
    *why = addr +
           ": connected, but it did not answer with rank 0's token (another service, or "
           "rank 0's address seen from elsewhere)";
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string ReadLine(int fd, size_t max_bytes, int timeout_ms, const StopToken* stop) {
  std::string line;
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    if (stop != nullptr && stop->stop_requested()) return "";
    if (!WaitFd(fd, POLLIN)) continue;
    char c;
    ssize_t r;
    // One byte at a time: what follows the line (the peer's next message) stays in the socket.
    while ((r = recv(fd, &c, 1, MSG_DONTWAIT)) == 1) {
      if (c == '\n') return line;
      if (line.size() == max_bytes) return "";
      line += c;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return "";
  }
  return "";
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  for (int waited = 0; done < data.size() && waited < 2000; waited += 50) {
    if (!WaitFd(fd, POLLOUT)) continue;
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return done == data.size();
}

int ListenTcp(const std::string& bind_addr, int port, int backlog, int* bound_port,
              std::string* why) {
  sockaddr_storage addr;
  socklen_t len;
  if (!Resolve(bind_addr + ":" + std::to_string(port), &addr, &len)) {
    *why = "option 'bind': cannot resolve '" + bind_addr + "'";
    return -1;
  }
  const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *why = "net: listen on " + bind_addr + ":" + std::to_string(port) + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  // sin_port and sin6_port sit at the same offset.
  *bound_port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

bool AnswerToken(int fd, const std::string& token, const StopToken* stop) {
  return ReadExactly(fd, token.size(), 2000, stop) == token &&
         send(fd, token.data(), token.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(token.size());
}

}  // namespace codl::injectors
