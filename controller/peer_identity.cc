#include "controller/peer_identity.h"

#include "lib/rpc/authz.h"

namespace codl::controller {

std::string PeerHost(const std::string& peer) {
  if (peer.rfind("ipv4:", 0) == 0 || peer.rfind("ipv6:", 0) == 0) {
    size_t colon = peer.rfind(':');
    // "ipv6:[::1]:5": the port follows the closing bracket; "ipv4:h:p": the last colon.
    size_t bracket = peer.rfind(']');
    if (bracket != std::string::npos && colon != std::string::npos && colon > bracket) {
      return peer.substr(0, colon);
    }
    if (bracket == std::string::npos && colon != std::string::npos && colon > 4) {
      return peer.substr(0, colon);
    }
  }
  return peer;  // unix sockets and unknown forms: the whole string
}

PeerIdentity PeerIdentityOf(const grpc::ServerContextBase& ctx) {
  auto auth = ctx.auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    std::string id;
    for (const auto& v : auth->GetPeerIdentity()) {
      id += (id.empty() ? "" : ",") + std::string(v.data(), v.size());
    }
    if (!id.empty()) return {"tls", id};
  }
  // A bearer token names its holder: agents on one host are told apart by it (the address
  // alone would make every local agent the same principal).
  if (auto who = rpc::CallerOf(ctx); who.ok() && !who->id.empty()) {
    return {"token", who->ToString()};
  }
  return {"address", PeerHost(ctx.peer())};
}

bool SameIdentity(const PeerIdentity& a, const PeerIdentity& b) {
  return a.kind == b.kind && a.value == b.value;
}

}  // namespace codl::controller
