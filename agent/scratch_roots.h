// Where an agent's injectors write and its victims get their HOME when no scratch root is
// configured (docs/security.md, "Paths an experiment names"). A world-writable directory is
// never a default: any local user could place files there that the agent, usually root, then
// acts on. The default is the agent's own private directory, 0711 (victims may pass through to
// their HOME, nobody may list or write it):
//   a root agent            /var/lib/codl/scratch
//   any other (codlctl run) $XDG_CACHE_HOME/codl/scratch, else ~/.cache/codl/scratch
// CODL_SCRATCH_ROOTS (colon-separated) still names roots explicitly. /tmp and other
// world-writable roots are accepted when configured, with a warning.
#pragma once

#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::agent {

// The private default above for a system (root) agent or a user's; made when missing. An error
// names the directory when it cannot be made, or exists but is not the process's own or is
// writable by group or others.
Result<std::string> PrivateScratchRoot(bool system);

// `configured` when given, else $CODL_SCRATCH_ROOTS, else {PrivateScratchRoot(system)}.
Result<std::vector<std::string>> ScratchRootsOrDefault(const std::vector<std::string>& configured,
                                                       bool system);

// One warning per root writable by every user (e.g. /tmp, mode 1777).
std::vector<std::string> WorldWritableRootWarnings(const std::vector<std::string>& roots);

}  // namespace codl::agent
