#include "agent/placement.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/cpu_usage.h"
#include "lib/common/cpu_list.h"

namespace codl::agent {
namespace {

constexpr int kMpolDefault = 0;  // <linux/mempolicy.h>: MPOL_DEFAULT, MPOL_BIND
constexpr int kMpolBind = 2;

using codl::FormatCpuList;

std::set<int> Minus(const std::set<int>& a, const std::set<int>& b) {
  std::set<int> out;
  for (int x : a) {
    if (!b.count(x)) out.insert(x);
  }
  return out;
}

std::set<int> Intersect(const std::set<int>& a, const std::set<int>& b) {
  std::set<int> out;
  for (int x : a) {
    if (b.count(x)) out.insert(x);
  }
  return out;
}

std::string NodeIds(const std::map<int, std::set<int>>& numa) {
  std::set<int> ids;
  for (const auto& [id, cpus] : numa) ids.insert(id);
  return ids.empty() ? "none listed in /sys/devices/system/node" : FormatCpuList(ids);
}

bool SetAffinity(const std::set<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace

const char* PlacementModeName(PlacementMode mode) {
  return mode == PlacementMode::kCgroupV2 ? "cgroup-v2" : "affinity";
}

NodeCpus NodeCpus::Read(const std::string& node_sysfs) {
  NodeCpus n;
  n.cpus = AffinityOf(0);
  DIR* d = opendir(node_sysfs.c_str());
  if (d == nullptr) return n;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 5 || name.rfind("node", 0) != 0 ||
        !std::isdigit(static_cast<unsigned char>(name[4]))) {
      continue;
    }
    std::ifstream in(node_sysfs + "/" + name + "/cpulist");
    std::string list;
    std::getline(in, list);
    auto cpus = codl::ParseCpuList(list);
    n.numa[std::atoi(name.c_str() + 4)] = cpus.ok() ? *cpus : std::set<int>{};  // memory-only
  }
  closedir(d);
  return n;
}

Result<ResolvedPlacement> ResolvePlacement(const experiment::PlacementSpec& spec,
                                           const NodeCpus& node, const std::string& node_name) {
  ResolvedPlacement r;
  const std::string where = spec.where.empty() ? "placement" : spec.where;
  const std::string on = " on node " + node_name + " (its CPUs: " + FormatCpuList(node.cpus) + ")";
  if (!spec.cpus.empty()) {
    auto cpus = codl::ParseCpuList(spec.cpus);
    if (!cpus.ok()) return cpus.status().WithContext(where + ": cpus " + spec.cpus);
    const std::set<int> missing = Minus(*cpus, node.cpus);
    if (!missing.empty()) {
      return Err(where + ": cpus " + spec.cpus + ": CPU " + FormatCpuList(missing) +
                 " not available" + on);
    }
    r.cpus = *cpus;
  }
  if (spec.numa >= 0) {
    auto it = node.numa.find(spec.numa);
    if (it == node.numa.end()) {
      return Err(where + ": numa " + std::to_string(spec.numa) + ": no such NUMA node on node " +
                 node_name + " (its NUMA nodes: " + NodeIds(node.numa) + ")");
    }
    // numa restricts the CPUs to the node's (and binds memory there): a cpus list narrows it.
    const std::set<int> numa_cpus = Intersect(it->second, node.cpus);
    const std::set<int> cpus = r.cpus.empty() ? numa_cpus : Intersect(r.cpus, numa_cpus);
    if (cpus.empty()) {
      return Err(where + ": numa " + std::to_string(spec.numa) + " (CPUs " +
                 FormatCpuList(it->second) + ")" +
                 (spec.cpus.empty() ? std::string() : " and cpus " + spec.cpus) +
                 " leave no CPU to run on" + on);
    }
    r.cpus = cpus;
    r.numa = spec.numa;
  }
  return r;
}

std::unique_ptr<Placer> Placer::Detect(const std::string& node_name) {
  // Once per process: several agents in one process (the embedded `codlctl run`, tests) share it.
  static const CgroupSupport cg = CgroupSupport::Detect();
  return std::make_unique<Placer>(cg.usable ? PlacementMode::kCgroupV2 : PlacementMode::kAffinity,
                                  cg.children_dir, NodeCpus::Read(), node_name, cg.reason);
}

Placer::Placer(PlacementMode mode, std::string cgroup_dir, NodeCpus node, std::string node_name,
               std::string reason)
    : mode_(mode),
      cgroup_dir_(std::move(cgroup_dir)),
      node_(std::move(node)),
      node_name_(std::move(node_name)),
      reason_(std::move(reason)) {}

Result<std::shared_ptr<ChildPlacement>> Placer::Prepare(const experiment::PlacementSpec& spec,
                                                        const std::string& child_name) const {
  auto resolved = ResolvePlacement(spec, node_, node_name_);
  if (!resolved.ok()) return resolved.status();
  auto p = std::make_shared<ChildPlacement>();
  p->resolved = *resolved;
  if (mode_ != PlacementMode::kCgroupV2) return p;
  static std::atomic<uint64_t> serial{0};
  std::string name = "codl-";
  for (char c : child_name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  name = name.substr(0, 64) + "-" + std::to_string(getpid()) + "-" + std::to_string(++serial);
  auto cg = Cgroup::Create(cgroup_dir_, name);
  if (!cg.ok()) return cg.status();
  const std::string mems = resolved->numa >= 0 ? std::to_string(resolved->numa) : "";
  if (Status s = (*cg)->SetCpuset(FormatCpuList(resolved->cpus), mems); !s.ok()) {
    return s.WithContext((spec.where.empty() ? "placement" : spec.where));
  }
  p->cgroup = std::move(*cg);
  return p;
}

ScopedThreadPlacement::ScopedThreadPlacement(const ResolvedPlacement& p) {
  if (!p.cpus.empty()) {
    saved_cpus_ = AffinityOf(0);
    if (!SetAffinity(p.cpus)) {
      error_ = "sched_setaffinity(" + FormatCpuList(p.cpus) + "): " + std::strerror(errno);
      return;
    }
    cpus_set_ = true;
  }
  if (p.numa >= 0) {
    std::vector<unsigned long> mask(p.numa / (8 * sizeof(unsigned long)) + 1, 0);
    mask[p.numa / (8 * sizeof(unsigned long))] |= 1UL << (p.numa % (8 * sizeof(unsigned long)));
    const unsigned long maxnode = mask.size() * 8 * sizeof(unsigned long) + 1;
    if (syscall(SYS_set_mempolicy, kMpolBind, mask.data(), maxnode) == 0) {
      policy_set_ = true;
    } else {
      // Seccomp profiles often deny it: the CPUs are still the node's, memory follows first touch.
      spdlog::warn("set_mempolicy(MPOL_BIND, node {}): {}; only the CPUs are restricted", p.numa,
                   std::strerror(errno));
    }
  }
}

ScopedThreadPlacement::~ScopedThreadPlacement() {
  if (cpus_set_) SetAffinity(saved_cpus_);
  if (policy_set_) syscall(SYS_set_mempolicy, kMpolDefault, nullptr, 0);
}

}  // namespace codl::agent
