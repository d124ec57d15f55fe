// The MPS control daemon, as mps_cotenant uses it: find a running one by its pipe directory's
// control socket, or start one (nvidia-cuda-mps-control -d), talk to it ("get_server_list",
// "quit"), and quit it afterwards only if this process started it. Host-only POSIX code (no
// CUDA), so the process and socket handling is tested on CI.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "injectors/core/stop_token.h"
#include "lib/common/result.h"

namespace codl::injectors::gpu {

struct MpsDirs {
  std::string pipe_dir;                    // CUDA_MPS_PIPE_DIRECTORY: the control socket lives here
  std::string log_dir;                     // CUDA_MPS_LOG_DIRECTORY: control.log, server.log
  std::vector<std::string> scratch_roots;  // where Acquire may create them (security item 6)
};

// Both empty: <first scratch root>/codl-mps/{pipe,log}, or /tmp/codl-mps/{pipe,log} without a
// scratch root. A given pipe_dir with an empty log_dir logs to "<pipe_dir>-log" (a sibling, so
// the pipe directory holds only what the daemon puts there).
MpsDirs ResolveMpsDirs(const std::string& pipe_option, const std::string& log_option,
                       const std::vector<std::string>& scratch_roots);

// Ok, or InvalidArgument(why the pipe directory cannot work: Unix socket paths are limited to
// 107 bytes and the daemon adds its own names under it).
Status CheckMpsPipeDir(const std::string& pipe_dir);

// Something accepts connections on <pipe_dir>/control: a live control daemon. A socket file
// left by a crashed daemon refuses the connection and counts as not running.
bool MpsControlRunning(const std::string& pipe_dir);

struct ProcessResult {
  int exit_code = -1;  // -1 when killed
  bool timed_out = false;
  std::string output;  // stdout + stderr (when captured)
};

// Runs argv[0] (a full path) with `env` added to this process's environment and `input` on its
// stdin. The input is written into the pipe before the fork, so a child that exits early cannot
// raise SIGPIPE here. Other inherited descriptors are closed in the child: a daemon must not keep
// codl-inject's stdout pipe (the agent's telemetry stream) open. Killed after `timeout_s`.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& input, double timeout_s, bool capture = true);

class MpsControl {
 public:
  // Uses the daemon listening in dirs.pipe_dir, or starts one when `may_start`.
  static Result<std::unique_ptr<MpsControl>> Acquire(const MpsDirs& dirs, bool may_start,
                                                     const StopToken& stop);
  ~MpsControl();  // QuitIfUnused(); its error goes to stderr

  bool started() const { return started_; }
  const MpsDirs& dirs() const { return dirs_; }

  // One control command ("get_server_list", "get_client_list 1234", "quit"); its output.
  Result<std::string> Command(const std::string& command, double timeout_s = 10) const;
  // The client PIDs of all the daemon's servers.
  Result<std::vector<long>> Clients() const;
  // Whether `pid` is a client of one of the daemon's servers (false when unsure).
  bool HasClient(pid_t pid) const;
  // Quits the daemon (and its servers) and waits for the control socket to go away.
  Status Quit();
  // What the destructor does for a daemon this object started: quit it unless a process other
  // than this one is still its client (the victim keeps running into the next phase; quitting
  // would kill its MPS server under it) or the client list cannot be read. Either way this
  // object no longer owns the daemon afterwards; the error says what was left running.
  Status QuitIfUnused();
  // Last lines of <log_dir>/server.log and control.log, for error messages.
  std::string LogTail() const;

 private:
  MpsControl(MpsDirs dirs, std::string binary)
      : dirs_(std::move(dirs)), binary_(std::move(binary)) {}
  std::map<std::string, std::string> Env() const;

  MpsDirs dirs_;
  std::string binary_;  // nvidia-cuda-mps-control, full path
  bool started_ = false;
};

}  // namespace codl::injectors::gpu
