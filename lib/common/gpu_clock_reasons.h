// NVML's clock event reasons (called throttle reasons before driver 535): why a GPU ran below
// its highest clocks. The agent ORs them over a window (GpuTelemetry::clock_reasons); exports
// and the report name the bits. Bit values are NVML's nvmlClocksEventReason* constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace codl {

inline constexpr uint64_t kGpuClockReasonIdle = 0x1;
inline constexpr uint64_t kGpuClockReasonApplicationsClocks = 0x2;
inline constexpr uint64_t kGpuClockReasonSwPowerCap = 0x4;
inline constexpr uint64_t kGpuClockReasonHwSlowdown = 0x8;
inline constexpr uint64_t kGpuClockReasonSyncBoost = 0x10;
inline constexpr uint64_t kGpuClockReasonSwThermal = 0x20;
inline constexpr uint64_t kGpuClockReasonHwThermal = 0x40;
inline constexpr uint64_t kGpuClockReasonHwPowerBrake = 0x80;
inline constexpr uint64_t kGpuClockReasonDisplayClocks = 0x100;

// The names of the bits set, lowest first: "gpu_idle", "applications_clocks", "sw_power_cap",
// "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks";
// a bit this build does not know as its hex value ("0x200").
std::vector<std::string> GpuClockReasonNames(uint64_t reasons);

// The names joined with '|' ("sw_power_cap|sw_thermal"); "none" for 0; "" for a negative value
// (not read).
std::string GpuClockReasonsText(int64_t reasons);

// Whether any bit other than gpu_idle is set: the GPU ran slower than it could for a reason
// other than having nothing to do.
bool GpuClocksLimited(int64_t reasons);

}  // namespace codl
