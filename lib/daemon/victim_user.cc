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

}  // namespace codl::daemon
