// The TCP pieces of the process allreduce (tcp_allreduce.cc): listening, connecting with
// retries until a deadline, accepting within one, and exact sends/receives that give up at a
// deadline instead of hanging. Deadlines are steady-clock seconds (SteadySeconds()).
#pragma once

#include <cstddef>
#include <string>

#include "lib/common/result.h"

namespace codl::victim::tcp {

// An owned socket descriptor (closed on destruction; -1: none).
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();
  int fd() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A listening socket on every address (IPv6 dual-stack where the host has it, else IPv4);
// port 0: an ephemeral one.
Result<Socket> Listen(int port);
int LocalPort(const Socket& s);
// The numeric address of the other end ("10.0.0.2", "::1").
std::string PeerHost(const Socket& s);

// Connects to host:port, retrying refused or unreachable attempts every 50 ms until `deadline`.
// The error names the address and the last reason ("connection refused").
Result<Socket> ConnectUntil(const std::string& host, int port, double deadline);
// One connection from `listener`, or an error at `deadline`.
Result<Socket> AcceptUntil(const Socket& listener, double deadline);

// Exactly n bytes, or an error: the peer closed, a socket error, or the deadline passed.
Status SendAll(const Socket& s, const void* data, size_t n, double deadline);
Status RecvAll(const Socket& s, void* data, size_t n, double deadline);

// "host:port", with brackets around an IPv6 host.
std::string HostPort(const std::string& host, int port);

}  // namespace codl::victim::tcp
