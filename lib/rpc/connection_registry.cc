#include "lib/rpc/connection_registry.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

namespace codl::rpc {

namespace {

// A refused TCP connection stays open this long, so that the refusal reaches its caller.
constexpr double kRefusalGraceS = 2;
// Stale entries are pruned at most this often before a cap refuses (each prune stats every
// descriptor), and at most this often by the listeners' periodic pass.
constexpr double kPruneAtCapEveryS = 0.1;
constexpr double kPrunePeriodS = 1;

double MonotonicS() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

std::mutex& ConnLimitsMu() {
  static std::mutex mu;
  return mu;
}
ConnectionLimits& ConnLimits() {
  static ConnectionLimits limits;
  return limits;
}

struct TrackedConnection {
  ino_t inode = 0;
  std::string endpoint;         // TCP: EndpointKey; "" on a unix socket
  std::string ip;               // TCP: the remote address
  std::optional<Identity> who;  // unix: from the peer's uid; TCP: its first authorized call
  std::string caller;           // the key it is counted under; "" for admins and the unnamed
  double accepted_s = 0;
  std::string refusal;  // TCP: why its caller was refused; it is shut down at close_at_s
  double close_at_s = 0;
  bool Unauthenticated() const { return !endpoint.empty() && !who && refusal.empty(); }
};

// Every tracked connection by descriptor, with the counts the caps compare against. One mutex
// for all: it is held for map operations only, plus an fstat per entry while pruning.
class Registry {
 public:
  std::mutex mu;

  // Replaces any entry with the same descriptor: its connection was closed, the number reused.
  void Insert(int fd, TrackedConnection c) {
    if (auto it = by_fd_.find(fd); it != by_fd_.end()) Erase(it);
    auto [it, inserted] = by_fd_.emplace(fd, std::move(c));
    (void)inserted;
    Account(it, +1);
    if (!it->second.endpoint.empty()) by_endpoint_[it->second.endpoint] = fd;
  }
  void Erase(std::map<int, TrackedConnection>::iterator it) {
    Account(it, -1);
    auto e = by_endpoint_.find(it->second.endpoint);
    if (e != by_endpoint_.end() && e->second == it->first) by_endpoint_.erase(e);
    by_fd_.erase(it);
  }
  // Changes a connection's state between Account(-1) and Account(+1) so the counts follow.
  template <typename F>
  void Update(std::map<int, TrackedConnection>::iterator it, F change) {
    Account(it, -1);
    change(it->second);
    Account(it, +1);
  }
  // Entries whose descriptor is no longer their socket (gRPC closed it).
  void Prune(double min_interval_s) {
    const double now = MonotonicS();
    if (now - last_prune_s_ < min_interval_s) return;
    last_prune_s_ = now;
    for (auto it = by_fd_.begin(); it != by_fd_.end();) {
      auto next = std::next(it);
      if (SocketInode(it->first) != it->second.inode) Erase(it);
      it = next;
    }
  }
  std::map<int, TrackedConnection>::iterator Find(int fd) { return by_fd_.find(fd); }
  std::map<int, TrackedConnection>::iterator FindEndpoint(const std::string& key) {
    auto e = by_endpoint_.find(key);
    return e == by_endpoint_.end() ? by_fd_.end() : by_fd_.find(e->second);
  }
  std::map<int, TrackedConnection>::iterator End() { return by_fd_.end(); }
  const std::map<int, TrackedConnection>& All() const { return by_fd_; }

  size_t CountedOf(const std::string& caller) const {
    auto it = per_caller_.find(caller);
    return it == per_caller_.end() ? 0 : it->second;
  }
  size_t counted() const { return counted_; }
  size_t UnauthenticatedOf(const std::string& ip) const {
    auto it = unauthenticated_per_ip_.find(ip);
    return it == unauthenticated_per_ip_.end() ? 0 : it->second;
  }
  size_t unauthenticated() const { return pending_.size(); }
  // Unauthenticated connections, oldest first; refused ones by when they are to be closed.
  const std::set<std::pair<double, int>>& pending() const { return pending_; }
  const std::set<std::pair<double, int>>& closing() const { return closing_; }

 private:
  void Account(std::map<int, TrackedConnection>::iterator it, int sign) {
    const TrackedConnection& c = it->second;
    if (!c.caller.empty()) {
      Adjust(per_caller_, c.caller, sign);
      counted_ += sign;
    }
    if (c.Unauthenticated()) {
      Adjust(unauthenticated_per_ip_, c.ip, sign);
      if (sign > 0) {
        pending_.emplace(c.accepted_s, it->first);
      } else {
        pending_.erase({c.accepted_s, it->first});
      }
    }
    if (!c.refusal.empty()) {
      if (sign > 0) {
        closing_.emplace(c.close_at_s, it->first);
      } else {
        closing_.erase({c.close_at_s, it->first});
      }
    }
  }
  static void Adjust(std::map<std::string, size_t>& counts, const std::string& key, int sign) {
    size_t& n = counts[key];
    n += sign;
    if (n == 0) counts.erase(key);
  }

  std::map<int, TrackedConnection> by_fd_;
  std::unordered_map<std::string, int> by_endpoint_;
  std::map<std::string, size_t> per_caller_;
  size_t counted_ = 0;
  std::map<std::string, size_t> unauthenticated_per_ip_;
  std::set<std::pair<double, int>> pending_;
  std::set<std::pair<double, int>> closing_;
  double last_prune_s_ = 0;
};

Registry& Connections() {
  static auto* registry = new Registry();  // outlives server threads at exit
  return *registry;
}

// Shuts the connection down when `fd` is still that socket: gRPC sees its end and closes it.
void ShutdownIfSame(int fd, ino_t inode) {
  if (SocketInode(fd) == inode) shutdown(fd, SHUT_RDWR);
}

// Which cap, if any, refuses one more connection of a non-admin caller. Mu held.
std::optional<std::string> CapRefusing(Registry& r, const std::string& caller,
                                       const std::string& who_text) {
  const ConnectionLimits caps = EffectiveConnectionLimits();
  for (bool pruned : {false, true}) {
    const size_t mine = r.CountedOf(caller), all = r.counted();
    if (mine < caps.per_caller && all < caps.total) return std::nullopt;
    if (pruned) {
      if (mine >= caps.per_caller) {
        return who_text + " already has " + std::to_string(mine) +
               " connections open (max_connections_per_caller " + std::to_string(caps.per_caller) +
               ")";
      }
      return std::to_string(all) + " connections of non-admin callers are open (max_connections " +
             std::to_string(caps.total) + ")";
    }
    r.Prune(kPruneAtCapEveryS);  // closed ones may still be counted
  }
  return std::nullopt;
}

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const std::string hex = s.substr(i + 1, 2);
      char* end = nullptr;
      const long v = strtol(hex.c_str(), &end, 16);
      if (end == hex.c_str() + 2) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

void SetConnectionLimits(const ConnectionLimits& limits) {
  std::lock_guard<std::mutex> l(ConnLimitsMu());
  ConnLimits() = limits;
}

ConnectionLimits CurrentConnectionLimits() {
  std::lock_guard<std::mutex> l(ConnLimitsMu());
  return ConnLimits();
}

ConnectionLimits EffectiveConnectionLimits() {
  ConnectionLimits caps = CurrentConnectionLimits();
  if (caps.total == 0 || caps.unauthenticated == 0) {
    rlimit rl{};
    const size_t fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                           ? static_cast<size_t>(rl.rlim_cur)
                           : 1024;
    if (caps.total == 0) caps.total = std::max<size_t>(16, fds / 2);
    if (caps.unauthenticated == 0) caps.unauthenticated = std::max<size_t>(16, fds / 8);
  }
  return caps;
}

ino_t SocketInode(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

std::map<std::string, int> OpenConnectionsByRole() {
  std::map<std::string, int> out;
  for (Role r :
       {Role::kController, Role::kAgent, Role::kUserRead, Role::kUserSubmit, Role::kAdmin}) {
    out[RoleName(r)] = 0;
  }
  out[kUnauthenticatedLabel] = 0;
  Registry& r = Connections();
  std::lock_guard<std::mutex> l(r.mu);
  r.Prune(0);
  for (const auto& [fd, c] : r.All()) {
    if (!c.refusal.empty()) continue;  // about to be shut down
    ++out[c.who ? RoleName(c.who->role) : kUnauthenticatedLabel];
  }
  return out;
}

std::string EndpointKey(const sockaddr_storage& addr) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    return std::string(ip) + "|" + std::to_string(ntohs(a.sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
      inet_ntop(AF_INET, &a.sin6_addr.s6_addr[12], ip, sizeof ip);
    } else {
      inet_ntop(AF_INET6, &a.sin6_addr, ip, sizeof ip);
    }
    return std::string(ip) + "|" + std::to_string(ntohs(a.sin6_port));
  }
  return "";
}

std::string EndpointKeyOfPeer(const std::string& peer) {
  const bool v4 = peer.rfind("ipv4:", 0) == 0, v6 = peer.rfind("ipv6:", 0) == 0;
  if (!v4 && !v6) return "";
  const std::string hostport = PercentDecode(peer.substr(5));
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return "";
  std::string host = hostport.substr(0, colon);
  const std::string port = hostport.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return "";
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (const size_t zone = host.find('%'); zone != std::string::npos) host.resize(zone);
  sockaddr_storage addr{};
  if (v4) {
    auto& a = reinterpret_cast<sockaddr_in&>(addr);
    a.sin_family = AF_INET;
    if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return "";
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  } else {
    auto& a = reinterpret_cast<sockaddr_in6&>(addr);
    a.sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, host.c_str(), &a.sin6_addr) != 1) return "";
    a.sin6_port = htons(static_cast<uint16_t>(std::stoi(port)));
  }
  return EndpointKey(addr);
}

Status AttributeConnection(const std::string& peer, const Identity& who) {
  const std::string key = EndpointKeyOfPeer(peer);
  if (key.empty()) return Status::Ok();
  Registry& r = Connections();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.FindEndpoint(key);
  if (it == r.End()) return Status::Ok();
  if (SocketInode(it->first) != it->second.inode) {  // closed; a new one has another port
    r.Erase(it);
    return Status::Ok();
  }
  if (!it->second.refusal.empty()) return ResourceExhausted(it->second.refusal);
  if (it->second.who) return Status::Ok();
  if (who.role == Role::kAdmin) {
    r.Update(it, [&](TrackedConnection& c) { c.who = who; });
    return Status::Ok();
  }
  // A pool-wide agent certificate is one identity for many nodes: counted per node (IP).
  const std::string caller = who.role == Role::kAgent && who.id == kAnyAgent
                                 ? who.ToString() + "@" + it->second.ip
                                 : who.ToString();
  // CapRefusing may prune; `it` is looked up again after it.
  const int fd = it->first;
  auto refusal = CapRefusing(r, caller, caller);
  it = r.Find(fd);
  if (it == r.End()) return Status::Ok();
  if (refusal) {
    r.Update(it, [&](TrackedConnection& c) {
      c.refusal = *refusal;
      c.close_at_s = MonotonicS() + kRefusalGraceS;
    });
    return ResourceExhausted(*refusal);
  }
  r.Update(it, [&](TrackedConnection& c) {
    c.who = who;
    c.caller = caller;
  });
  return Status::Ok();
}

namespace connections {

std::optional<std::string> AdmitUnix(int fd, uid_t uid, const Identity& who, bool admin) {
  Registry& r = Connections();
  std::lock_guard<std::mutex> l(r.mu);
  if (auto it = r.Find(fd); it != r.End()) r.Erase(it);  // the number was reused: stale
  const std::string caller = "uid " + std::to_string(uid);
  if (!admin) {
    if (auto refusal = CapRefusing(r, caller, caller)) return refusal;
  }
  TrackedConnection c;
  c.inode = SocketInode(fd);
  c.who = who;
  c.caller = admin ? "" : caller;
  c.accepted_s = MonotonicS();
  r.Insert(fd, std::move(c));
  return std::nullopt;
}

std::optional<Identity> UnixIdentity(int fd) {
  Registry& r = Connections();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.Find(fd);
  if (it == r.End() || !it->second.endpoint.empty() || it->second.inode == 0 ||
      SocketInode(fd) != it->second.inode) {
    return std::nullopt;
  }
  return it->second.who;
}

std::optional<std::string> AdmitTcp(int fd, const sockaddr_storage& peer) {
  const ConnectionLimits caps = EffectiveConnectionLimits();
  TrackedConnection c;
  c.inode = SocketInode(fd);
  c.endpoint = EndpointKey(peer);
  c.ip = c.endpoint.substr(0, c.endpoint.rfind('|'));
  c.accepted_s = MonotonicS();
  Registry& r = Connections();
  std::lock_guard<std::mutex> l(r.mu);
  if (auto it = r.Find(fd); it != r.End()) r.Erase(it);  // the number was reused: stale
  std::optional<std::string> evicted;
  for (bool pruned : {false, true}) {
    const size_t from_ip = r.UnauthenticatedOf(c.ip), all = r.unauthenticated();
    if (from_ip < caps.unauthenticated_per_ip && all < caps.unauthenticated) break;
    if (!pruned) {
      r.Prune(kPruneAtCapEveryS);
      continue;
    }
    // The oldest one of that IP when the IP is at its cap, else the oldest of all.
    const bool per_ip = from_ip >= caps.unauthenticated_per_ip;
    for (const auto& [accepted_s, victim] : r.pending()) {
      auto it = r.Find(victim);
      if (per_ip && it->second.ip != c.ip) continue;
      ShutdownIfSame(victim, it->second.inode);
      r.Erase(it);
      break;
    }
    evicted = per_ip ? std::to_string(from_ip) + " connections from " + c.ip +
                           " have made no authorized call yet "
                           "(max_unauthenticated_connections_per_ip " +
                           std::to_string(caps.unauthenticated_per_ip) + ")"
                     : std::to_string(all) +
                           " connections have made no authorized call yet "
                           "(max_unauthenticated_connections " +
                           std::to_string(caps.unauthenticated) + ")";
  }
  r.Insert(fd, std::move(c));
  return evicted;
}

int CloseOverdue() {
  const double timeout_s = CurrentConnectionLimits().handshake_timeout_s;
  const double now = MonotonicS();
  Registry& r = Connections();
  std::lock_guard<std::mutex> l(r.mu);
  int overdue = 0;
  while (!r.pending().empty() && r.pending().begin()->first + timeout_s <= now) {
    auto it = r.Find(r.pending().begin()->second);
    if (SocketInode(it->first) == it->second.inode) {
      shutdown(it->first, SHUT_RDWR);
      ++overdue;
    }
    r.Erase(it);
  }
  while (!r.closing().empty() && r.closing().begin()->first <= now) {
    auto it = r.Find(r.closing().begin()->second);
    ShutdownIfSame(it->first, it->second.inode);
    r.Erase(it);
  }
  r.Prune(kPrunePeriodS);
  return overdue;
}

}  // namespace connections

}  // namespace codl::rpc
