#include "injectors/gpu/mps_start.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/common/clock.h"

namespace codl::injectors::gpu {

Result<MpsStartLock> MpsStartLock::Take(const std::string& pipe_dir, double timeout_s,
                                        const StopToken& stop) {
  const std::string path = pipe_dir + "/.codl-mps-start.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Err("opening the MPS start lock " + path + ": " + std::strerror(errno));
  MpsStartLock lock(fd);
  const double deadline = SteadySeconds() + timeout_s;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Err("locking " + path + ": " + std::strerror(errno));
    }
    if (SteadySeconds() > deadline) {
      return Err("another process held " + path + " (starting the MPS daemon) for over " +
                 std::to_string(static_cast<int>(timeout_s)) + "s");
    }
    if (stop.SleepFor(0.02)) return Err("stopped while waiting for the MPS start lock");
  }
  return lock;
}

MpsStartLock::~MpsStartLock() {
  if (fd_ >= 0) close(fd_);  // closing the only descriptor releases the flock
}

const std::vector<std::string>& MpsDaemonScrubbedEnv() {
  static const std::vector<std::string> vars = {
      "CUDA_VISIBLE_DEVICES",
      "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
      "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
  };
  return vars;
}

std::vector<std::string> MpsDaemonStartArgv(const std::string& control_binary,
                                            const std::string& env_binary) {
  std::vector<std::string> argv = {env_binary};
  for (const std::string& var : MpsDaemonScrubbedEnv()) {
    argv.push_back("-u");
    argv.push_back(var);
  }
  argv.push_back(control_binary);
  argv.push_back("-d");
  return argv;
}

}  // namespace codl::injectors::gpu
