// libnvidia-ml.so.1 for a gpusim node: the NVML calls CoDL's GPU telemetry makes
// (agent/nvml_api.h), answered from the node's shared model (node.h). Utilization is the busy
// fraction of the SMs (gpu) and of HBM (memory) since this process's previous reading; PCIe and
// NVLink counters are the bytes the model moved. Declarations follow nvml.h (driver 535+).
#include <time.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "agent/nvml_api.h"
#include "gpusim/config.h"
#include "gpusim/node.h"

namespace {

using codl::gpusim::Config;
using codl::gpusim::Node;

enum : int {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kInsufficientSize = 7,
  kGpuIsLost = 15,
  kUnknown = 999
};

// NVML's types, as the agent declares them (one declaration of the ABI for both sides).
using codl::agent::nvml::FieldValue;
using codl::agent::nvml::Memory;
using codl::agent::nvml::Utilization;

struct Window {
  double t = 0;
  uint64_t sm = 0, hbm = 0;
  Utilization last{0, 0};
};

}  // namespace

struct nvmlDevice_st {
  int index;
  Window window;
};

namespace {

std::mutex g_mu;
int g_init = 0;
nvmlDevice_st g_devices[codl::gpusim::kMaxDevices];

double NowS() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Check(nvmlDevice_st* d) {
  if (g_init == 0) return kUninitialized;
  if (d == nullptr || d < g_devices || d >= g_devices + Config().devices.size())
    return kInvalidArgument;
  Node& node = Node::Get();
  if (node.ok() && node.shm()->dev[d->index].lost.load() != 0) return kGpuIsLost;
  return kSuccess;
}

}  // namespace

extern "C" {

int nvmlInit_v2(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!Config().error.empty()) return kUnknown;
  if (!Node::Get().ok()) return kUnknown;
  ++g_init;
  for (size_t i = 0; i < Config().devices.size(); ++i) g_devices[i].index = static_cast<int>(i);
  return kSuccess;
}
int nvmlInit(void) { return nvmlInit_v2(); }

int nvmlShutdown(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init == 0) return kUninitialized;
  --g_init;
  return kSuccess;
}

const char* nvmlErrorString(int r) {
  switch (r) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kInsufficientSize: return "Insufficient Size";
    case kGpuIsLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* out, unsigned int len) {
  if (out == nullptr) return kInvalidArgument;
  const char* v = "580.00-gpusim";
  if (len < std::strlen(v) + 1) return kInsufficientSize;
  std::snprintf(out, len, "%s", v);
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init == 0) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned>(Config().devices.size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_st** device) {
  if (g_init == 0) return kUninitialized;
  if (device == nullptr || index >= Config().devices.size()) return kInvalidArgument;
  *device = &g_devices[index];
  return Check(*device);
}

int nvmlDeviceGetName(nvmlDevice_st* d, char* name, unsigned int len) {
  if (int r = Check(d); r != kSuccess) return r;
  const std::string& n = Config().devices[static_cast<size_t>(d->index)].name;
  if (name == nullptr) return kInvalidArgument;
  if (len < n.size() + 1) return kInsufficientSize;
  std::snprintf(name, len, "%s", n.c_str());
  return kSuccess;
}

int nvmlDeviceGetUtilizationRates(nvmlDevice_st* d, Utilization* u) {
  if (int r = Check(d); r != kSuccess) return r;
  if (u == nullptr) return kInvalidArgument;
  std::lock_guard<std::mutex> lock(g_mu);
  const auto& c = Node::Get().shm()->dev[d->index];
  const double now = NowS();
  const uint64_t sm = c.busy_ns[codl::gpusim::kSm].load(),
                 hbm = c.busy_ns[codl::gpusim::kHbm].load();
  Window& w = d->window;
  if (w.t > 0 && now - w.t >= 0.02) {  // shorter windows repeat the last sample, as NVML does
    const double span = (now - w.t) * 1e9;
    auto pct = [span](uint64_t delta) {
      const double p = 100.0 * static_cast<double>(delta) / span;
      return static_cast<unsigned>(p > 100 ? 100 : p + 0.5);
    };
    w.last = Utilization{pct(sm - w.sm), pct(hbm - w.hbm)};
  }
  if (w.t == 0 || now - w.t >= 0.02) {
    w.t = now;
    w.sm = sm;
    w.hbm = hbm;
  }
  *u = w.last;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_st* d, Memory* m) {
  if (int r = Check(d); r != kSuccess) return r;
  if (m == nullptr) return kInvalidArgument;
  const uint64_t total = Config().devices[static_cast<size_t>(d->index)].memory_bytes;
  const uint64_t used = Node::Get().MemoryUsed(d->index);
  m->total = total;
  m->used = used;
  m->free = used >= total ? 0 : total - used;
  return kSuccess;
}

int nvmlDeviceGetClockInfo(nvmlDevice_st* d, int type, unsigned int* mhz) {
  if (int r = Check(d); r != kSuccess) return r;
  if (mhz == nullptr) return kInvalidArgument;
  const codl::gpusim::DeviceSpec& s = Config().devices[static_cast<size_t>(d->index)];
  switch (type) {
    case 0:  // graphics
    case 1:  // SM
      *mhz = s.sm_clock_mhz;
      return kSuccess;
    case 2:  // memory
      *mhz = s.mem_clock_mhz;
      return kSuccess;
    default: return kInvalidArgument;
  }
}

// nvmlClocksEventReasonGpuIdle (0x1) while the SMs were idle over the last utilization window.
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st* d, unsigned long long* reasons) {
  if (int r = Check(d); r != kSuccess) return r;
  if (reasons == nullptr) return kInvalidArgument;
  std::lock_guard<std::mutex> lock(g_mu);
  *reasons = d->window.last.gpu == 0 ? 0x1ull : 0ull;
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_st* d, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(d, reasons);
}

int nvmlDeviceGetFieldValues(nvmlDevice_st* d, int count, FieldValue* values) {
  if (int r = Check(d); r != kSuccess) return r;
  if (values == nullptr || count < 0) return kInvalidArgument;
  const auto& c = Node::Get().shm()->dev[d->index];
  const int links = Config().devices[static_cast<size_t>(d->index)].nvlink_links;
  const auto now_us = static_cast<long long>(NowS() * 1e6);
  for (int i = 0; i < count; ++i) {
    FieldValue& f = values[i];
    f.timestamp_us = now_us;
    f.latency_us = 0;
    f.value_type = 3;  // unsigned long long
    f.nvml_return = kSuccess;
    switch (f.field_id) {
      case 197:  // PCIE_COUNT_TX_BYTES: from the GPU, device to host
        f.value.ull = c.bytes[codl::gpusim::kPcieD2h].load();
        break;
      case 198:  // PCIE_COUNT_RX_BYTES
        f.value.ull = c.bytes[codl::gpusim::kPcieH2d].load();
        break;
      case 138:  // NVLINK_THROUGHPUT_DATA_TX, KiB
      case 139:  // NVLINK_THROUGHPUT_DATA_RX, KiB
        if (links == 0) {
          f.nvml_return = kNotSupported;
        } else {
          const uint64_t b =
              f.field_id == 138 ? c.bytes[codl::gpusim::kNvlink].load() : c.nvlink_rx_bytes.load();
          f.value.ull =
              f.scope_id == 0xFFFFFFFFu ? b / 1024 : b / 1024 / static_cast<unsigned>(links);
        }
        break;
      default: f.nvml_return = kNotSupported;
    }
  }
  return kSuccess;
}

}  // extern "C"
