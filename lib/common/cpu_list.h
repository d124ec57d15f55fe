// CPU lists as Linux writes them ("0-3,6", the format of cpuset.cpus and
// /sys/devices/system/node/nodeN/cpulist): the one parser, used by the experiment parser
// (placement syntax), the agent (the node's CPUs, the requested placement) and the injectors'
// CPU options (injectors/cpu_list.h); formatted for results and error messages.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl {

// Largest CPU number accepted by default: beyond any real machine. Callers that apply a list
// through a cpu_set_t pass a smaller max_cpu (CPU_SETSIZE - 1).
constexpr int kMaxCpu = 4095;

// "0-3,6" -> {0,1,2,3,6}. Whitespace around items is allowed; empty items, reversed ranges,
// duplicates and numbers over max_cpu are errors. An empty string is an error.
Result<std::set<int>> ParseCpuList(std::string_view text, int max_cpu = kMaxCpu);
// {0,1,2,3,6} -> "0-3,6"; {} -> "".
std::string FormatCpuList(const std::set<int>& cpus);

}  // namespace codl
