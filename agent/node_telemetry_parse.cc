// The text formats node telemetry reads (node_telemetry.h): PSI totals, /proc/diskstats,
// /proc/net/dev, /proc/meminfo, perf event descriptions in sysfs and the AMD Data Fabric's DRAM
// events. Pure functions of their text, fuzzed and unit-tested apart from the sampler.
#include "agent/node_telemetry.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "agent/telemetry_text.h"
#include "lib/common/cpu_list.h"

namespace codl::agent {

using namespace telemetry_text;

PsiTotals ParsePsiTotals(std::string_view text) {
  PsiTotals out;
  for (std::string_view line : TelemetrySplit(text, '\n')) {
    const auto f = TelemetryFields(line);
    if (f.empty() || (f[0] != "some" && f[0] != "full")) continue;
    std::optional<uint64_t> total;
    for (size_t i = 1; i < f.size(); ++i) {
      if (f[i].substr(0, 6) == "total=") total = TelemetryNumber(f[i].substr(6));
    }
    if (!total) continue;
    (f[0] == "some" ? out.some_us : out.full_us) = total;
  }
  return out;
}

std::vector<DiskstatsLine> ParseDiskstats(std::string_view text) {
  std::vector<DiskstatsLine> out;
  for (std::string_view line : TelemetrySplit(text, '\n')) {
    const auto f = TelemetryFields(line);
    if (f.size() < 10) continue;
    const auto major = TelemetryNumber(f[0]), minor = TelemetryNumber(f[1]);
    const auto reads = TelemetryNumber(f[3]), sectors_read = TelemetryNumber(f[5]);
    const auto writes = TelemetryNumber(f[7]), sectors_written = TelemetryNumber(f[9]);
    if (!major || !minor || !reads || !sectors_read || !writes || !sectors_written) continue;
    if (*major > UINT32_MAX || *minor > UINT32_MAX || f[2].size() > 255) continue;
    DiskstatsLine d;
    d.major = static_cast<unsigned>(*major);
    d.minor = static_cast<unsigned>(*minor);
    d.name = std::string(f[2]);
    d.reads = *reads;
    d.sectors_read = *sectors_read;
    d.writes = *writes;
    d.sectors_written = *sectors_written;
    out.push_back(std::move(d));
  }
  return out;
}

bool IsCountedDisk(const std::string& name, const std::set<std::string>& all) {
  for (const char* memory : {"loop", "ram", "zram"}) {
    if (name.rfind(memory, 0) == 0) return false;
  }
  // A partition: the name less its trailing digits (and then a 'p' after a digit: nvme0n1p2,
  // mmcblk0p1) is another listed device.
  size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  if (end == name.size() || end == 0) return true;
  if (all.count(name.substr(0, end))) return false;
  if (name[end - 1] == 'p' && end >= 2 && name[end - 2] >= '0' && name[end - 2] <= '9' &&
      all.count(name.substr(0, end - 1))) {
    return false;
  }
  return true;
}

std::map<std::string, NetDevBytes> ParseNetDev(std::string_view text) {
  std::map<std::string, NetDevBytes> out;
  for (std::string_view line : TelemetrySplit(text, '\n')) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || line.find('|') != std::string_view::npos) continue;
    const std::string name = TelemetryTrim(line.substr(0, colon));
    const auto f = TelemetryFields(line.substr(colon + 1));
    if (name.empty() || name.size() > 64 || f.size() < 9) continue;
    const auto rx = TelemetryNumber(f[0]), tx = TelemetryNumber(f[8]);
    if (!rx || !tx) continue;
    out[name] = {*rx, *tx};
  }
  return out;
}

MemInfoFields ParseMeminfo(std::string_view text) {
  MemInfoFields out;
  for (std::string_view line : TelemetrySplit(text, '\n')) {
    const auto f = TelemetryFields(line);
    if (f.size() < 2) continue;
    std::optional<uint64_t>* field = f[0] == "MemAvailable:" ? &out.available_bytes
                                     : f[0] == "Cached:"     ? &out.cached_bytes
                                                             : nullptr;
    if (field == nullptr) continue;
    const auto v = TelemetryNumber(f[1]);
    const bool kb = f.size() >= 3 && f[2] == "kB";
    if (!v || (f.size() >= 3 && !kb) || *v > (UINT64_MAX >> 10)) continue;
    *field = kb ? *v << 10 : *v;
  }
  return out;
}

std::optional<uint64_t> PerfEventConfig(std::string_view event,
                                        const std::map<std::string, std::string>& formats) {
  uint64_t config = 0;
  const std::string text = TelemetryTrim(event);
  if (text.empty()) return std::nullopt;
  for (std::string_view term : TelemetrySplit(text, ',')) {
    const size_t eq = term.find('=');
    const std::string name(term.substr(0, eq));
    uint64_t value = 1;  // a bare term is a flag set to 1
    if (eq != std::string_view::npos) {
      const auto v = TelemetryNumber(term.substr(eq + 1), 0);
      if (!v) return std::nullopt;
      value = *v;
    }
    const auto fmt = formats.find(name);
    if (fmt == formats.end()) return std::nullopt;
    const std::string f = TelemetryTrim(fmt->second);
    if (f.rfind("config:", 0) != 0) return std::nullopt;  // config1/config2: not used here
    // "config:0-7" or "config:0-7,32-35": the value's bits fill the ranges low to high.
    int used = 0;
    for (std::string_view range : TelemetrySplit(std::string_view(f).substr(7), ',')) {
      const size_t dash = range.find('-');
      const auto lo = TelemetryNumber(range.substr(0, dash));
      const auto hi = dash == std::string_view::npos ? lo : TelemetryNumber(range.substr(dash + 1));
      if (!lo || !hi || *hi < *lo || *hi > 63) return std::nullopt;
      const int width = static_cast<int>(*hi - *lo + 1);
      const uint64_t bits = used >= 64 ? 0 : value >> used;
      const uint64_t mask = width >= 64 ? ~0ull : (1ull << width) - 1;
      config |= (bits & mask) << *lo;
      used += width;
    }
    if (used < 64 && (value >> used) != 0) return std::nullopt;  // does not fit its bits
  }
  return config;
}

std::vector<std::string> AmdDfDramEvents(std::string_view cpuinfo, std::string* why) {
  std::string vendor;
  std::optional<uint64_t> family, model;
  for (std::string_view line : TelemetrySplit(cpuinfo, '\n')) {
    if (TelemetryTrim(line).empty()) break;  // the first processor's block is enough
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string key = TelemetryTrim(line.substr(0, colon));
    const std::string value = TelemetryTrim(line.substr(colon + 1));
    if (key == "vendor_id") vendor = value;
    if (key == "cpu family") family = TelemetryNumber(value);
    if (key == "model") model = TelemetryNumber(value);
  }
  if (vendor != "AuthenticAMD" && vendor != "HygonGenuine") {
    *why = "not an AMD CPU (vendor_id '" + vendor + "')";
    return {};
  }
  if (!family || !model) {
    *why = "cpuinfo has no cpu family or model";
    return {};
  }
  const uint64_t f = *family, m = *model;
  const bool zen2 = f == 0x17 && m >= 0x30;
  const bool zen3 = f == 0x19 && (m <= 0x0f || (m >= 0x20 && m <= 0x5f));
  if (!zen2 && !zen3) {
    char cpu[64];
    std::snprintf(cpu, sizeof cpu, "family 0x%llx model 0x%llx", static_cast<unsigned long long>(f),
                  static_cast<unsigned long long>(m));
    *why = std::string("its DRAM events are known to codl for Zen 2 and Zen 3 only, this CPU is ") +
           cpu;
    return {};
  }
  // dram_channel_data_controller_0..7 (perf's amdzen2/amdzen3 data-fabric events): requests
  // with 64 bytes of data, reads and writes, one event per DRAM channel.
  std::vector<std::string> events;
  for (int channel = 0; channel < 8; ++channel) {
    char e[48];
    std::snprintf(e, sizeof e, "event=0x%x,umask=0x38", 0x07 + 0x40 * channel);
    events.emplace_back(e);
  }
  return events;
}

}  // namespace codl::agent
