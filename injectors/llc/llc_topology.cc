#include "injectors/llc/llc_topology.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <numeric>

#include "lib/common/random.h"

namespace codl::injectors {

uint64_t ParseCacheSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  char* end = nullptr;
  uint64_t v = std::strtoull(text.c_str(), &end, 10);
  const std::string suffix(end);
  if (suffix.empty()) return v;
  if (suffix == "K") return v << 10;
  if (suffix == "M") return v << 20;
  if (suffix == "G") return v << 30;
  return 0;
}

std::vector<CacheInfo> ReadCacheTopology(const std::string& cpu_dir) {
  std::vector<CacheInfo> caches;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = cpu_dir + "/cache/index" + std::to_string(i) + "/";
    std::ifstream level_f(dir + "level"), type_f(dir + "type"), size_f(dir + "size");
    CacheInfo c;
    std::string size;
    if (!(level_f >> c.level) || !(type_f >> c.type) || !(size_f >> size)) continue;
    c.size = ParseCacheSize(size);
    if (c.size == 0) continue;
    std::ifstream line_f(dir + "coherency_line_size"), shared_f(dir + "shared_cpu_list");
    if (!(line_f >> c.line_size) || c.line_size == 0) c.line_size = 64;
    shared_f >> c.shared_cpus;
    caches.push_back(c);
  }
  return caches;
}

const CacheInfo* LastLevelCache(const std::vector<CacheInfo>& caches) {
  const CacheInfo* best = nullptr;
  for (const auto& c : caches) {
    if (c.type == "Instruction") continue;
    if (best == nullptr || c.level > best->level) best = &c;
  }
  return best;
}

std::vector<uint32_t> RandomCycle(size_t lines, uint64_t seed) {
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  XorShift64Star rng(seed | 1);
  // Shuffle the visiting order (Fisher-Yates), then link it into a ring: one cycle.
  for (size_t i = lines; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.Next() % i);
    std::swap(order[i - 1], order[j]);
  }
  std::vector<uint32_t> succ(lines);
  for (size_t i = 0; i < lines; ++i) succ[order[i]] = order[(i + 1) % lines];
  return succ;
}

size_t CoprimeStride(size_t lines, size_t target) {
  if (lines <= 1) return 1;
  size_t stride = std::max<size_t>(1, target % lines);
  while (std::gcd(stride, lines) != 1) stride = stride % lines + 1;
  return stride;
}

}  // namespace codl::injectors
