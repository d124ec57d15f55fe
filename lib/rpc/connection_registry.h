// The connections the daemon's own listeners accepted and handed to gRPC (UnixListener,
// TcpListener), and the caps on them (docs/security.md, "Connection limits"). gRPC names a
// call's connection only by its peer string ("fd:N" on a unix socket, "ipv4:10.0.0.7:51234" on
// TCP) and never says when it closes one, so each entry keeps the connection's descriptor and
// the socket's inode: an entry whose descriptor is no longer that socket is stale, and pruned.
// A connection is shut down from here only after checking the inode again.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "lib/common/result.h"
#include "lib/rpc/authz.h"

namespace codl::rpc {

// Caps on what non-admin callers may hold (config keys in docs/configuration.md): a caller
// granted only `user-read`, or anyone who can reach a TCP port, must not exhaust the daemon's
// descriptors or threads. Admins are not counted: root and the daemon's own uid on the unix
// socket, the `admin` role on TCP. What the caps leave of the descriptor limit is theirs (and
// the daemon's own files and outgoing channels').
struct ConnectionLimits {
  // Open connections of one non-admin caller: a unix uid, or a TCP identity (a pool-wide agent
  // certificate, codl://agent/*, per remote IP).
  size_t per_caller = 64;
  // Of all non-admin callers together, every listener; 0: half the descriptor limit.
  size_t total = 0;
  // TCP connections that have made no authorized call yet (TLS handshake, first call), from one
  // remote IP and from everywhere (0: an eighth of the descriptor limit). At the cap the oldest
  // of them is closed for the new one, so a flood cannot lock out a caller that completes its
  // first call.
  size_t unauthenticated_per_ip = 64;
  size_t unauthenticated = 0;
  // A TCP connection with no authorized call this long after it was accepted is closed.
  double handshake_timeout_s = 10;
  // Every connection with no call for this long is closed (gRPC's max_connection_idle).
  double idle_timeout_s = 600;
  // Calls in progress (streams too) of one identity, and of all counted identities (authz.h).
  size_t calls_per_caller = 256;
  size_t calls_total = 4096;
};
void SetConnectionLimits(const ConnectionLimits& limits);
ConnectionLimits CurrentConnectionLimits();
// CurrentConnectionLimits with `total` and `unauthenticated` resolved against the descriptor
// limit (RLIMIT_NOFILE) when they are 0.
ConnectionLimits EffectiveConnectionLimits();

// The gauge label of TCP connections that have made no authorized call yet.
inline constexpr const char* kUnauthenticatedLabel = "unauthenticated";
// Open connections on the daemon's listeners by their caller's role ("admin", "user-read", ...,
// and "unauthenticated"; every label present, 0 when none): the codl_*_connections gauges.
std::map<std::string, int> OpenConnectionsByRole();

// The inode of socket `fd`; 0 when `fd` is not an open socket.
ino_t SocketInode(int fd);

// The first authorized call on a TCP connection names its caller (CheckCaller calls this with
// the call's peer string): the connection is then counted for that identity. OK for admins,
// for connections already counted and for peers that are not a tracked TCP connection;
// RESOURCE_EXHAUSTED naming the cap when the caller or all non-admin callers are at it: the
// connection is shut down moments later (time for the refusal to reach the caller), and its
// other calls meanwhile are refused the same way.
Status AttributeConnection(const std::string& peer, const Identity& who);

// For the listeners.
namespace connections {

// Registers a unix-socket connection of `uid` with identity `who` (`admin`: not counted), or
// says which cap refuses it ("uid 65534 already has 8 connections open
// (max_connections_per_caller 8)").
std::optional<std::string> AdmitUnix(int fd, uid_t uid, const Identity& who, bool admin);
// The identity a unix-socket connection was admitted with, while `fd` is still that socket.
std::optional<Identity> UnixIdentity(int fd);

// Registers an accepted TCP connection as unauthenticated. At a cap on unauthenticated
// connections the oldest one (of that IP, else of all) is shut down for it; the message says
// which cap, for the log.
std::optional<std::string> AdmitTcp(int fd, const sockaddr_storage& peer);
// Shuts down TCP connections past the handshake deadline and refused ones whose grace is over;
// prunes stale entries now and then. Returns how many passed the handshake deadline.
int CloseOverdue();

}  // namespace connections

// "10.0.0.7|51234", "::1|51234": the key a TCP connection is found by, from its address and
// from gRPC's peer string ("ipv4:10.0.0.7:51234", "ipv6:%5B::1%5D:51234"; a v4-mapped IPv6
// address as IPv4); "" for anything else.
std::string EndpointKey(const sockaddr_storage& addr);
std::string EndpointKeyOfPeer(const std::string& peer);

}  // namespace codl::rpc
