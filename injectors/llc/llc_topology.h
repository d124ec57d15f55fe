// The `llc` injector's pure parts: the node's cache topology from sysfs, and the walk orders
// over a working set (a random single-cycle pointer chase, a prime-stride sweep).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace codl::injectors {

struct CacheInfo {
  int level = 0;
  std::string type;  // "Data", "Unified", "Instruction"
  uint64_t size = 0;
  uint64_t line_size = 64;
  std::string shared_cpus;  // shared_cpu_list, e.g. "0-15"
};

// Parses sysfs cache sizes: "48K", "2048K", "32M", "1G" or plain bytes; 0 when unparsable.
uint64_t ParseCacheSize(const std::string& text);

// Every cache of `cpu_dir` (e.g. /sys/devices/system/cpu/cpu0): its cache/index*/ entries
// that have at least level, type and size. Empty when sysfs has none (some VMs, containers).
std::vector<CacheInfo> ReadCacheTopology(const std::string& cpu_dir);

// The highest-level data or unified cache; nullptr when `caches` has none.
const CacheInfo* LastLevelCache(const std::vector<CacheInfo>& caches);

// next[i] = the line visited after line i, forming ONE cycle through all `lines` lines in
// random order (a shuffled order linked into a ring), so a chase visits every line before repeating
// and the hardware prefetchers cannot guess the next address. Deterministic for a seed.
std::vector<uint32_t> RandomCycle(size_t lines, uint64_t seed);

// A stride in lines, coprime with `lines`, near `target` (at least 1): a sweep i·stride mod
// lines then visits every line once per `lines` steps while jumping past the prefetchers' reach.
size_t CoprimeStride(size_t lines, size_t target);

}  // namespace codl::injectors
