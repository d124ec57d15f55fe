#include "lib/common/gpu_clock_reasons.h"

#include <cstdio>

namespace codl {

std::vector<std::string> GpuClockReasonNames(uint64_t reasons) {
  static constexpr struct {
    uint64_t bit;
    const char* name;
  } kNames[] = {
      {kGpuClockReasonIdle, "gpu_idle"},
      {kGpuClockReasonApplicationsClocks, "applications_clocks"},
      {kGpuClockReasonSwPowerCap, "sw_power_cap"},
      {kGpuClockReasonHwSlowdown, "hw_slowdown"},
      {kGpuClockReasonSyncBoost, "sync_boost"},
      {kGpuClockReasonSwThermal, "sw_thermal"},
      {kGpuClockReasonHwThermal, "hw_thermal"},
      {kGpuClockReasonHwPowerBrake, "hw_power_brake"},
      {kGpuClockReasonDisplayClocks, "display_clocks"},
  };
  std::vector<std::string> out;
  for (int b = 0; b < 64; ++b) {
    const uint64_t bit = uint64_t{1} << b;
    if ((reasons & bit) == 0) continue;
    const char* name = nullptr;
    for (const auto& n : kNames) {
      if (n.bit == bit) name = n.name;
    }
    if (name != nullptr) {
      out.emplace_back(name);
    } else {
      char hex[24];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(bit));
      out.emplace_back(hex);
    }
  }
  return out;
}

std::string GpuClockReasonsText(int64_t reasons) {
  if (reasons < 0) return "";
  if (reasons == 0) return "none";
  std::string text;
  for (const std::string& n : GpuClockReasonNames(static_cast<uint64_t>(reasons)))
    text += (text.empty() ? "" : "|") + n;
  return text;
}

bool GpuClocksLimited(int64_t reasons) {
  return reasons > 0 && (static_cast<uint64_t>(reasons) & ~kGpuClockReasonIdle) != 0;
}

}  // namespace codl
