#include "lib/rpc/local_roles.h"

#include <grp.h>
#include <pwd.h>

#include <mutex>

namespace codl::rpc {
namespace {

int Rank(Role r) {
  switch (r) {
    case Role::kUserRead: return 1;
    case Role::kUserSubmit: return 2;
    case Role::kAdmin: return 3;
    default: return 0;  // controller and agent roles come from certificates or tokens only
  }
}

Result<uint32_t> Number(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) {
    return Err("'" + s + "' is not a number");
  }
  const unsigned long v = std::stoul(s);
  if (v > 0xfffffffeUL) return Err("'" + s + "' is out of range");
  return static_cast<uint32_t>(v);
}

// uid:N, user:NAME -> (false, uid); gid:N, group:NAME -> (true, gid).
Result<std::pair<bool, uint32_t>> Principal(const std::string& who) {
  const size_t colon = who.find(':');
  const std::string kind = who.substr(0, colon),
                    name = colon == std::string::npos ? std::string() : who.substr(colon + 1);
  if (kind == "uid" || kind == "gid") {
    auto n = Number(name);
    if (!n.ok()) return n.status();
    return std::make_pair(kind == "gid", *n);
  }
  if (kind == "user" && !name.empty()) {
    if (const passwd* pw = getpwnam(name.c_str())) return std::make_pair(false, pw->pw_uid);
    return Err("no user '" + name + "'");
  }
  if (kind == "group" && !name.empty()) {
    if (const group* gr = getgrnam(name.c_str())) return std::make_pair(true, gr->gr_gid);
    return Err("no group '" + name + "'");
  }
  return Err("'" + who + "': use uid:N, gid:N, user:NAME or group:NAME");
}

std::mutex& CurrentMu() {
  static std::mutex mu;
  return mu;
}
LocalRoles& Current() {
  static LocalRoles roles;
  return roles;
}

}  // namespace

Result<LocalRoles> LocalRoles::Parse(const std::vector<std::string>& entries) {
  LocalRoles out;
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    auto role = ParseRole(e.substr(0, eq));
    if (eq == std::string::npos || !role || Rank(*role) == 0) {
      return Err("unix role '" + e + "': expected ROLE=WHO with ROLE user-read, user-submit or " +
                 "admin");
    }
    auto who = Principal(e.substr(eq + 1));
    if (!who.ok()) return who.status().WithContext("unix role '" + e + "'");
    auto& table = who->first ? out.gids_ : out.uids_;
    auto [it, added] = table.emplace(who->second, *role);
    if (!added && Rank(*role) > Rank(it->second)) it->second = *role;
  }
  return out;
}

std::optional<Role> LocalRoles::RoleOf(uid_t uid, const std::vector<gid_t>& gids,
                                       uid_t self_uid) const {
  if (uid == 0 || uid == self_uid) return Role::kAdmin;
  std::optional<Role> best;
  auto consider = [&best](Role r) {
    if (!best || Rank(r) > Rank(*best)) best = r;
  };
  if (auto it = uids_.find(uid); it != uids_.end()) consider(it->second);
  for (gid_t g : gids) {
    if (auto it = gids_.find(g); it != gids_.end()) consider(it->second);
  }
  return best;
}

void SetLocalRoles(const LocalRoles& roles) {
  std::lock_guard<std::mutex> l(CurrentMu());
  Current() = roles;
}

LocalRoles CurrentLocalRoles() {
  std::lock_guard<std::mutex> l(CurrentMu());
  return Current();
}

}  // namespace codl::rpc
