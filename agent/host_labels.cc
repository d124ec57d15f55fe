#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "agent/agent.h"
#include "agent/child_process.h"
#include "agent/node_snapshot.h"
#include "injectors/core/protocol.h"
#include "lib/common/version.h"

namespace codl::agent {
namespace {

// Which injectors are available here, and the GPU labels (count, names, memory, driver and NCCL
// versions, MPS availability), as codl-inject itself reports them: the agent links no CUDA
// library, and codl-inject probes the GPUs in a child so no daemon holds a CUDA context.
void DetectInjectors(const std::string& inject_binary, std::map<std::string, std::string>* labels) {
  ChildProcess::Options o;
  o.argv = {inject_binary, "--list", "--json"};
  std::string available, unavailable;
  o.on_stdout = [&](std::string_view line) {
    namespace protocol = injectors::protocol;
    if (auto gpu = protocol::GpuLabels::Parse(line); gpu.ok()) {
      for (const auto& [k, v] : gpu->labels) (*labels)[k] = v;
      return;
    }
    auto entry = protocol::ListEntry::Parse(line);
    if (!entry.ok()) return;
    std::string& list = entry->available ? available : unavailable;
    if (!list.empty()) list += ",";
    list += entry->name;
  };
  auto c = ChildProcess::Spawn(std::move(o));
  if (!c.ok()) return;
  if (!(*c)->WaitFor(20)) (*c)->Kill();
  c->reset();
  (*labels)["injectors"] = available;
  if (!unavailable.empty()) (*labels)["injectors_unavailable"] = unavailable;
  if (!labels->count("gpu_count")) {  // gpu_count is always present (injectors/gpu/gpu_info.h)
    (*labels)["gpu_count"] = "0";
    (*labels)["gpu_unavailable_reason"] = inject_binary + " --list --json reported no gpu_labels";
  }
}

// The first line of a small file (sysfs, procfs), "" when it cannot be read.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int64_t KhzAt(const std::string& path) {
  const std::string s = FirstLine(path);
  return s.empty() ? 0 : std::strtoll(s.c_str(), nullptr, 10);
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

}  // namespace

v1::NodeSnapshot DetectNodeSnapshot(const std::map<std::string, std::string>& labels) {
  v1::NodeSnapshot s;
  struct utsname u {};
  if (uname(&u) == 0) {
    s.set_kernel(std::string(u.sysname) + " " + u.release + " " + u.version + " " + u.machine);
  }
  s.set_cpu_model(CpuModel());
  s.set_cpu_count(static_cast<int32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq/";
  s.set_governor(FirstLine(cpufreq + "scaling_governor"));
  s.set_cpu_min_khz(KhzAt(cpufreq + "scaling_min_freq"));
  s.set_cpu_max_khz(KhzAt(cpufreq + "scaling_max_freq"));
  struct sysinfo si {};
  if (sysinfo(&si) == 0) s.set_memory_bytes(static_cast<int64_t>(si.totalram) * si.mem_unit);
  for (const auto& [k, v] : labels) {
    if (k.rfind("gpu", 0) == 0) (*s.mutable_gpu_labels())[k] = v;
  }
  s.set_codl_version(CodlVersion());
  return s;
}

double LoadAverage1m() {
  const std::string line = FirstLine("/proc/loadavg");
  if (line.empty()) return -1;
  char* end = nullptr;
  const double v = std::strtod(line.c_str(), &end);
  return end == line.c_str() ? -1 : v;
}

std::map<std::string, std::string> DetectHostLabels(const std::string& inject_binary) {
  std::map<std::string, std::string> labels;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  labels["hostname"] = host;
  labels["cores"] = std::to_string(sysconf(_SC_NPROCESSORS_ONLN));
  struct sysinfo si {};
  if (sysinfo(&si) == 0) {
    labels["memory_bytes"] = std::to_string(static_cast<uint64_t>(si.totalram) * si.mem_unit);
  }
  DetectInjectors(inject_binary, &labels);
  return labels;
}

}  // namespace codl::agent
