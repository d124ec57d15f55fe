// Cgroup v2 support for the agent's children. Where the agent has a delegated subtree (systemd
// Delegate=yes, a privileged pod: its own cgroup is writable and offers the cpu and cpuset
// controllers) every child gets a cgroup of its own: cpuset for placement, cpu.stat for the CPU
// time of the whole tree (exited descendants included) and cgroup.kill to end the tree, however
// it forked or re-grouped. Elsewhere (hybrid v1/v2 hosts, unprivileged containers) the agent
// falls back to sched_setaffinity + rusage (agent/placement.h says which mode is in use).
#pragma once

#include <memory>
#include <string>

#include "lib/common/result.h"

namespace codl::agent {

// One child's cgroup. The destructor kills whatever is still in it and removes the directory.
class Cgroup {
 public:
  // mkdir parent_dir/name (which must not exist yet) and open its cgroup.procs.
  static Result<std::unique_ptr<Cgroup>> Create(const std::string& parent_dir,
                                                const std::string& name);
  ~Cgroup();
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;

  const std::string& path() const { return path_; }
  // For SpawnOptions::cgroup_procs_fd: the child joins before exec.
  int procs_fd() const { return procs_fd_; }
  // cpuset.cpus / cpuset.mems ("" leaves one as inherited). Needs the cpuset controller.
  Status SetCpuset(const std::string& cpus, const std::string& mems);
  // cpuset.cpus.effective; "" without the cpuset controller.
  std::string EffectiveCpus() const;
  // usage_usec of cpu.stat (user + system, every process that ever ran in it), in seconds.
  Result<double> CpuSeconds() const;
  // Every process in the cgroup, SIGKILL (cgroup.kill; per pid on kernels before 5.14).
  void Kill();
  // True once no process is left (cgroup.events: populated 0), waiting up to timeout_s.
  bool WaitEmpty(double timeout_s) const;
  // Asks the kernel to reclaim everything charged to the cgroup (memory.reclaim, Linux 5.19+,
  // with the memory controller): after its processes are gone, that is the page cache they
  // filled. Returns the bytes memory.current fell by; an error without the memory controller.
  Result<int64_t> ReclaimMemory() const;

 private:
  Cgroup() = default;
  std::string path_;
  int procs_fd_ = -1;
};

// Whether this process can give its children cgroups, and where.
struct CgroupSupport {
  bool usable = false;
  std::string children_dir;  // where child cgroups are created
  std::string reason;        // why not (when !usable), for the log and `codlctl agents`
  // Reads /proc/self/mountinfo and /proc/self/cgroup; when delegated, moves the agent into a
  // leaf `codl-agent` (cgroup v2 allows controllers only in subtrees without processes) and
  // enables +cpu +cpuset for the children, and +memory where the hierarchy offers it.
  static CgroupSupport Detect();
};

// The cgroup2 mount point in a /proc/self/mountinfo text ("" if none): /sys/fs/cgroup on pure v2
// hosts, /sys/fs/cgroup/unified on hybrid ones.
std::string CgroupV2Mount(const std::string& mountinfo);
// The v2 path ("0::/a/b" line) in a /proc/self/cgroup text ("" if none).
std::string OwnCgroupV2Path(const std::string& proc_self_cgroup);
// Whether a cgroup.controllers line lists `name`.
bool HasController(const std::string& controllers, const std::string& name);

}  // namespace codl::agent
