#include "injectors/core/memory_room.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "lib/common/read_file.h"
#include "lib/common/units.h"

namespace codl::injectors {
namespace {

// v1 reports "no limit" as PAGE_COUNTER_MAX pages (9223372036854771712 on 4 KiB pages).
constexpr uint64_t kUnlimitedAbove = uint64_t{1} << 62;

std::optional<uint64_t> ParseBytes(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos ||
      word.size() > 19) {
    return std::nullopt;
  }
  return std::stoull(word);
}

// "KEY N" lines (memory.stat); nullopt when KEY is absent.
std::optional<uint64_t> StatField(const std::string& stat, const std::string& key) {
  std::istringstream in(stat);
  std::string k, v;
  while (in >> k >> v) {
    if (k == key) return ParseBytes(v);
  }
  return std::nullopt;
}

// The process's cgroup path for the memory controller: v1's "N:...memory...:/p" line, else the
// v2 "0::/p" line; `v1` says which.
std::optional<std::string> MemoryCgroupPath(const std::string& self_cgroup, bool* v1) {
  std::istringstream in(self_cgroup);
  std::string line;
  std::optional<std::string> unified;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) {
      unified = path;
      continue;
    }
    std::istringstream cs(controllers);
    for (std::string c; std::getline(cs, c, ',');) {
      if (c == "memory") {
        *v1 = true;
        return path;
      }
    }
  }
  *v1 = false;
  return unified;
}

// "/a/b/c" -> "/a/b/c", "/a/b", "/a" (the root level has no limit of its own).
std::vector<std::string> Levels(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    out.push_back(path);
    const size_t slash = path.rfind('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
  return out;
}

CgroupMemoryFiles ReadLevel(const std::string& dir, bool v1) {
  CgroupMemoryFiles f;
  f.limit = ReadFileText(dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max")).value_or("");
  f.usage = ReadFileText(dir + (v1 ? "/memory.usage_in_bytes" : "/memory.current")).value_or("");
  f.stat = ReadFileText(dir + "/memory.stat").value_or("");
  return f;
}

}  // namespace

MemInfo ParseMemInfo(const std::string& text) {
  MemInfo m;
  bool total = false, available = false;
  std::istringstream in(text);
  std::string key, unit;
  uint64_t value;
  while (in >> key >> value) {
    std::getline(in, unit);  // " kB" (or nothing, for the few count fields)
    const uint64_t bytes = unit.find("kB") != std::string::npos ? value * 1024 : value;
    if (key == "MemTotal:") m.total = bytes, total = true;
    if (key == "MemAvailable:") m.available = bytes, available = true;
  }
  m.ok = total && available;
  return m;
}

uint64_t MemoryRoom::bytes() const {
  return cgroup_room ? std::min(mem_available, *cgroup_room) : mem_available;
}

std::string MemoryRoom::Describe() const {
  std::string s = FormatSize(static_cast<double>(bytes())) + " available (MemAvailable " +
                  FormatSize(static_cast<double>(mem_available));
  if (cgroup_room) {
    s += "; cgroup " + cgroup + ": " + FormatSize(static_cast<double>(*cgroup_room)) +
         " under its limit";
  }
  return s + ")";
}

std::optional<uint64_t> CgroupRoom(const CgroupMemoryFiles& f) {
  auto limit = ParseBytes(f.limit);  // "max" does not parse: no limit
  if (!limit || *limit >= kUnlimitedAbove) return std::nullopt;
  auto usage = ParseBytes(f.usage);
  if (!usage) return std::nullopt;
  auto inactive = StatField(f.stat, "total_inactive_file");
  if (!inactive) inactive = StatField(f.stat, "inactive_file");
  const uint64_t working = *usage - std::min(*usage, inactive.value_or(0));
  return *limit > working ? *limit - working : 0;
}

std::optional<MemoryRoom> ReadMemoryRoom(const std::string& proc, const std::string& cgroup_fs) {
  const MemInfo meminfo = ParseMemInfo(ReadFileText(proc + "/meminfo").value_or(""));
  if (!meminfo.ok) return std::nullopt;
  MemoryRoom room;
  room.mem_available = meminfo.available;
  bool v1 = false;
  auto self = ReadFileText(proc + "/self/cgroup");
  auto path = self ? MemoryCgroupPath(*self, &v1) : std::nullopt;
  if (!path) return room;
  // v2 is mounted at the root (unified) or at unified/ (hybrid, where memory may be v2 too).
  std::vector<std::string> mounts =
      v1 ? std::vector<std::string>{cgroup_fs + "/memory"}
         : std::vector<std::string>{cgroup_fs, cgroup_fs + "/unified"};
  for (const std::string& mount : mounts) {
    for (const std::string& level : Levels(*path)) {
      auto r = CgroupRoom(ReadLevel(mount + level, v1));
      if (r && (!room.cgroup_room || *r < *room.cgroup_room)) {
        room.cgroup_room = r;
        room.cgroup = level;
      }
    }
  }
  return room;
}

}  // namespace codl::injectors
