// Node telemetry over a victim's window: see node_telemetry.h.
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

// Memory bandwidth: resctrl MBM (mbm_total_bytes of every L3 domain), the uncore IMC PMUs'
// CAS counts (64 bytes each), or the AMD Data Fabric's DRAM channel requests (64 bytes each)
// through perf_event_open; else the reason, never a zero.
class NodeTelemetrySampler::BandwidthCounter {
 public:
  explicit BandwidthCounter(const TelemetrySources& s) : sources_(s) {
    if (OpenResctrl()) return;
    OpenUncore();
  }
  ~BandwidthCounter() {
    for (const PerfCounter& c : perf_) close(c.fd);
  }
  BandwidthCounter(const BandwidthCounter&) = delete;
  BandwidthCounter& operator=(const BandwidthCounter&) = delete;

  const std::string& note() const { return note_; }
  // Whether a source was opened (else note() says why none was); Read() may still fail.
  bool available() const { return resctrl_ || !perf_.empty(); }
  // Bytes so far (a counter: only differences mean anything); nullopt when unavailable.
  std::optional<double> Read() const {
    if (resctrl_) {
      auto v = ReadResctrl();
      if (v) return static_cast<double>(*v);
      return std::nullopt;
    }
    if (perf_.empty()) return std::nullopt;
    double bytes = 0;
    for (const PerfCounter& c : perf_) {
      if (c.multiplexed) {
        // count, time enabled, time running: more events than counters (amd_df has 4), so the
        // kernel rotates them and the count covers part of the time.
        uint64_t v[3] = {0, 0, 0};
        if (read(c.fd, v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
        const double share = v[2] > 0 ? static_cast<double>(v[1]) / static_cast<double>(v[2]) : 0;
        bytes += static_cast<double>(v[0]) * share * c.bytes_per_count;
        continue;
      }
      uint64_t count = 0;
      if (read(c.fd, &count, sizeof count) != static_cast<ssize_t>(sizeof count))
        return std::nullopt;
      bytes += static_cast<double>(count) * c.bytes_per_count;
    }
    return bytes;
  }

 private:
  struct PerfCounter {
    int fd = -1;
    double bytes_per_count = 64;
    bool multiplexed = false;  // read_format has the times enabled and running
  };

  // perf_event_open of one system-wide counter of a PMU on `cpu`; -1 with *failure set.
  static int OpenPmuCounter(const std::string& pmu, uint32_t type, uint64_t config, int cpu,
                            bool multiplexed, std::string* failure) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    if (multiplexed)
      attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    const long fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) return static_cast<int>(fd);
    const int e = errno;
    *failure =
        "perf_event_open on " + pmu + " failed: " + std::strerror(e) +
        (e == EACCES || e == EPERM ? " (needs CAP_PERFMON or kernel.perf_event_paranoid <= 0)"
                                   : "");
    return -1;
  }

  // A PMU's format files (name -> "config:0-7") and perf type (nullopt when unreadable).
  static std::map<std::string, std::string> PmuFormats(const std::string& dir) {
    std::map<std::string, std::string> formats;
    for (const std::string& f : TelemetryListDir(dir + "/format")) {
      if (auto text = TelemetryReadFile(dir + "/format/" + f)) formats[f] = *text;
    }
    return formats;
  }
  static std::optional<uint32_t> PmuType(const std::string& dir) {
    const auto text = TelemetryReadFile(dir + "/type");
    const auto type = text ? TelemetryNumber(TelemetryTrim(*text)) : std::nullopt;
    if (!type || *type > UINT32_MAX) return std::nullopt;
    return static_cast<uint32_t>(*type);
  }

  // The CPUs of a PMU's cpumask (one per socket or die: an uncore counter counts for all of
  // its CPUs); CPU 0 when unreadable.
  static std::set<int> PmuCpus(const std::string& dir) {
    if (auto mask = TelemetryReadFile(dir + "/cpumask")) {
      if (auto parsed = ParseCpuList(TelemetryTrim(*mask)); parsed.ok() && !parsed->empty())
        return *parsed;
    }
    return {0};
  }

  // The AMD Data Fabric PMU: every DRAM channel's event on every CPU of its cpumask (one per
  // socket or die), scaled for multiplexing.
  void OpenAmdDf(const std::string& dir) {
    std::string why;
    const auto cpuinfo = TelemetryReadFile(sources_.proc + "/cpuinfo");
    const std::vector<std::string> events =
        cpuinfo ? AmdDfDramEvents(*cpuinfo, &why) : std::vector<std::string>{};
    if (!cpuinfo) why = sources_.proc + "/cpuinfo unreadable";
    if (events.empty()) {
      note_ =
          "memory bandwidth: unavailable (no resctrl MBM and no uncore_imc PMU; amd_df: " + why +
          ")";
      return;
    }
    const auto formats = PmuFormats(dir);
    const auto type = PmuType(dir);
    const std::set<int> cpus = PmuCpus(dir);
    std::string failure;
    for (const std::string& event : events) {
      const auto config = PerfEventConfig(event, formats);
      if (!config || !type) {
        failure = "amd_df has no readable type or format for " + event;
        continue;
      }
      for (int cpu : cpus) {
        const int fd = OpenPmuCounter("amd_df", *type, *config, cpu, true, &failure);
        if (fd < 0) continue;
        PerfCounter c;
        c.fd = fd;
        c.multiplexed = true;
        perf_.push_back(c);
      }
    }
    if (perf_.empty()) {
      note_ = "memory bandwidth: unavailable (no uncore_imc PMU; " + failure + ")";
      return;
    }
    note_ = "amd_df DRAM channel requests x 64 bytes (" + std::to_string(events.size()) +
            " channels, " + std::to_string(cpus.size()) + " CPUs of its cpumask; multiplexed)";
  }

  std::string MonData() const { return sources_.sys + "/fs/resctrl/mon_data"; }

  std::optional<uint64_t> ReadResctrl() const {
    uint64_t sum = 0;
    int domains = 0;
    for (const std::string& d : TelemetryListDir(MonData())) {
      if (d.rfind("mon_L3_", 0) != 0) continue;
      auto text = TelemetryReadFile(MonData() + "/" + d + "/mbm_total_bytes");
      if (!text) return std::nullopt;
      auto v = TelemetryNumber(TelemetryTrim(*text));  // "Unavailable" on a bad read
      if (!v) return std::nullopt;
      sum += *v;
      ++domains;
    }
    if (domains == 0) return std::nullopt;
    return sum;
  }

  bool OpenResctrl() {
    if (!ReadResctrl()) return false;
    resctrl_ = true;
    note_ = "resctrl mbm_total_bytes (tasks of the default resctrl group)";
    return true;
  }

  void OpenUncore() {
    const std::string devices = sources_.sys + "/bus/event_source/devices";
    std::vector<std::string> imcs;
    bool amd_df = false;
    for (const std::string& d : TelemetryListDir(devices)) {
      if (d.rfind("uncore_imc", 0) == 0) imcs.push_back(d);
      if (d == "amd_df") amd_df = true;
    }
    if (imcs.empty() && amd_df) {
      OpenAmdDf(devices + "/amd_df");
      return;
    }
    if (imcs.empty()) {
      note_ =
          "memory bandwidth: unavailable (no resctrl MBM, no uncore_imc PMU and no amd_df PMU "
          "on this node)";
      return;
    }
    std::string failure;
    for (const std::string& imc : imcs) {
      const std::string dir = devices + "/" + imc;
      const auto formats = PmuFormats(dir);
      const auto type = PmuType(dir);
      for (const char* event : {"cas_count_read", "cas_count_write"}) {
        const auto text = TelemetryReadFile(dir + "/events/" + event);
        const auto config = text ? PerfEventConfig(*text, formats) : std::nullopt;
        if (!config || !type) {
          failure = imc + " has no readable " + event + " event";
          continue;
        }
        // The PMU's scale (e.g. 6.103515625e-5 MiB per count = 64 bytes); 64 when absent.
        double bytes_per_count = 64;
        const auto scale = TelemetryReadFile(dir + "/events/" + event + ".scale");
        const auto unit = TelemetryReadFile(dir + "/events/" + event + ".unit");
        if (scale && unit && TelemetryTrim(*unit) == "MiB") {
          char* end = nullptr;
          const std::string s = TelemetryTrim(*scale);
          const double v = std::strtod(s.c_str(), &end);
          if (end != s.c_str() && std::isfinite(v) && v > 0 && v < 1)
            bytes_per_count = v * 1048576.0;
        }
        for (int cpu : PmuCpus(dir)) {
          const int fd = OpenPmuCounter(imc, *type, *config, cpu, false, &failure);
          if (fd < 0) continue;
          PerfCounter c;
          c.fd = fd;
          c.bytes_per_count = bytes_per_count;
          perf_.push_back(c);
        }
      }
    }
    if (perf_.empty()) {
      note_ = "memory bandwidth: unavailable (" + failure + ")";
      return;
    }
    note_ =
        "uncore_imc cas_count_read + cas_count_write (" + std::to_string(imcs.size()) + " PMUs)";
  }

  TelemetrySources sources_;
  bool resctrl_ = false;
  std::vector<PerfCounter> perf_;
  std::string note_;
};

NodeTelemetrySampler::NodeTelemetrySampler(TelemetrySources sources)
    : sources_(std::move(sources)) {}
NodeTelemetrySampler::~NodeTelemetrySampler() = default;

NodeTelemetrySampler::Snapshot NodeTelemetrySampler::Read() const {
  Snapshot s;
  const char* kinds[3] = {"cpu", "io", "memory"};
  for (int i = 0; i < 3; ++i) {
    if (auto text = TelemetryReadFile(sources_.proc + "/pressure/" + kinds[i])) {
      s.psi[i] = ParsePsiTotals(*text);
      s.psi_read[i] = true;
    }
  }
  if (auto text = TelemetryReadFile(sources_.proc + "/diskstats")) {
    s.disks = ParseDiskstats(*text);
    s.disks_read = true;
  }
  if (auto text = TelemetryReadFile(sources_.proc + "/net/dev")) {
    s.nics = ParseNetDev(*text);
    s.nics_read = true;
  }
  if (auto text = TelemetryReadFile(sources_.proc + "/meminfo")) s.mem = ParseMeminfo(*text);
  return s;
}

void NodeTelemetrySampler::SeeMemAvailable(const MemInfoFields& m) {
  if (m.available_bytes && (!mem_min_ || *m.available_bytes < *mem_min_))
    mem_min_ = m.available_bytes;
}

void NodeTelemetrySampler::Start(double now_s) {
  if (!membw_) membw_ = std::make_unique<BandwidthCounter>(sources_);
  if (!gpu_)
    gpu_ = std::make_unique<GpuTelemetrySampler>(sources_.gpus ? *sources_.gpus : NodeNvml());
  gpu_->Start(now_s);
  membw_start_ = membw_->Read();
  start_ = Read();
  start_s_ = now_s;
  last_mem_s_ = now_s;
  mem_min_.reset();
  SeeMemAvailable(start_.mem);
}

void NodeTelemetrySampler::Tick(double now_s) {
  if (gpu_) gpu_->Tick(now_s);
  if (now_s - last_mem_s_ < kMemSampleS) return;
  last_mem_s_ = now_s;
  if (auto text = TelemetryReadFile(sources_.proc + "/meminfo"))
    SeeMemAvailable(ParseMeminfo(*text));
}

NodeTelemetry NodeTelemetrySampler::Finish(double now_s) {
  NodeTelemetry t;
  const Snapshot end = Read();
  const std::optional<double> membw_end = membw_ ? membw_->Read() : std::nullopt;
  t.window_s = std::max(0.0, now_s - start_s_);
  const double window_us = t.window_s * 1e6;

  // PSI: the stalled share of the window, from the totals' difference.
  const char* kinds[3] = {"cpu", "io", "memory"};
  double* some[3] = {&t.psi_cpu_some, &t.psi_io_some, &t.psi_memory_some};
  double* full[3] = {&t.psi_cpu_full, &t.psi_io_full, &t.psi_memory_full};
  for (int i = 0; i < 3; ++i) {
    if (!start_.psi_read[i] || !end.psi_read[i]) {
      TelemetryNote(&t.notes, "PSI: unavailable (" + sources_.proc +
                                  "/pressure missing or unreadable: a kernel without CONFIG_PSI, "
                                  "or booted with psi=0)");
      continue;
    }
    auto share = [&](const std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
      if (!a || !b || window_us <= 0) return std::nan("");
      return std::clamp(static_cast<double>(TelemetryDelta(*a, *b)) / window_us, 0.0, 1.0);
    };
    *some[i] = share(start_.psi[i].some_us, end.psi[i].some_us);
    *full[i] = share(start_.psi[i].full_us, end.psi[i].full_us);
    if (std::isnan(*some[i]) && window_us > 0)
      TelemetryNote(&t.notes, std::string("PSI ") + kinds[i] + ": unreadable");
  }

  // Disks: whole disks present at both ends.
  if (!start_.disks_read || !end.disks_read) {
    TelemetryNote(&t.notes, "disks: " + sources_.proc + "/diskstats unreadable");
  } else {
    std::set<std::string> names;
    for (const DiskstatsLine& d : end.disks) names.insert(d.name);
    for (const DiskstatsLine& d : end.disks) {
      if (!IsCountedDisk(d.name, names)) continue;
      auto was = std::find_if(start_.disks.begin(), start_.disks.end(),
                              [&](const DiskstatsLine& s) { return s.name == d.name; });
      if (was == start_.disks.end()) continue;
      DiskTelemetry out;
      out.device = d.name;
      const int64_t read_sectors = TelemetryDelta(was->sectors_read, d.sectors_read);
      const int64_t written_sectors = TelemetryDelta(was->sectors_written, d.sectors_written);
      out.read_bytes = read_sectors > INT64_MAX / 512 ? INT64_MAX : read_sectors * 512;
      out.write_bytes = written_sectors > INT64_MAX / 512 ? INT64_MAX : written_sectors * 512;
      out.reads = TelemetryDelta(was->reads, d.reads);
      out.writes = TelemetryDelta(was->writes, d.writes);
      t.disks.push_back(std::move(out));
    }
  }

  if (!start_.nics_read || !end.nics_read) {
    TelemetryNote(&t.notes, "network: " + sources_.proc + "/net/dev unreadable");
  } else {
    for (const auto& [name, bytes] : end.nics) {
      auto was = start_.nics.find(name);
      if (was == start_.nics.end()) continue;
      t.nics.push_back({name, TelemetryDelta(was->second.rx, bytes.rx),
                        TelemetryDelta(was->second.tx, bytes.tx)});
    }
  }

  SeeMemAvailable(end.mem);
  if (start_.mem.available_bytes)
    t.mem_available_start_bytes = TelemetryClampBytes(*start_.mem.available_bytes);
  if (end.mem.available_bytes)
    t.mem_available_end_bytes = TelemetryClampBytes(*end.mem.available_bytes);
  if (mem_min_) t.mem_available_min_bytes = TelemetryClampBytes(*mem_min_);
  if (start_.mem.cached_bytes) t.cached_start_bytes = TelemetryClampBytes(*start_.mem.cached_bytes);
  if (end.mem.cached_bytes) t.cached_end_bytes = TelemetryClampBytes(*end.mem.cached_bytes);
  if (!start_.mem.available_bytes || !end.mem.available_bytes || !start_.mem.cached_bytes ||
      !end.mem.cached_bytes) {
    TelemetryNote(&t.notes, "memory: " + sources_.proc + "/meminfo lacks MemAvailable or Cached");
  }

  t.membw_note = membw_ ? membw_->note() : "memory bandwidth: unavailable (not sampled)";
  if (membw_start_ && membw_end) {
    t.membw_bytes = std::max(0.0, *membw_end - *membw_start_);
  } else if (membw_ && membw_->available()) {
    t.membw_note = "memory bandwidth: unavailable (" + membw_->note() + " could not be read)";
  }
  if (gpu_) {
    gpu_->Finish(now_s, &t);
  } else {
    t.gpu_note = "gpu: unavailable (not sampled)";
  }
  return t;
}

}  // namespace codl::agent
