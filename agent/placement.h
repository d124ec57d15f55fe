// Placement of the agent's children (experiment YAML `cpus:` / `numa:`) and the mode the agent
// uses for placement, CPU accounting and tree cleanup:
// - cgroup-v2: a delegated cgroup v2 subtree (agent/cgroup.h): one cgroup per child, cpuset,
//   cpu.stat, cgroup.kill;
// - affinity: sched_setaffinity (+ set_mempolicy for numa) applied to the forking thread, so the
//   child inherits it at fork; CPU time from wait4 and /proc (agent/cpu_usage.h).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "agent/cgroup.h"
#include "lib/common/result.h"
#include "lib/spec/spec.h"

namespace codl::agent {

enum class PlacementMode { kAffinity, kCgroupV2 };
// "cgroup-v2" or "affinity": the agents' `placement` label.
const char* PlacementModeName(PlacementMode mode);

// The CPUs this agent may hand out and the CPUs of each NUMA node.
struct NodeCpus {
  std::set<int> cpus;                 // the agent's own affinity
  std::map<int, std::set<int>> numa;  // node id -> /sys/devices/system/node/nodeN/cpulist
  static NodeCpus Read(const std::string& node_sysfs = "/sys/devices/system/node");
};

// What the child is given, checked against the node.
struct ResolvedPlacement {
  std::set<int> cpus;  // empty: unrestricted
  int numa = -1;       // memory bound to this node; -1: unrestricted
};

// Checks a placement against the node. Errors name the YAML location and what the node has:
// "exp.yaml:9:3: victim: cpus 8-9: not on node gpu1 (its CPUs: 0-7)".
Result<ResolvedPlacement> ResolvePlacement(const experiment::PlacementSpec& spec,
                                           const NodeCpus& node, const std::string& node_name);

// What ChildProcess applies at spawn time (see ChildProcess::Options::placement).
struct ChildPlacement {
  ResolvedPlacement resolved;
  std::unique_ptr<Cgroup> cgroup;  // cgroup-v2 mode only
};

class Placer {
 public:
  // Detects the mode (CgroupSupport::Detect) and reads the node's CPUs.
  static std::unique_ptr<Placer> Detect(const std::string& node_name);
  Placer(PlacementMode mode, std::string cgroup_dir, NodeCpus node, std::string node_name,
         std::string reason);

  PlacementMode mode() const { return mode_; }
  const std::string& reason() const { return reason_; }  // why not cgroup-v2
  const NodeCpus& node() const { return node_; }

  // Resolves the placement and, in cgroup-v2 mode, creates the child's cgroup (named after
  // `child_name`, made unique) with its cpuset.
  Result<std::shared_ptr<ChildPlacement>> Prepare(const experiment::PlacementSpec& spec,
                                                  const std::string& child_name) const;

 private:
  PlacementMode mode_;
  std::string cgroup_dir_;
  NodeCpus node_;
  std::string node_name_;
  std::string reason_;
};

// While alive, the calling thread has the placement's CPU affinity and NUMA memory policy (a
// fork inherits both); restored on destruction. Used on the spawner thread in affinity mode.
class ScopedThreadPlacement {
 public:
  explicit ScopedThreadPlacement(const ResolvedPlacement& p);
  ~ScopedThreadPlacement();
  ScopedThreadPlacement(const ScopedThreadPlacement&) = delete;
  ScopedThreadPlacement& operator=(const ScopedThreadPlacement&) = delete;
  // Empty when applied; else why not (the spawn is then refused).
  const std::string& error() const { return error_; }

 private:
  std::set<int> saved_cpus_;
  bool cpus_set_ = false;
  bool policy_set_ = false;
  std::string error_;
};

}  // namespace codl::agent
