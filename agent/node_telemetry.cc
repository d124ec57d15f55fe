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

#include "lib/common/cpu_list.h"

namespace codl::agent {
namespace {

// Files under /proc and /sys are small; anything larger than this is not what we expect.
constexpr size_t kTelemetryMaxFileBytes = 1 << 20;

std::optional<std::string> TelemetryReadFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::string data;
  char buf[8192];
  while (data.size() <= kTelemetryMaxFileBytes) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

std::vector<std::string_view> TelemetrySplit(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(sep, at);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Whitespace-separated fields of one line.
std::vector<std::string_view> TelemetryFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A whole field as an unsigned decimal (or 0x-hex when `base` is 0) number; nullopt otherwise.
std::optional<uint64_t> TelemetryNumber(std::string_view s, int base = 10) {
  if (base == 0) {
    base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      base = 16;
    }
  }
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// b - a for counters that may have wrapped or been reset (a device removed and re-added): a
// decrease is read as 0, never as a huge number.
int64_t TelemetryDelta(uint64_t a, uint64_t b) {
  if (b < a) return 0;
  const uint64_t d = b - a;
  return d > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(d);
}

void TelemetryNote(std::string* notes, const std::string& what) {
  if (notes->find(what) != std::string::npos) return;
  *notes += (notes->empty() ? "" : "; ") + what;
}

int64_t TelemetryClampBytes(uint64_t v) {
  return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
}

std::vector<std::string> TelemetryListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string TelemetryTrim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return std::string(s);
}

}  // namespace

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
