// Starting the MPS control daemon safely when several co-tenants (one per GPU, say) share a
// pipe directory:
//   * MpsStartLock: "is a daemon listening? if not, start one" under an flock on a file in the
//     pipe directory, so exactly one co-tenant starts it and the others join it. Without the
//     lock all eight saw no daemon and all ran `-d`; the first to finish then quit the daemon
//     the others were using.
//   * MpsDaemonStartArgv: the daemon is started through `env -u` without this process's
//     CUDA_VISIBLE_DEVICES (the daemon would confine every client to the co-tenant's GPU, a
//     multi-GPU victim included) or MPS client limits (a daemon's values become every client's
//     default).
// Host-only POSIX code, tested with a fake control program (tests/gpu/mps_daemon_test.cc).
#pragma once

#include <string>
#include <vector>

#include "injectors/core/stop_token.h"
#include "lib/common/result.h"

namespace codl::injectors::gpu {

class MpsStartLock {
 public:
  // Blocks (polling, so `stop` ends the wait) until this process holds the lock on
  // <pipe_dir>/.codl-mps-start.lock; the pipe directory must exist.
  static Result<MpsStartLock> Take(const std::string& pipe_dir, double timeout_s,
                                   const StopToken& stop);
  MpsStartLock(MpsStartLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  MpsStartLock& operator=(MpsStartLock&&) = delete;
  MpsStartLock(const MpsStartLock&) = delete;
  ~MpsStartLock();  // releases the lock

 private:
  explicit MpsStartLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Variables this process may carry that must not reach the control daemon.
const std::vector<std::string>& MpsDaemonScrubbedEnv();

// {env_binary, "-u", VAR, ..., control_binary, "-d"}.
std::vector<std::string> MpsDaemonStartArgv(const std::string& control_binary,
                                            const std::string& env_binary);

}  // namespace codl::injectors::gpu
