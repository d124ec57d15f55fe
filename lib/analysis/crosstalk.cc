// Cross-talk: see crosstalk.h.
#include "lib/analysis/crosstalk.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "lib/analysis/confound.h"
#include "lib/analysis/results.h"
#include "lib/common/records.h"

namespace codl::experiment {

namespace {

constexpr double kXtalkMB = 1e6;
constexpr double kXtalkMiB = 1024.0 * 1024.0;

// The figure of column `key` in a telemetry summary (NaN when not counted); cpu_cores is not
// telemetry (the antagonist's own CPU time) and mem_held_bytes is the lowest MemAvailable.
double XtalkTelemetryFigure(const TelemetrySummary& t, const std::string& key) {
  if (key == "psi_cpu_some") return t.psi_cpu_some;
  if (key == "psi_io_some") return t.psi_io_some;
  if (key == "psi_memory_some") return t.psi_memory_some;
  if (key == "disk_bytes_per_s") return t.disk_read_bytes_per_s + t.disk_write_bytes_per_s;
  if (key == "net_max_bytes_per_s") return std::max(t.net_rx_bytes_per_s, t.net_tx_bytes_per_s);
  if (key == "mem_held_bytes") return t.mem_available_min_bytes;
  if (key == "membw_bytes_per_s") return t.membw_bytes_per_s;
  // The GPUs of the node (NVML): the busiest GPU's utilization, the others summed.
  double v = kNaN;
  auto take = [&v](double x, bool sum) {
    if (!std::isfinite(x)) return;
    v = !std::isfinite(v) ? x : sum ? v + x : std::max(v, x);
  };
  for (const GpuTelemetrySummary& g : t.gpus) {
    if (key == "gpu_util") take(g.util_mean / 100, false);
    if (key == "gpu_mem_bytes") take(g.mem_used_max_bytes, true);
    if (key == "pcie_bytes_per_s") {
      take(g.pcie_tx_bytes_per_s, true);
      take(g.pcie_rx_bytes_per_s, true);
    }
    if (key == "nvlink_bytes_per_s") {
      take(g.nvlink_tx_bytes_per_s, true);
      take(g.nvlink_rx_bytes_per_s, true);
    }
  }
  return v;
}

const PairingSummary* XtalkBaseline(const ExperimentResults& r) {
  for (const PairingSummary& p : r.pairings) {
    if (p.baseline) return &p;
  }
  return nullptr;
}

std::string XtalkFigure(double v, const std::string& unit) {
  char buf[64];
  if (unit == "bytes/s") {
    std::snprintf(buf, sizeof buf, "%.1f MB/s", v / kXtalkMB);
  } else if (unit == "bytes") {
    std::snprintf(buf, sizeof buf, "%.0f MiB", v / kXtalkMiB);
  } else if (unit == "cores") {
    std::snprintf(buf, sizeof buf, "%.2f cores", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

// The independent counter for what `injector` reports it achieved, from the telemetry delta.
bool XtalkCounterCheck(const std::string& injector, double achieved, const std::string& unit,
                       const CrosstalkRow& row, const std::string& membw_note,
                       CounterCheck* check) {
  const auto& resources = CrosstalkResources();
  auto delta = [&](const std::string& key) {
    for (size_t i = 0; i < resources.size(); ++i) {
      if (resources[i].key == key) return row.cells[i].value;
    }
    return kNaN;
  };
  double counted = kNaN;
  if (injector == "io_uring") {
    check->counter = "diskstats read+write (every disk)";
    counted = delta("disk_bytes_per_s");
  } else if (injector == "net") {
    check->counter = "/proc/net/dev max(rx, tx) (every interface)";
    counted = delta("net_max_bytes_per_s");
  } else if (injector == "memcpy") {
    check->counter = "memory bandwidth (read+write)";
    counted = delta("membw_bytes_per_s");
    if (!std::isfinite(counted)) {
      check->note = "no independent counter on this node: " +
                    (membw_note.empty() ? std::string("memory bandwidth not counted") : membw_note);
      check->reported = achieved;
      return true;
    }
  } else {
    return false;
  }
  check->reported = achieved;
  check->counted = counted;
  if (unit != "bytes/s") {
    check->note = "the antagonist reports " + unit + ", not bytes/s";
  } else if (!(achieved > 0)) {
    check->note = "no achieved rate recorded";
  } else if (!std::isfinite(counted)) {
    check->note = "the node did not count it";
  } else {
    check->relative_error = (counted - achieved) / achieved;
  }
  return true;
}

}  // namespace

const std::vector<CrosstalkResource>& CrosstalkResources() {
  static const std::vector<CrosstalkResource> kAll = {
      {"cpu_cores", "cpu cores", "cores", "CPU", 0.25},
      {"psi_cpu_some", "psi cpu", "share", "PSI cpu some", 0.10},
      {"psi_io_some", "psi io", "share", "PSI io some", 0.10},
      {"psi_memory_some", "psi mem", "share", "PSI memory some", 0.10},
      {"disk_bytes_per_s", "disk MB/s", "bytes/s", "disk I/O", 1 * kXtalkMB},
      {"net_max_bytes_per_s", "net MB/s", "bytes/s", "network I/O", 1 * kXtalkMB},
      {"mem_held_bytes", "mem MiB", "bytes", "memory held", 256 * kXtalkMiB},
      {"membw_bytes_per_s", "membw GB/s", "bytes/s", "memory bandwidth", 1000 * kXtalkMB},
      {"gpu_util", "gpu util", "share", "GPU utilization", 0.10, true},
      {"gpu_mem_bytes", "gpu mem MiB", "bytes", "GPU memory", 256 * kXtalkMiB, true},
      {"pcie_bytes_per_s", "pcie MB/s", "bytes/s", "PCIe traffic", 100 * kXtalkMB, true},
      {"nvlink_bytes_per_s", "nvlink MB/s", "bytes/s", "NVLink traffic", 100 * kXtalkMB, true},
  };
  return kAll;
}

std::vector<std::string> OwnCrosstalkResources(const std::string& injector) {
  static const std::map<std::string, std::vector<std::string>> kOwn = {
      {"cpu", {"cpu_cores", "psi_cpu_some"}},
      {"memcpy", {"membw_bytes_per_s"}},
      {"io_uring", {"disk_bytes_per_s", "psi_io_some"}},
      {"pagecache", {"mem_held_bytes", "psi_memory_some"}},
      {"net", {"net_max_bytes_per_s"}},
      {"cuda_memcpy", {"pcie_bytes_per_s", "gpu_mem_bytes"}},
      {"nccl", {"nvlink_bytes_per_s", "gpu_util", "gpu_mem_bytes"}},
      {"mps_cotenant", {"gpu_util", "gpu_mem_bytes"}},
  };
  auto it = kOwn.find(injector);
  return it == kOwn.end() ? std::vector<std::string>{} : it->second;
}

namespace {
bool XtalkHasGpuFigures(const CrosstalkMatrix& m) {
  const auto& resources = CrosstalkResources();
  for (const CrosstalkRow& row : m.rows) {
    for (size_t i = 0; i < resources.size(); ++i) {
      if (resources[i].gpu && std::isfinite(row.cells[i].value)) return true;
    }
  }
  return false;
}
}  // namespace

std::vector<bool> CrosstalkColumnsShown(const CrosstalkMatrix& m) {
  const bool gpu = XtalkHasGpuFigures(m);
  std::vector<bool> shown;
  for (const CrosstalkResource& res : CrosstalkResources()) shown.push_back(gpu || !res.gpu);
  return shown;
}

std::string CrosstalkGpuLeftOut(const CrosstalkMatrix& m) {
  if (XtalkHasGpuFigures(m)) return "";
  // The agent's note already reads "gpu: unavailable (...)" where NVML is missing.
  const std::string& note = m.gpu_note;
  return (note.rfind("gpu: ", 0) == 0
              ? note
              : "gpu: no GPU figures (" + (note.empty() ? "no window counted a GPU" : note) + ")") +
         ": the gpu util, gpu mem, pcie and nvlink columns are left out";
}

CrosstalkMatrix SummarizeCrosstalk(const ExperimentResults& r) {
  CrosstalkMatrix m;
  const PairingSummary* base = XtalkBaseline(r);
  if (base != nullptr) {
    m.baseline_n = base->telemetry_all.n;
    m.window_s = base->median_metric_s;
    m.membw_note = base->telemetry_all.membw_note;
    m.gpu_note = base->telemetry_all.gpu_note;
  }
  const auto& resources = CrosstalkResources();
  for (const PairingSummary& p : r.pairings) {
    if (p.baseline || p.antagonists.size() != 1) continue;
    const AntagonistSummary& a = p.antagonists.front();
    CrosstalkRow row;
    row.pairing = p.pairing;
    row.antagonist = a.name;
    row.injector = a.injector;
    row.intensity = a.intensity;
    row.achieved_rate = a.achieved_rate;
    row.unit = a.unit;
    row.n = p.telemetry_all.n;
    row.n_below_target = p.n_flagged;
    if (m.membw_note.empty()) m.membw_note = p.telemetry_all.membw_note;
    if (m.gpu_note.empty()) m.gpu_note = p.telemetry_all.gpu_note;
    const std::vector<std::string> own = OwnCrosstalkResources(a.injector);
    std::string resource = ResourceOf(a.injector);
    for (const CrosstalkResource& res : resources) {
      CrosstalkCell cell;
      cell.own = std::find(own.begin(), own.end(), res.key) != own.end();
      if (res.key == "cpu_cores") {
        cell.value = a.cores;
      } else if (base != nullptr) {
        const double here = XtalkTelemetryFigure(p.telemetry_all, res.key);
        const double idle = XtalkTelemetryFigure(base->telemetry_all, res.key);
        // MemAvailable falls as memory is held: the drop is the footprint.
        cell.value = res.key == "mem_held_bytes" ? idle - here : here - idle;
      }
      cell.large = !cell.own && std::isfinite(cell.value) && cell.value >= res.threshold;
      if (cell.large) {
        row.off_target.push_back(p.pairing + " (" + a.injector + "): " + res.prose + " " +
                                 (res.key == "cpu_cores" ? "" : "+") +
                                 XtalkFigure(cell.value, res.unit) + " (threshold " +
                                 XtalkFigure(res.threshold, res.unit) + ")" +
                                 (resource.empty() ? "" : ", besides " + resource));
      }
      row.cells.push_back(cell);
    }
    row.has_check =
        XtalkCounterCheck(a.injector, a.achieved_rate, a.unit, row, m.membw_note, &row.check);
    m.rows.push_back(std::move(row));
  }
  return m;
}

std::vector<std::string> TelemetryConfounds(const PairingSummary& p, const PairingSummary& base) {
  std::vector<std::string> out;
  if (p.baseline || p.antagonists.empty() || p.telemetry.n == 0 || base.telemetry.n == 0)
    return out;
  bool storage = false, cpu = false;
  std::string names;
  for (const AntagonistSummary& a : p.antagonists) {
    if (a.injector == kWorkloadInjector) return out;
    storage = storage || a.injector == "io_uring" || a.injector == "pagecache";
    cpu = cpu || a.injector == "cpu";
    names += (names.empty() ? "" : ", ") + a.name + " (" + a.injector + ")";
  }
  const TelemetrySummary& t = p.telemetry;
  const TelemetrySummary& b = base.telemetry;
  const double disk = t.disk_read_bytes_per_s + t.disk_write_bytes_per_s;
  const double disk_base = b.disk_read_bytes_per_s + b.disk_write_bytes_per_s;
  char buf[256];
  if (!storage && std::isfinite(disk) && std::isfinite(disk_base) &&
      disk - disk_base > std::max(kXtalkMB, 0.25 * disk_base)) {
    std::snprintf(buf, sizeof buf,
                  " brought the node's disk I/O from %.1f to %.1f MB/s with no storage "
                  "antagonist: part of this slowdown may be storage contention",
                  disk_base / kXtalkMB, disk / kXtalkMB);
    out.push_back(names + buf);
  }
  const bool cpu_named = std::any_of(p.confounds.begin(), p.confounds.end(), [](const auto& c) {
    return c.find("CPU contention") != std::string::npos;
  });
  if (!cpu && !cpu_named && std::isfinite(t.psi_cpu_some) && std::isfinite(b.psi_cpu_some) &&
      t.psi_cpu_some - b.psi_cpu_some >= 0.10) {
    std::snprintf(buf, sizeof buf,
                  " raised PSI cpu some from %.2f to %.2f of the window (tasks waiting for a "
                  "CPU): part of this slowdown may be CPU contention; give it its own cores "
                  "(cpus:) to separate them",
                  b.psi_cpu_some, t.psi_cpu_some);
    out.push_back(names + buf);
  }
  return out;
}

}  // namespace codl::experiment
