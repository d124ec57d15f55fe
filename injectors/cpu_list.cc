#include "injectors/cpu_list.h"

#include <sched.h>

#include "lib/common/cpu_list.h"

namespace codl::injectors {

bool ParseCpuList(const std::string& text, std::vector<int>* cpus) {
  cpus->clear();
  if (text == "none") return true;
  auto parsed = codl::ParseCpuList(text);
  if (!parsed.ok()) return false;
  cpus->assign(parsed->begin(), parsed->end());
  return true;
}

Status CheckCpuListOption(const std::string& option, const std::string& text) {
  std::vector<int> cpus;
  if (!ParseCpuList(text, &cpus)) {
    return InvalidArgument("option '" + option + "': '" + text +
                           "' is not 'none' or a CPU list like 0-3,6");
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return Status::Ok();
  for (int c : cpus) {
    if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed)) {
      return InvalidArgument("option '" + option + "': CPU " + std::to_string(c) +
                             " is not available to this process");
    }
  }
  return Status::Ok();
}

void PinThisThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // tid 0 = the calling thread only
}

}  // namespace codl::injectors
