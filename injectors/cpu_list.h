// CPU lists ("none" or "0-3,6") and thread pinning, shared by the compute-side injectors (cpu,
// llc). Std-only plus sched.h: compiled into the CUDA-free catalog too.
#pragma once

#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors {

// Parses "none" (empty list, returns true) or a CPU list like "0-3,6" (lib/common/cpu_list.h:
// false on a negative CPU, a reversed range, a duplicate, a CPU > 4095, stray characters).
bool ParseCpuList(const std::string& text, std::vector<int>* cpus);

// Ok if every CPU of `text` parses and is in this process's affinity mask, else InvalidArgument
// naming `option` ("option 'cpus': CPU 9 is not available to this process").
Status CheckCpuListOption(const std::string& option, const std::string& text);

// Pins the calling thread to one CPU; advisory (a refusal leaves the thread unpinned).
void PinThisThread(int cpu);

}  // namespace codl::injectors
