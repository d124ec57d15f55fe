#include "lib/common/cpu_list.h"

#include <charconv>

#include "lib/common/units.h"

namespace codl {
namespace {

Result<int> CpuNumber(std::string_view s, std::string_view item, int max_cpu) {
  s = TrimSpace(s);
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return Err("'" + std::string(item) + "' is not a CPU number or range (e.g. 0-3,6)");
  }
  if (v < 0 || v > max_cpu) {
    return Err("CPU " + std::string(s) + " is out of range 0-" + std::to_string(max_cpu));
  }
  return v;
}

}  // namespace

Result<std::set<int>> ParseCpuList(std::string_view text, int max_cpu) {
  if (TrimSpace(text).empty()) return Err("empty CPU list (expected e.g. 0-3,6)");
  std::set<int> cpus;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = TrimSpace(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) return Err("empty item in CPU list '" + std::string(text) + "'");
    const size_t dash = item.find('-');
    auto lo = CpuNumber(item.substr(0, dash), item, max_cpu);
    if (!lo.ok()) return lo.status();
    int hi_v = *lo;
    if (dash != std::string_view::npos) {
      auto hi = CpuNumber(item.substr(dash + 1), item, max_cpu);
      if (!hi.ok()) return hi.status();
      if (*hi < *lo) return Err("reversed range '" + std::string(item) + "'");
      hi_v = *hi;
    }
    for (int c = *lo; c <= hi_v; ++c) {
      if (!cpus.insert(c).second) {
        return Err("CPU " + std::to_string(c) + " appears twice in '" + std::string(text) + "'");
      }
    }
  }
  return cpus;
}

std::string FormatCpuList(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int lo = *it;
    int hi = lo;
    for (++it; it != cpus.end() && *it == hi + 1; ++it) hi = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(lo);
    if (hi > lo) out += (hi == lo + 1 ? "," : "-") + std::to_string(hi);
  }
  return out;
}

}  // namespace codl
