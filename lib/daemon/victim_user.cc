#include "lib/daemon/victim_user.h"

#include <grp.h>
#include <pwd.h>

#include <vector>

namespace codl::daemon {

Result<std::optional<RunAs>> ResolveVictimUser(const std::string& configured, uid_t agent_uid) {
  if (agent_uid != 0) return std::optional<RunAs>();
  const std::string name = configured.empty() ? kDefaultVictimUser : configured;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return InvalidArgument("victim_user '" + name + "': no such user");
  }
  if (pw.pw_uid == 0) return std::optional<RunAs>();  // explicitly root: nothing to switch
  RunAs r{pw.pw_uid, pw.pw_gid, {}, name};
  int n = 64;
  r.groups.resize(n);
  if (getgrouplist(name.c_str(), pw.pw_gid, r.groups.data(), &n) < 0) {
    r.groups.resize(n);
    getgrouplist(name.c_str(), pw.pw_gid, r.groups.data(), &n);
  }
  r.groups.resize(n);
  return std::optional<RunAs>(std::move(r));
}

Result<std::pair<uid_t, uid_t>> ParseUidRange(const std::string& text) {
  const std::string usage = "'" + text + "': expected LO-HI, e.g. 61000-61999";
  const size_t dash = text.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == text.size()) {
    return InvalidArgument(usage);
  }
  auto number = [](const std::string& s, uint64_t* v) {
    if (s.empty() || s.size() > 10) return false;
    *v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      *v = *v * 10 + static_cast<uint64_t>(c - '0');
    }
    return true;
  };
  uint64_t lo = 0, hi = 0;
  if (!number(text.substr(0, dash), &lo) || !number(text.substr(dash + 1), &hi)) {
    return InvalidArgument(usage);
  }
  if (lo < 1 || hi < lo || hi >= 0x7fffffffu) {
    return InvalidArgument("'" + text + "': needs 1 <= LO <= HI < 2147483647");
  }
  if (hi - lo + 1 > 65536) {
    return InvalidArgument("'" + text + "': " + std::to_string(hi - lo + 1) +
                           " uids, at most 65536");
  }
  return std::make_pair(static_cast<uid_t>(lo), static_cast<uid_t>(hi));
}

Status CheckUidRangeIsFree(std::pair<uid_t, uid_t> range, uid_t agent_uid) {
  std::vector<char> buf(16384);
  for (uint64_t u = range.first; u <= range.second; ++u) {
    if (u == agent_uid) {
      return InvalidArgument("victim_uid_range holds the agent's own uid " + std::to_string(u));
    }
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(static_cast<uid_t>(u), &pw, buf.data(), buf.size(), &found) == 0 && found) {
      return InvalidArgument("victim_uid_range: uid " + std::to_string(u) + " belongs to user '" +
                             pw.pw_name +
                             "'; the range must be uids no user has (CoDL kills every process "
                             "of a uid it releases)");
    }
  }
  return Status::Ok();
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  }
  return true;
}

}  // namespace codl::daemon
