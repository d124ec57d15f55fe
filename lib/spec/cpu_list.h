// CPU lists as Linux writes them ("0-3,6", the format of cpuset.cpus and
// /sys/devices/system/node/nodeN/cpulist): parsed by the experiment parser (syntax) and by the
// agent (the node's CPUs, the requested placement), formatted for results and error messages.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl::experiment {

// Largest CPU number accepted: beyond any real machine, small enough for a cpu_set_t.
constexpr int kMaxCpu = 1023;

// "0-3,6" -> {0,1,2,3,6}. Whitespace around items is allowed; empty items, reversed ranges,
// duplicates and numbers over kMaxCpu are errors. An empty string is an error.
Result<std::set<int>> ParseCpuList(std::string_view text);
// {0,1,2,3,6} -> "0-3,6"; {} -> "".
std::string FormatCpuList(const std::set<int>& cpus);

}  // namespace codl::experiment
