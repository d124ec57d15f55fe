// The agent as a child subreaper (security issue 12: victim process trees).
// A victim that daemonizes a helper (fork, fork again, setsid) moves it out of its process group
// and, without a subreaper, re-parents it to init: neither killing the group nor PDEATHSIG
// reaches it. With PR_SET_CHILD_SUBREAPER the kernel re-parents such orphans to the agent
// instead. Each ChildProcess runs with CODL_AGENT_CHILD=<tag> in its environment (inherited by
// whatever it starts), which says whose an adopted orphan is:
// - its ChildProcess still runs: the orphan is kept, reaped when it exits, and listed with the
//   agent's children (LiveChildren) so a restarted agent kills it (agent/leftovers.h);
// - its ChildProcess was killed or is gone (the experiment is over): the orphan's process group
//   is killed, and it is reaped;
// - no tag (it cleared its environment): kept only while some ChildProcess runs.
// Only for a process whose children all come from ChildProcess (codl-agent): a sweep reaps any
// child it did not start itself. Forks and sweeps take one lock, so a child between fork() and
// its registration is never mistaken for an orphan.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/result.h"

namespace codl::agent {

inline constexpr const char* kChildTagEnv = "CODL_AGENT_CHILD";

// Sets PR_SET_CHILD_SUBREAPER on this process and starts the sweep thread (every 500 ms).
// Idempotent.
Status EnableSubreaper();
bool SubreaperEnabled();

// Held around every fork of a ChildProcess and by every sweep.
std::unique_lock<std::mutex> LockForks();
// A tag unique to this process and child ("<agent pid>.<n>").
std::string NewChildTag();
// Our own child `pid` (its owner reaps it), alive under `tag`. Call with LockForks held.
void RegisterChild(pid_t pid, const std::string& tag);
// The owner reaped `pid`; its tag stays alive until ReleaseTag.
void ForgetChild(pid_t pid);
// The child under `tag` was killed or is gone: kill its adopted orphans now (and any that are
// adopted later), and reap them.
void ReleaseTag(const std::string& tag);

// Adopted orphans whose owner still runs, as (pid, start ticks): for the leftovers file.
std::vector<std::pair<pid_t, uint64_t>> AdoptedOrphans();
// One sweep over /proc (the thread's work; tests call it to not wait). Returns how many orphans
// it killed.
int SweepOrphans();

}  // namespace codl::agent
