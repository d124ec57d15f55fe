// How much memory an injector may take now without pushing the node (or its own cgroup) into
// reclaim trouble: what memcpy and llc compare their buffers with before allocating them.
//
// Not MemFree: a node that has read its dataset has a full page cache and little MemFree, yet
// clean file pages are reclaimed on demand. The node's figure is MemAvailable (the kernel's own
// estimate, page cache included). When the process is in a memory cgroup with a limit, the room
// is also bounded by that limit minus the cgroup's working set (usage minus its inactive file
// pages, the same rule kubelet uses), for the cgroup and each ancestor, on v2 and v1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace codl::injectors {

struct MemInfo {
  uint64_t total = 0;      // MemTotal, bytes
  uint64_t available = 0;  // MemAvailable, bytes
  bool ok = false;         // both fields found
};

// Parses /proc/meminfo text ("MemTotal:  24576000 kB" lines).
MemInfo ParseMemInfo(const std::string& text);

struct MemoryRoom {
  uint64_t mem_available = 0;           // /proc/meminfo MemAvailable, bytes
  std::optional<uint64_t> cgroup_room;  // limit − working set of the tightest cgroup level
  std::string cgroup;                   // that level's path, for messages
  uint64_t bytes() const;               // the smaller of the two
  // "22.1 GiB available (MemAvailable 22.1 GiB; cgroup /a: 3.0 GiB under its limit)"
  std::string Describe() const;
};

// The cgroup files one level needs: the limit, the usage and the inactive file pages.
struct CgroupMemoryFiles {
  std::string limit;  // memory.max ("max" or bytes) / memory.limit_in_bytes
  std::string usage;  // memory.current / memory.usage_in_bytes
  std::string stat;   // memory.stat ("inactive_file N" / "total_inactive_file N")
};

// Room under one level: nullopt for no limit ("max", or v1's huge sentinel) or unreadable
// figures. Working set = usage − inactive file pages (never below 0).
std::optional<uint64_t> CgroupRoom(const CgroupMemoryFiles& f);

// Reads it all: `proc` is /proc, `cgroup_fs` the cgroup mount root (/sys/fs/cgroup). Tests
// point both at a fake tree. nullopt when /proc/meminfo has no MemAvailable (Linux < 3.14).
std::optional<MemoryRoom> ReadMemoryRoom(const std::string& proc = "/proc",
                                         const std::string& cgroup_fs = "/sys/fs/cgroup");

}  // namespace codl::injectors
