// GPU telemetry over a victim's window: see gpu_telemetry.h.
#include "agent/gpu_telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace codl::agent {
namespace {

// Beyond this many GPUs a node's rows would be noise; NVML lists at most 64 per node today.
constexpr unsigned int kMaxGpuRows = 64;

double GpuNaN() { return std::nan(""); }

void GpuNoteOnce(std::string* notes, const std::string& what) {
  if (notes->find(what) != std::string::npos) return;
  *notes += (notes->empty() ? "" : "; ") + what;
}

// A field value as an unsigned counter and its width in bits; false when it is not one.
bool GpuCounterValue(const nvml::FieldValue& f, uint64_t* value, int* bits) {
  switch (f.value_type) {
    case nvml::kValueUnsignedInt:
      *value = f.value.ui;
      *bits = 32;
      return true;
    case nvml::kValueSignedInt:
      *value = static_cast<uint32_t>(f.value.si);
      *bits = 32;
      return true;
    case nvml::kValueUnsignedShort:
      *value = f.value.us;
      *bits = 16;
      return true;
    case nvml::kValueUnsignedLong:
      *value = f.value.ul;
      *bits = 64;
      return true;
    case nvml::kValueUnsignedLongLong:
      *value = f.value.ull;
      *bits = 64;
      return true;
    case nvml::kValueSignedLongLong:
      *value = static_cast<uint64_t>(f.value.sll);
      *bits = 64;
      return true;
    case nvml::kValueDouble:
      if (!(f.value.d >= 0 && f.value.d < 1.8e19)) return false;
      *value = static_cast<uint64_t>(f.value.d);
      *bits = 64;
      return true;
    default: return false;
  }
}

}  // namespace

GpuSource InitNvml(const NvmlApi* api) {
  GpuSource s;
  if (!api->error.empty()) {
    s.note = api->error;
    return s;
  }
  if (const nvml::Return r = api->Init(); r != nvml::kSuccess) {
    s.note = "gpu: unavailable (nvmlInit: " + NvmlErrorText(*api, r) + ")";
    return s;
  }
  s.api = api;
  s.note = "NVML";
  char version[96] = {};
  if (api->SystemGetDriverVersion != nullptr &&
      api->SystemGetDriverVersion(version, sizeof version - 1) == nvml::kSuccess && version[0])
    s.note += std::string(", driver ") + version;
  return s;
}

const GpuSource& NodeNvml() {
  // Never freed: samplers of other threads may still use them as the process exits.
  static const NvmlApi* const api = new NvmlApi(LoadNvmlApi());
  static const GpuSource* const source = new GpuSource(InitNvml(api));
  return *source;
}

GpuTelemetrySampler::GpuTelemetrySampler(GpuSource source)
    : source_(std::move(source)), note_("gpu: unavailable (not sampled)") {}

void GpuTelemetrySampler::Note(Device* d, const std::string& what) const {
  GpuNoteOnce(&d->out.notes, what);
}

void GpuTelemetrySampler::Start(double now_s) {
  devices_.clear();
  last_s_ = now_s;
  const NvmlApi* api = source_.api;
  if (api == nullptr) {
    note_ = source_.note;
    return;
  }
  unsigned int count = 0;
  if (const nvml::Return r = api->DeviceGetCount(&count); r != nvml::kSuccess) {
    note_ = "gpu: unavailable (nvmlDeviceGetCount: " + NvmlErrorText(*api, r) + ")";
    return;
  }
  if (count == 0) {
    note_ = "gpu: unavailable (NVML lists no GPU on this node)";
    return;
  }
  note_ = source_.note;
  for (unsigned int i = 0; i < std::min(count, kMaxGpuRows); ++i) {
    Device d;
    d.index = i;
    d.out.index = static_cast<int>(i);
    if (const nvml::Return r = api->DeviceGetHandleByIndex(i, &d.handle); r != nvml::kSuccess) {
      d.handle = nullptr;
      Note(&d, "nvmlDeviceGetHandleByIndex: " + NvmlErrorText(*api, r));
      devices_.push_back(std::move(d));
      continue;
    }
    char name[96] = {};
    if (api->DeviceGetName != nullptr &&
        api->DeviceGetName(d.handle, name, sizeof name - 1) == nvml::kSuccess)
      d.out.name = name;
    devices_.push_back(std::move(d));
  }
  for (Device& d : devices_) {
    ReadCounters(&d);
    Sample(&d);
  }
}

void GpuTelemetrySampler::Tick(double now_s) {
  if (devices_.empty() || now_s - last_s_ < kSampleS) return;
  last_s_ = now_s;
  for (Device& d : devices_) {
    ReadCounters(&d);
    Sample(&d);
  }
}

void GpuTelemetrySampler::Sample(Device* d) {
  const NvmlApi& api = *source_.api;
  if (d->handle == nullptr) return;
  ++d->out.samples;
  auto failed = [&](const char* what, nvml::Return r) {
    Note(d, std::string(what) + ": " + NvmlErrorText(api, r));
  };
  auto missing = [&](const char* what, const char* fn) {
    Note(d, std::string(what) + ": " + fn + " missing from the library");
  };

  if (api.DeviceGetUtilizationRates == nullptr) {
    missing("utilization", "nvmlDeviceGetUtilizationRates");
  } else {
    nvml::Utilization u{};
    if (const nvml::Return r = api.DeviceGetUtilizationRates(d->handle, &u); r != nvml::kSuccess) {
      failed("utilization", r);
    } else {
      const double gpu = std::min(100u, u.gpu), mem = std::min(100u, u.memory);
      d->util_sum += gpu;
      d->mem_util_sum += mem;
      ++d->util_n;
      ++d->mem_util_n;
      if (std::isnan(d->out.util_max) || gpu > d->out.util_max) d->out.util_max = gpu;
    }
  }

  if (api.DeviceGetMemoryInfo == nullptr) {
    missing("memory", "nvmlDeviceGetMemoryInfo");
  } else {
    nvml::Memory m{};
    if (const nvml::Return r = api.DeviceGetMemoryInfo(d->handle, &m); r != nvml::kSuccess) {
      failed("memory", r);
    } else {
      const auto clamp = [](unsigned long long v) {
        return static_cast<int64_t>(std::min<unsigned long long>(v, INT64_MAX));
      };
      d->out.mem_total_bytes = clamp(m.total);
      d->out.mem_used_max_bytes = std::max(d->out.mem_used_max_bytes, clamp(m.used));
    }
  }

  if (api.DeviceGetClockInfo == nullptr) {
    missing("clocks", "nvmlDeviceGetClockInfo");
  } else {
    struct {
      int type;
      const char* what;
      double* sum;
      int* n;
      double* min;
    } clocks[] = {
        {nvml::kClockSm, "SM clock", &d->sm_sum, &d->sm_n, &d->out.sm_clock_min_mhz},
        {nvml::kClockMem, "memory clock", &d->mem_clock_sum, &d->mem_clock_n,
         &d->out.mem_clock_min_mhz},
    };
    for (auto& c : clocks) {
      unsigned int mhz = 0;
      if (const nvml::Return r = api.DeviceGetClockInfo(d->handle, c.type, &mhz);
          r != nvml::kSuccess) {
        failed(c.what, r);
        continue;
      }
      *c.sum += mhz;
      ++*c.n;
      if (std::isnan(*c.min) || mhz < *c.min) *c.min = mhz;
    }
  }

  if (api.DeviceGetClockEventReasons == nullptr) {
    missing("clock event reasons", "nvmlDeviceGetCurrentClocksEventReasons");
  } else {
    unsigned long long reasons = 0;
    if (const nvml::Return r = api.DeviceGetClockEventReasons(d->handle, &reasons);
        r != nvml::kSuccess) {
      failed("clock event reasons", r);
    } else {
      d->reasons |= reasons;
      d->reasons_read = true;
    }
  }
}

void GpuTelemetrySampler::ReadCounters(Device* d) {
  const NvmlApi& api = *source_.api;
  if (d->handle == nullptr) return;
  struct {
    unsigned int field;
    unsigned int scope;
    double scale;  // bytes per unit
    Counter* counter;
    const char* what;
  } wanted[] = {
      {nvml::kFieldPcieTxBytes, 0, 1, &d->pcie_tx, "PCIe bytes"},
      {nvml::kFieldPcieRxBytes, 0, 1, &d->pcie_rx, "PCIe bytes"},
      {nvml::kFieldNvlinkDataTxKib, nvml::kAllLinks, 1024, &d->nvlink_tx, "NVLink bytes"},
      {nvml::kFieldNvlinkDataRxKib, nvml::kAllLinks, 1024, &d->nvlink_rx, "NVLink bytes"},
  };
  constexpr int kWanted = static_cast<int>(sizeof wanted / sizeof wanted[0]);
  nvml::FieldValue values[kWanted] = {};
  nvml::Return all = nvml::kSuccess;
  if (api.DeviceGetFieldValues == nullptr) {
    all = nvml::kErrorNotSupported;
  } else {
    for (int i = 0; i < kWanted; ++i) {
      values[i].field_id = wanted[i].field;
      values[i].scope_id = wanted[i].scope;
    }
    all = api.DeviceGetFieldValues(d->handle, kWanted, values);
  }
  for (int i = 0; i < kWanted; ++i) {
    Counter& c = *wanted[i].counter;
    if (!c.why.empty()) continue;  // failed once: its sum would miss bytes
    const nvml::Return r = all != nvml::kSuccess ? all : values[i].nvml_return;
    uint64_t v = 0;
    int bits = 64;
    if (api.DeviceGetFieldValues == nullptr) {
      c.why = std::string(wanted[i].what) + ": nvmlDeviceGetFieldValues missing from the library";
    } else if (r != nvml::kSuccess) {
      c.why = std::string(wanted[i].what) + ": " + NvmlErrorText(api, r);
      if (r == nvml::kErrorNotSupported && i < 2) c.why += " (PCIe byte counters need driver 550+)";
      if (r == nvml::kErrorNotSupported && i >= 2) c.why += " (no NVLink)";
    } else if (!GpuCounterValue(values[i], &v, &bits)) {
      c.why = std::string(wanted[i].what) + ": not a counter (value type " +
              std::to_string(values[i].value_type) + ")";
    }
    if (!c.why.empty()) {
      c.ok = false;
      Note(d, c.why);
      continue;
    }
    if (c.seen) {
      uint64_t delta = v - c.last;  // unsigned: a wrap of a 64-bit counter comes out right
      if (v < c.last && bits < 64) delta = (uint64_t{1} << bits) - c.last + v;
      c.sum += static_cast<double>(delta) * wanted[i].scale;
    }
    c.seen = true;
    c.ok = true;
    c.last = v;
    c.bits = bits;
  }
}

void GpuTelemetrySampler::Finish(double now_s, NodeTelemetry* t) {
  t->gpu_note = note_;
  t->gpus.clear();
  if (devices_.empty()) return;
  last_s_ = now_s;
  for (Device& d : devices_) {
    ReadCounters(&d);
    Sample(&d);
    GpuTelemetry g = d.out;
    g.util_mean = d.util_n > 0 ? d.util_sum / d.util_n : GpuNaN();
    g.mem_util_mean = d.mem_util_n > 0 ? d.mem_util_sum / d.mem_util_n : GpuNaN();
    g.sm_clock_mean_mhz = d.sm_n > 0 ? d.sm_sum / d.sm_n : GpuNaN();
    g.mem_clock_mean_mhz = d.mem_clock_n > 0 ? d.mem_clock_sum / d.mem_clock_n : GpuNaN();
    g.clock_reasons = d.reasons_read ? static_cast<int64_t>(d.reasons & INT64_MAX) : -1;
    auto total = [](const Counter& c) { return c.ok && c.seen ? c.sum : GpuNaN(); };
    g.pcie_tx_bytes = total(d.pcie_tx);
    g.pcie_rx_bytes = total(d.pcie_rx);
    g.nvlink_tx_bytes = total(d.nvlink_tx);
    g.nvlink_rx_bytes = total(d.nvlink_rx);
    t->gpus.push_back(std::move(g));
  }
  devices_.clear();
}

}  // namespace codl::agent
