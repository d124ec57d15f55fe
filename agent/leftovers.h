// The agent's state dir and its leftovers file (security issue, items 5 and 6).
//
// Every child the agent runs (antagonists, calibrations, victims) leads its own process group.
// PDEATHSIG kills the child itself when the agent dies, even on SIGKILL, but not what the child
// started (a victim's workers, a shell's pipeline). So the agent lists its children in
// STATE_DIR/children, and a restarted agent kills those groups — only what is verifiably its
// own: a listed leader only if its start time and executable still match, and group members
// only if they started before the file was written (a recycled process-group id cannot have
// members that old). The state dir must be owned by the agent's user and not writable by
// others; the file is replaced through an O_EXCL|O_NOFOLLOW temp file beneath its descriptor.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/common/result.h"
#include "lib/common/safe_fs.h"

namespace codl::agent {

struct ChildRecord {
  pid_t pid = 0;             // also its process-group id
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22
  std::string exe;           // /proc/PID/exe when recorded ("" if unreadable)
};

// Opens (creating it 0700 when missing) and checks the state dir.
Result<UniqueFd> OpenStateDir(const std::string& state_dir);

// Replaces STATE_DIR/children with `children` (exe filled in from /proc here).
Status WriteLeftovers(const std::string& state_dir, std::vector<ChildRecord> children);

// Kills the process groups listed in STATE_DIR/children by a previous agent run (see above).
// Returns how many processes were signalled.
Result<int> KillLeftovers(const std::string& state_dir);

// Clock ticks since boot now, on the scale of /proc/PID/stat start times.
uint64_t BootTicksNow();
// /proc/PID/exe, "" when unreadable.
std::string ProcessExe(pid_t pid);

}  // namespace codl::agent
