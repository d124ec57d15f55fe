// ChildProcess: one supervised child (an antagonist's codl-inject or a victim command).
// - own process group (so its helpers die with it), PR_SET_PDEATHSIG=SIGKILL (so it dies with
//   the agent even on SIGKILL) and a guard process that ends its whole tree then
//   (agent/child_guard.h), stdout delivered line by line, the tail of stderr kept.
// - forked from one long-lived spawner thread: PDEATHSIG fires when the *thread* that forked
//   exits, so forking from a short-lived gRPC worker thread would kill children at random.
// The fork itself is lib/common/subprocess.h; this class adds the spawner thread, the reader
// thread and the pid + start-time identity the leftovers file records.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/child_guard.h"
#include "agent/placement.h"
#include "lib/common/process_token.h"
#include "lib/common/result.h"
#include "lib/common/subprocess.h"

namespace codl::agent {

class ChildProcess {
 public:
  struct Options {
    std::vector<std::string> argv;           // argv[0] resolved with ResolveExecutable first
    std::map<std::string, std::string> env;  // added to (overriding) the agent's environment
    bool inherit_env = true;                 // false: `env` (and the child tag) alone
    // Empty: inherit. Checked as `run_as` when set (by the child, after the switch: a victim
    // learns nothing of paths its user cannot reach), else before the fork.
    std::string workdir;
    std::optional<RunAs> run_as;                           // nullopt: the agent's own uid/gid
    std::function<void(std::string_view line)> on_stdout;  // called from the reader thread
    // Set: the child also gets a progress pipe, its write end at descriptor kProgressFd, named
    // by CODL_PROGRESS_FD in its environment; each line written there is passed here (from the
    // reader thread, never concurrently with on_stdout). docs/victim.md, "Progress channel".
    std::function<void(std::string_view line)> on_progress;
    size_t stderr_tail_bytes = 4096;
    // Where it runs (Placer::Prepare); null: wherever the agent runs. In cgroup-v2 mode the
    // child joins the cgroup before exec; otherwise it inherits the spawner thread's affinity.
    std::shared_ptr<ChildPlacement> placement;
  };

  static constexpr int kProgressFd = 3;
  static constexpr const char* kProgressFdEnv = "CODL_PROGRESS_FD";

  static Result<std::unique_ptr<ChildProcess>> Spawn(Options options);
  ~ChildProcess();  // kills the group if still running and joins the reader

  pid_t pid() const { return proc_.pid(); }
  uint64_t start_time_ticks() const { return start_ticks_; }  // /proc/PID/stat field 22

  // SIGTERM to the process group, then SIGKILL after `grace_s` if still alive. Blocks until reaped.
  void Terminate(double grace_s);
  void Kill();
  // Waits up to timeout_s for exit. Returns true if it exited.
  bool WaitFor(double timeout_s);
  bool exited() const;
  // Exit status, or -signal if killed by a signal. Valid once exited().
  int exit_code() const;
  std::string stderr_tail() const;
  // User + system CPU seconds of the whole tree: cpu.stat of its cgroup, else the larger of
  // wait4's rusage and the /proc snapshot taken just before a stop. Final once exited().
  double cpu_seconds() const;
  // Seconds from the spawn to the exit (so far, while it runs).
  double run_seconds() const;
  // The CPUs it may run on, as applied at spawn ("0-3,6").
  const std::string& effective_cpus() const { return effective_cpus_; }

 private:
  ChildProcess() = default;
  void ReaderLoop(int out_fd, int err_fd, int progress_fd);
  // Records the live tree's CPU time before it is signalled (affinity mode's accounting).
  void SnapshotTreeCpu();

  Options options_;
  Subprocess proc_;   // reaped only by the reader thread; others just signal its group
  ChildGuard guard_;  // ends the tree if the agent is killed (child_guard.h)
  std::string tag_;   // CODL_AGENT_CHILD of it and all it starts (subreaper.h)
  uint64_t start_ticks_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool exited_ = false;
  int exit_code_ = 0;
  std::string stderr_tail_;
  std::shared_ptr<ChildPlacement> placement_;  // keeps the child's cgroup until destruction
  std::string effective_cpus_;
  double spawned_s_ = 0;   // SteadySeconds at spawn
  double exited_s_ = 0;    // SteadySeconds at the reap
  double wait_cpu_s_ = 0;  // wait4's rusage at the reap
  double live_cpu_s_ = 0;  // /proc snapshot of the group before a stop
};

// Every child spawned by this process that has not been destroyed and has not exited, and the
// orphans it adopted from them (subreaper.h), as (pid = process group, start time): what the
// agent's leftovers file lists.
std::vector<std::pair<pid_t, uint64_t>> LiveChildren();

// argv[0] without a '/': looked up first beside the running binary (so codl-inject and
// codl-victim are found next to codl-agent), then on PATH. Returns "" if not found.
std::string ResolveExecutable(const std::string& name);
// The folder holding the running executable.
std::string SelfDirectory();
// Start time (clock ticks since boot) of a process, 0 if it does not exist.
using codl::ProcessStartTicks;

}  // namespace codl::agent
