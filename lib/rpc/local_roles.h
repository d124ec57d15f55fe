// LocalRoles: who may use a daemon's unix socket, and as what (docs/security.md). Root and the
// daemon's own uid are admins (they could ptrace the daemon anyway); a uid or group listed under
// a role (unix_roles / --unix-role) gets that role; everyone else is closed on before a byte of
// gRPC is read (unix_listener.h).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/result.h"
#include "lib/rpc/authz.h"

namespace codl::rpc {

class LocalRoles {
 public:
  // Entries "ROLE=WHO": ROLE is user-read, user-submit or admin; WHO is uid:N, gid:N,
  // user:NAME or group:NAME (names are resolved now). Errors name the entry.
  static Result<LocalRoles> Parse(const std::vector<std::string>& entries);

  // The role of a peer with `uid` and groups `gids` (primary and supplementary) on the socket of
  // a daemon running as `self_uid`: the highest one granted (admin > user-submit > user-read);
  // nullopt when none is.
  std::optional<Role> RoleOf(uid_t uid, const std::vector<gid_t>& gids, uid_t self_uid) const;

  // Whether anyone but root and the daemon's own uid may connect: the socket is then
  // connectable by all local users, and the uid check is the gate.
  bool GrantsOthers() const { return !uids_.empty() || !gids_.empty(); }

 private:
  std::map<uid_t, Role> uids_;
  std::map<gid_t, Role> gids_;
};

// The roles UnixListener::Open applies unless given its own: set once at daemon start (before
// any listener opens) from unix_roles / --unix-role. Default: no grants.
void SetLocalRoles(const LocalRoles& roles);
LocalRoles CurrentLocalRoles();

}  // namespace codl::rpc
