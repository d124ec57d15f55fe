// The TCP pieces both pair floods use: `net` streams over these sockets, `rdma` exchanges its
// queue-pair numbers over them (rank 1's half of the connection setup; rank 0's half travels
// through the controller's rendezvous). The token handshake (net_endpoint.h) is here, so both
// injectors authenticate their peer the same way. Every blocking call polls in 50 ms slices.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>

#include "injectors/core/stop_token.h"

namespace codl::injectors {

// "host:port" (or "[v6]:port") -> sockaddr; false when unparsable or unresolvable.
bool Resolve(const std::string& hostport, sockaddr_storage* addr, socklen_t* len);

// Waits up to 50 ms for `events` on fd; true when ready. Keeps every blocking call stoppable.
bool WaitFd(int fd, short events);

// Exactly n bytes from fd within timeout_ms, polled in 50 ms slices so a stop (when given) cuts
// it short; "" on timeout, EOF, error or stop.
std::string ReadExactly(int fd, size_t n, int timeout_ms, const StopToken* stop);

// One '\n'-terminated line (without the '\n') of at most max_bytes within timeout_ms; "" on
// timeout, EOF, error, stop or an over-long line.
std::string ReadLine(int fd, size_t max_bytes, int timeout_ms, const StopToken* stop);

// Writes all of `data` (a blocking or non-blocking socket); false on error or after 2 s.
bool WriteAll(int fd, const std::string& data);

// A listening TCP socket on bind_addr:port (port 0 = any; the bound one in *bound_port), or -1
// with *why set ("net: listen on 10.0.0.1:5000: Address already in use").
int ListenTcp(const std::string& bind_addr, int port, int backlog, int* bound_port,
              std::string* why);

// A pair's handshake, connecting side: connect to `addr` within 2 s, write the token, and read
// it back within 2 s. Rank 0 answers only a connection that presented the token (AnswerToken),
// so neither side talks to a stranger (the token travels only through the controller's
// rendezvous). The (blocking) socket on success, else -1 with *why set.
int ConnectVerified(const std::string& addr, const std::string& token, std::string* why);

// The accepting side of the handshake: reads the token within 2 s and writes it back. False
// (write nothing) when what arrived is not the token.
bool AnswerToken(int fd, const std::string& token, const StopToken* stop);

}  // namespace codl::injectors
