// ChildGuard: a tiny process beside each agent child (victim or antagonist) that outlives a
// killed agent just long enough to end the child's whole tree. PR_SET_PDEATHSIG reaches only
// the child itself: when the agent is killed with SIGKILL, what the child started (`sleep N &`
// in a victim's shell, a daemon it detached with setsid) would live on, re-parented to init.
// The guard holds the read end of a pipe whose write end only the agent has:
// - the agent is done with the child (it ended or was stopped): it writes one byte, the guard
//   exits at once;
// - the agent died: the kernel closes the write end, the guard reads end-of-file and kills, a
//   few times over half a second, the child's process group, its cgroup (cgroup.kill) where it
//   has one, and every process that carries the child's tag in its environment
//   (CODL_AGENT_CHILD, agent/subreaper.h: inherited by all it starts, setsid or not).
// The guard is forked without exec (async-signal-safe code only), in a process group of its
// own, with no descriptor of the agent's but its pipe end.
#pragma once

#include <sys/types.h>

#include <string>

#include "lib/common/result.h"
#include "lib/common/subprocess.h"

namespace codl::agent {

class ChildGuard {
 public:
  ChildGuard() = default;  // none: Release does nothing
  // Forks the guard of the child that leads process group `group`, tagged `tag`, in cgroup
  // directory `cgroup_dir` ("" when it has none). Call it from the thread that forks the
  // agent's children, with LockForks held (the guard is registered as the agent's own child).
  static Result<ChildGuard> Start(pid_t group, const std::string& tag,
                                  const std::string& cgroup_dir);
  ChildGuard(ChildGuard&&) noexcept = default;
  ChildGuard& operator=(ChildGuard&&) noexcept = default;
  ~ChildGuard() { Release(); }

  // The agent is done with the child: the guard exits without killing anything; reaped here.
  void Release();
  pid_t pid() const { return proc_.pid(); }
  // Test hook: closes the agent's end unwritten, as the kernel does when the agent dies, and
  // reaps the guard once it has done its work.
  void CloseWithoutRelease();

 private:
  Subprocess proc_;
};

// What the guard does once the agent is gone (also a test hook): kills, `rounds` times 100 ms
// apart, every process whose environment holds `tag_entry` ("CODL_AGENT_CHILD=TAG"), process
// group `group` while a tagged process shows it is still the child's (never a group that
// took the id over), and the cgroup whose cgroup.kill file is `cgroup_kill` (may be empty).
// Async-signal-safe. Returns how many processes carried the tag in the first round.
int KillChildTree(pid_t group, const char* tag_entry, const char* cgroup_kill, int rounds);

}  // namespace codl::agent
