#include "injectors/cpu_list.h"

#include <sched.h>

#include <cstdlib>
#include <sstream>

namespace codl::injectors {

bool ParseCpuList(const std::string& text, std::vector<int>* cpus) {
  cpus->clear();
  if (text == "none") return true;
  if (text.empty() || text.back() == ',') return false;  // getline drops a trailing empty field
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty() || part[0] < '0' || part[0] > '9') return false;
    char* end = nullptr;
    const long lo = std::strtol(part.c_str(), &end, 10);
    long hi = lo;
    if (*end == '-') {
      const char* p = end + 1;
      if (*p < '0' || *p > '9') return false;
      hi = std::strtol(p, &end, 10);
    }
    if (*end != '\0' || hi < lo || hi > 4095) return false;
    for (long c = lo; c <= hi; ++c) cpus->push_back(static_cast<int>(c));
  }
  return !cpus->empty();
}

std::string CheckCpuListOption(const std::string& option, const std::string& text) {
  std::vector<int> cpus;
  if (!ParseCpuList(text, &cpus)) {
    return "option '" + option + "': '" + text + "' is not 'none' or a CPU list like 0-3,6";
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return "";
  for (int c : cpus) {
    if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed)) {
      return "option '" + option + "': CPU " + std::to_string(c) +
             " is not available to this process";
    }
  }
  return "";
}

void PinThisThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // tid 0 = the calling thread only
}

}  // namespace codl::injectors
