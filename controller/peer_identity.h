// PeerIdentity: who is on the other end of a gRPC call, for decisions such as "may this caller
// replace the live agent registered under that id?". With TLS it is the client certificate's
// identity (auth context); else the identity of its bearer token; else the peer's host (the port
// changes with every connection, so it is not part of the identity).
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

namespace codl::controller {

struct PeerIdentity {
  std::string kind;   // "tls" (certificate), "token" (bearer token's identity) or "address"
  std::string value;  // e.g. "agent-3.example" or "ipv4:10.0.0.7"
  std::string Describe() const { return kind + ":" + value; }
};

// The identity of the caller of `ctx`.
PeerIdentity PeerIdentityOf(const grpc::ServerContextBase& ctx);
// The peer string of gRPC ("ipv4:10.0.0.7:54321", "ipv6:[::1]:5", "unix:/run/x") without the
// port: the host part that stays the same across reconnections.
std::string PeerHost(const std::string& peer);

// The one place that decides whether two callers are the same principal. Another identity type
// (roles) compares here too when it arrives.
bool SameIdentity(const PeerIdentity& a, const PeerIdentity& b);

}  // namespace codl::controller
