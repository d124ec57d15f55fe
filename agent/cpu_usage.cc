#include "agent/cpu_usage.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace codl::agent {

ProcStat ParseProcStat(const std::string& line) {
  ProcStat st;
  // Field 2 (comm) may hold spaces and parentheses: the fields resume after the last ')'.
  const auto rp = line.rfind(')');
  if (rp == std::string::npos || rp + 2 > line.size()) return st;
  std::istringstream rest(line.substr(rp + 2));
  std::string field;
  unsigned long long times = 0;
  for (int i = 3; i <= 17 && rest >> field; ++i) {
    long long v = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (i >= 4 && (ec != std::errc() || end != field.data() + field.size())) return st;
    if (i == 5) st.pgrp = static_cast<pid_t>(v);
    if (i >= 14) times += static_cast<unsigned long long>(v < 0 ? 0 : v);  // u/s/cu/cs time
    if (i == 17) {
      st.ticks = times;
      st.ok = true;
    }
  }
  return st;
}

double ProcessGroupCpuSeconds(pid_t pgid, const std::string& proc_root) {
  DIR* d = opendir(proc_root.c_str());
  if (d == nullptr) return 0;
  unsigned long long ticks = 0;
  while (dirent* e = readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    std::ifstream in(proc_root + "/" + e->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // exited meanwhile
    const ProcStat st = ParseProcStat(line);
    if (st.ok && st.pgrp == pgid) ticks += st.ticks;
  }
  closedir(d);
  const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / (hz > 0 ? hz : 100);
}

std::set<int> AffinityOf(pid_t pid) {
  std::set<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

}  // namespace codl::agent
