#include "injectors/net/net_endpoint.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstdint>
#include <random>
#include <sstream>

namespace codl::injectors {
namespace {

constexpr std::string_view kMagic = "codl-net1";

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "a.b.c.d:port" or "[v6]:port" for one interface address; "" for other families and for
// IPv6 link-local addresses.
std::string Format(const sockaddr* sa, int port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) return "";
    inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(port);
  }
  return "";
}

}  // namespace

std::string EncodeNetEndpoint(const NetEndpoint& e) {
  std::string out = std::string(kMagic) + " " + e.token;
  for (const auto& a : e.addresses) out += " " + a;
  return out;
}

Result<NetEndpoint> DecodeNetEndpoint(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string magic;
  NetEndpoint e;
  in >> magic >> e.token;
  for (std::string a; in >> a;) e.addresses.push_back(a);
  if (magic != kMagic || e.addresses.empty()) {
    return Err("not a net endpoint (expected 'codl-net1 <token> <host:port>...')");
  }
  if (e.token.size() != 32 || !IsHex(e.token)) {
    return Err("net endpoint token must be 32 hex characters");
  }
  return e;
}

std::string NewNetToken() {
  std::random_device rd;  // the kernel's getrandom on Linux
  static const char* kDigits = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 8; ++j, v >>= 4) t += kDigits[v & 0xf];
  }
  return t;
}

std::vector<std::string> ReachableAddresses(const std::string& bind, int port) {
  if (bind != "0.0.0.0" && bind != "::") {
    const bool v6 = bind.find(':') != std::string::npos;
    return {(v6 ? "[" + bind + "]" : bind) + ":" + std::to_string(port)};
  }
  std::vector<std::string> v4, v6, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP)) continue;
      // A 0.0.0.0 listener takes IPv4 only; :: takes both (dual stack).
      if (bind == "0.0.0.0" && i->ifa_addr->sa_family != AF_INET) continue;
      const std::string a = Format(i->ifa_addr, port);
      if (a.empty()) continue;
      auto& to = (i->ifa_flags & IFF_LOOPBACK)       ? loopback
                 : i->ifa_addr->sa_family == AF_INET ? v4
                                                     : v6;
      to.push_back(a);
    }
    freeifaddrs(list);
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  v4.insert(v4.end(), loopback.begin(), loopback.end());
  return v4;
}

}  // namespace codl::injectors
