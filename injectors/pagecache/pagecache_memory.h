// The `pagecache` injector's pure parts: reading the node's memory state (/proc/meminfo,
// /proc/pressure/memory) and deciding, each control step, how much to grow or release so the
// held amount approaches the target without MemAvailable falling below the floor.
#pragma once

#include <cstdint>
#include <string>

#include "injectors/core/memory_room.h"  // MemInfo, ParseMemInfo

namespace codl::injectors {

// "some avg10=" of /proc/pressure/memory text, in percent; -1 when absent or unparsable
// (kernels without PSI, psi=0, some containers).
double ParsePsiSomeAvg10(const std::string& text);

// The default floor: the larger of 10% of MemTotal and 1 GiB.
uint64_t DefaultFloor(uint64_t mem_total);

struct MemoryPolicy {
  uint64_t floor = 0;       // MemAvailable must stay at or above this
  double psi_limit = 0;     // back off while PSI some avg10 exceeds it (percent; 0 = ignore)
  uint64_t step = 0;        // most grown per control step; released per step under PSI
  uint64_t granule = 4096;  // sizes are multiples of this (a page)
};

struct MemoryState {
  uint64_t held = 0;          // what we hold now
  uint64_t desired = 0;       // the target (already capped by the `limit` option)
  uint64_t available = 0;     // MemAvailable now
  double psi = -1;            // PSI some avg10, -1 unknown
  bool psi_cooldown = false;  // released for PSI less than a second ago: do not release again
};

struct MemoryDecision {
  int64_t delta = 0;        // bytes to grow (> 0) or release (< 0)
  bool backed_off = false;  // released (or refused to grow) because of the floor or PSI
  std::string reason;       // "floor" or "psi" when backed_off
};

// One control step. Releases first (MemAvailable below the floor: exactly the shortfall,
// rounded up to a granule; PSI above the limit: one step, unless in cooldown), never grows
// under pressure, otherwise grows towards `desired` by at most `step` and only into
// MemAvailable − floor, or shrinks to `desired` when above it.
MemoryDecision DecideMemoryStep(const MemoryState& s, const MemoryPolicy& p);

}  // namespace codl::injectors
