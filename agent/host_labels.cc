#include <sys/sysinfo.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/child_process.h"

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
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) return;
    if (j.contains("gpu_labels") && j["gpu_labels"].is_object()) {
      for (const auto& [k, v] : j["gpu_labels"].items()) {
        if (v.is_string()) (*labels)[k] = v.get<std::string>();
      }
      return;
    }
    if (!j.contains("name")) return;
    std::string& list = j.value("available", false) ? available : unavailable;
    if (!list.empty()) list += ",";
    list += j.value("name", "");
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

}  // namespace

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
