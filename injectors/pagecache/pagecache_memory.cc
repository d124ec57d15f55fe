#include "injectors/pagecache/pagecache_memory.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace codl::injectors {

double ParsePsiSomeAvg10(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("some ", 0) != 0) continue;
    const size_t at = line.find("avg10=");
    if (at == std::string::npos) return -1;
    const char* p = line.c_str() + at + 6;
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    return end == p ? -1 : v;
  }
  return -1;
}

uint64_t DefaultFloor(uint64_t mem_total) { return std::max<uint64_t>(mem_total / 10, 1ULL << 30); }

namespace {
uint64_t RoundUp(uint64_t v, uint64_t g) { return (v + g - 1) / g * g; }
uint64_t RoundDown(uint64_t v, uint64_t g) { return v / g * g; }
}  // namespace

MemoryDecision DecideMemoryStep(const MemoryState& s, const MemoryPolicy& p) {
  MemoryDecision d;
  const uint64_t g = std::max<uint64_t>(1, p.granule);
  if (s.available < p.floor) {
    const uint64_t release = std::min(s.held, RoundUp(p.floor - s.available, g));
    d.delta = -static_cast<int64_t>(release);
    d.backed_off = true;
    d.reason = "floor";
    return d;
  }
  if (p.psi_limit > 0 && s.psi > p.psi_limit) {
    // PSI averages over 10 s, so it lags a release; one step per cooldown, not one per poll.
    if (!s.psi_cooldown) d.delta = -static_cast<int64_t>(std::min(s.held, RoundUp(p.step, g)));
    d.backed_off = true;
    d.reason = "psi";
    return d;
  }
  if (s.held > s.desired) {
    d.delta = -static_cast<int64_t>(RoundDown(s.held - s.desired, g));
    return d;
  }
  const uint64_t room = s.available - p.floor;
  const uint64_t want = s.desired - s.held;
  const uint64_t grow = RoundDown(std::min({want, room, p.step}), g);
  d.delta = static_cast<int64_t>(grow);
  // Held back by the floor (not by the target or the step): that is a back-off too.
  if (room < std::min(want, p.step) && RoundDown(want, g) > 0) {
    d.backed_off = true;
    d.reason = "floor";
  }
  return d;
}

}  // namespace codl::injectors
