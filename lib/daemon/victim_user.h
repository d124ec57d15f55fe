// The user victims run as. An agent started as root would otherwise run every submitted
// command as root; it runs them as `victim_user` (default "nobody") instead, and as root only
// when the configuration says `victim_user: root`. An agent that is not root runs victims as
// itself (it could not switch users anyway).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

#include "lib/common/result.h"
#include "lib/common/subprocess.h"

namespace codl::daemon {

inline constexpr const char* kDefaultVictimUser = "nobody";

// `configured`: the victim_user key / --victim-user flag ("" = not set). `agent_uid`: the
// agent's effective uid. nullopt: victims run as the agent. An unknown user is an error.
Result<std::optional<RunAs>> ResolveVictimUser(const std::string& configured, uid_t agent_uid);

// victim_uid_range "LO-HI" (inclusive): 1 <= LO <= HI < 2^31 - 1, at most 65,536 uids.
Result<std::pair<uid_t, uid_t>> ParseUidRange(const std::string& text);
// Refuses a range holding a uid that has a passwd entry or is the agent's own: CoDL kills
// every process of a uid it releases, so the range must be CoDL's alone.
Status CheckUidRangeIsFree(std::pair<uid_t, uid_t> range, uid_t agent_uid);
// [A-Za-z_][A-Za-z0-9_]*
bool IsEnvName(const std::string& name);

}  // namespace codl::daemon
