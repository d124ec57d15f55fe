// CPU time of a child's process tree without cgroups (the affinity fallback): what wait4 reports
// at the reap covers the child and the descendants it waited for; a tree stopped by a signal
// leaves live descendants that no one waits for, so their time is read from /proc just before
// the stop. The larger of the two is the tree's time.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>

namespace codl::agent {

// Sum over the live processes of process group `pgid` of their own CPU time plus that of the
// children they have reaped (utime + stime + cutime + cstime of /proc/PID/stat), in seconds.
// A reaped process is counted once, in its reaper's cutime; 0 when the group is gone.
double ProcessGroupCpuSeconds(pid_t pgid, const std::string& proc_root = "/proc");

// Fields of one /proc/PID/stat line, for ProcessGroupCpuSeconds and its tests.
struct ProcStat {
  pid_t pgrp = 0;
  unsigned long long ticks = 0;  // utime + stime + cutime + cstime
  bool ok = false;
};
ProcStat ParseProcStat(const std::string& line);

// The CPUs a process may run on (sched_getaffinity); empty if it is gone.
std::set<int> AffinityOf(pid_t pid);

}  // namespace codl::agent
