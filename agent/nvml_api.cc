// LoadNvmlApi: see nvml_api.h.
#include "agent/nvml_api.h"

#include <dlfcn.h>

namespace codl::agent {
namespace {

template <typename Fn>
void ResolveNvml(void* handle, const char* symbol, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

}  // namespace

NvmlApi LoadNvmlApi(const std::string& library) {
  NvmlApi api;
  dlerror();
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    const std::string text = why ? why : "";
    if (text.empty() || text.find("No such file") != std::string::npos ||
        text.find("cannot open shared object") != std::string::npos) {
      api.error = "gpu: unavailable (" + library + " not found: no NVIDIA driver on this node)";
    } else {
      api.error = "gpu: unavailable (" + library + " does not load: " + text + ")";
    }
    return api;
  }
  ResolveNvml(h, "nvmlInit_v2", &api.Init);
  ResolveNvml(h, "nvmlShutdown", &api.Shutdown);
  ResolveNvml(h, "nvmlErrorString", &api.ErrorString);
  ResolveNvml(h, "nvmlSystemGetDriverVersion", &api.SystemGetDriverVersion);
  ResolveNvml(h, "nvmlDeviceGetCount_v2", &api.DeviceGetCount);
  ResolveNvml(h, "nvmlDeviceGetHandleByIndex_v2", &api.DeviceGetHandleByIndex);
  ResolveNvml(h, "nvmlDeviceGetName", &api.DeviceGetName);
  ResolveNvml(h, "nvmlDeviceGetUtilizationRates", &api.DeviceGetUtilizationRates);
  ResolveNvml(h, "nvmlDeviceGetMemoryInfo", &api.DeviceGetMemoryInfo);
  ResolveNvml(h, "nvmlDeviceGetClockInfo", &api.DeviceGetClockInfo);
  ResolveNvml(h, "nvmlDeviceGetCurrentClocksEventReasons", &api.DeviceGetClockEventReasons);
  if (api.DeviceGetClockEventReasons == nullptr)  // drivers before 535
    ResolveNvml(h, "nvmlDeviceGetCurrentClocksThrottleReasons", &api.DeviceGetClockEventReasons);
  ResolveNvml(h, "nvmlDeviceGetFieldValues", &api.DeviceGetFieldValues);
  const char* missing = api.Init == nullptr                     ? "nvmlInit_v2"
                        : api.DeviceGetCount == nullptr         ? "nvmlDeviceGetCount_v2"
                        : api.DeviceGetHandleByIndex == nullptr ? "nvmlDeviceGetHandleByIndex_v2"
                                                                : nullptr;
  if (missing != nullptr)
    api.error = "gpu: unavailable (" + library + " has no " + missing + ": a driver too old)";
  return api;
}

std::string NvmlErrorText(const NvmlApi& api, nvml::Return r) {
  if (api.ErrorString != nullptr) {
    if (const char* s = api.ErrorString(r); s != nullptr && *s != '\0') return s;
  }
  return "NVML error " + std::to_string(r);
}

}  // namespace codl::agent
