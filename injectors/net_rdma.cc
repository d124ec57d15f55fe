#include "injectors/net_rdma.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace codl::injectors {
namespace {

constexpr const char* kSysfs = "/sys/class/infiniband";

// libibverbs' entry points, declared opaquely: struct ibv_device is only ever passed back.
using GetDeviceList = void** (*)(int*);
using FreeDeviceList = void (*)(void**);
using GetDeviceName = const char* (*)(void*);

std::string Probe() {
  std::error_code ec;
  if (!std::filesystem::is_directory(kSysfs, ec)) {
    return "RDMA: no device (" + std::string(kSysfs) + " absent: no RDMA driver loaded)";
  }
  if (std::filesystem::is_empty(kSysfs, ec)) {
    return "RDMA: no device (" + std::string(kSysfs) + " is empty)";
  }
  // Never dlclose'd: libibverbs loads provider plug-ins that must not be unmapped under it.
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return "RDMA: devices in " + std::string(kSysfs) + " but libibverbs.so.1 does not load (" +
           dlerror() + "; Debian: libibverbs1)";
  }
  auto list = reinterpret_cast<GetDeviceList>(dlsym(lib, "ibv_get_device_list"));
  auto free_list = reinterpret_cast<FreeDeviceList>(dlsym(lib, "ibv_free_device_list"));
  auto name = reinterpret_cast<GetDeviceName>(dlsym(lib, "ibv_get_device_name"));
  if (list == nullptr || free_list == nullptr || name == nullptr) {
    return "RDMA: libibverbs.so.1 lacks ibv_get_device_list";
  }
  int n = 0;
  void** devices = list(&n);
  if (devices == nullptr || n == 0) {
    if (devices != nullptr) free_list(devices);
    return "RDMA: libibverbs finds no device (no provider for the devices in " +
           std::string(kSysfs) + ")";
  }
  std::string names;
  for (int i = 0; i < n; ++i) names += (i ? "," : "") + std::string(name(devices[i]));
  free_list(devices);
  return "RDMA: " + names + " found by libibverbs, not used (net streams TCP)";
}

}  // namespace

std::string RdmaStatus() {
  static const std::string status = Probe();  // the host's devices do not change under us
  return status;
}

}  // namespace codl::injectors
