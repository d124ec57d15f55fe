// NVML loaded at run time (dlopen of libnvidia-ml.so.1), not linked: the agent starts on nodes
// without an NVIDIA driver, and then says why its GPU telemetry is absent. Only the functions
// the GPU telemetry calls are resolved, into a table of pointers that tests fill with fakes.
// The types and constants are NVML's (nvml.h, driver 535 and later), declared here so that the
// agent builds without the header.
#pragma once

#include <string>

namespace codl::agent {
namespace nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorInsufficientSize = 7;

struct DeviceSt;  // opaque: nvmlDevice_t
using Device = DeviceSt*;

struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {  // nvmlMemory_t, bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlClockType_t
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;

// nvmlValueType_t
inline constexpr int kValueDouble = 0;
inline constexpr int kValueUnsignedInt = 1;
inline constexpr int kValueUnsignedLong = 2;
inline constexpr int kValueUnsignedLongLong = 3;
inline constexpr int kValueSignedLongLong = 4;
inline constexpr int kValueSignedInt = 5;
inline constexpr int kValueUnsignedShort = 6;

union Value {  // nvmlValue_t
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
  unsigned short us;
};
struct FieldValue {  // nvmlFieldValue_t
  unsigned int field_id;
  unsigned int scope_id;  // NVLink fields: the link, or kAllLinks
  long long timestamp_us;
  long long latency_us;
  int value_type;
  Return nvml_return;
  Value value;
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

// Field ids (NVML_FI_DEV_*): cumulative counters, read as differences over the window.
inline constexpr unsigned int kFieldNvlinkDataTxKib = 138;  // NVLINK_THROUGHPUT_DATA_TX, KiB
inline constexpr unsigned int kFieldNvlinkDataRxKib = 139;  // NVLINK_THROUGHPUT_DATA_RX, KiB
inline constexpr unsigned int kFieldPcieTxBytes = 197;      // PCIE_COUNT_TX_BYTES (driver 550+)
inline constexpr unsigned int kFieldPcieRxBytes = 198;      // PCIE_COUNT_RX_BYTES
inline constexpr unsigned int kAllLinks = 0xFFFFFFFFu;      // scope: summed over every link

}  // namespace nvml

// The NVML functions the GPU telemetry calls. Init, DeviceGetCount and DeviceGetHandleByIndex
// are required; a missing optional one leaves its figures out, with a note.
struct NvmlApi {
  nvml::Return (*Init)() = nullptr;      // nvmlInit_v2
  nvml::Return (*Shutdown)() = nullptr;  // nvmlShutdown
  const char* (*ErrorString)(nvml::Return) = nullptr;
  nvml::Return (*SystemGetDriverVersion)(char*, unsigned int) = nullptr;
  nvml::Return (*DeviceGetCount)(unsigned int*) = nullptr;                        // _v2
  nvml::Return (*DeviceGetHandleByIndex)(unsigned int, nvml::Device*) = nullptr;  // _v2
  nvml::Return (*DeviceGetName)(nvml::Device, char*, unsigned int) = nullptr;
  nvml::Return (*DeviceGetUtilizationRates)(nvml::Device, nvml::Utilization*) = nullptr;
  nvml::Return (*DeviceGetMemoryInfo)(nvml::Device, nvml::Memory*) = nullptr;
  nvml::Return (*DeviceGetClockInfo)(nvml::Device, int, unsigned int*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, or the older nvmlDeviceGetCurrentClocksThrottleReasons
  nvml::Return (*DeviceGetClockEventReasons)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*DeviceGetFieldValues)(nvml::Device, int, nvml::FieldValue*) = nullptr;
  // "" when the required functions are set; else why NVML cannot be used, as GPU telemetry
  // says it: "gpu: unavailable (libnvidia-ml.so.1 not found: no NVIDIA driver on this node)".
  std::string error;
};

// dlopen(library) and resolve the functions above; never dlclose'd. `error` says what failed.
NvmlApi LoadNvmlApi(const std::string& library = "libnvidia-ml.so.1");

// An NVML return code as words: ErrorString's text when the library has it, else "NVML error N".
std::string NvmlErrorText(const NvmlApi& api, nvml::Return r);

}  // namespace codl::agent
