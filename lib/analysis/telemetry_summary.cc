// SummarizeTelemetry (results.h): the victim node's telemetry, median over a pairing's trials.
#include <cmath>
#include <map>

#include "lib/analysis/results.h"
#include "lib/analysis/stats.h"

namespace codl::experiment {
namespace {

// The victim node's GPUs over the trials: per NVML index, the median of each figure.
void SummarizeGpuTelemetry(const std::vector<const TrialRecord*>& measured, TelemetrySummary* s) {
  struct Series {
    GpuTelemetrySummary out;
    std::vector<double> util_mean, util_max, mem_used, pcie_tx, pcie_rx, nvlink_tx, nvlink_rx,
        sm_min, sm_mean, mem_min, mem_mean;
  };
  std::map<int, Series> by_index;
  auto add = [](std::vector<double>* to, double v) {
    if (std::isfinite(v)) to->push_back(v);
  };
  for (const TrialRecord* t : measured) {
    if (t->node_telemetry.empty()) continue;
    const NodeTelemetry& n = t->node_telemetry.front();
    if (s->gpu_note.empty()) s->gpu_note = n.gpu_note;
    for (const GpuTelemetry& g : n.gpus) {
      Series& x = by_index[g.index];
      x.out.index = g.index;
      if (x.out.name.empty()) x.out.name = g.name;
      ++x.out.n;
      add(&x.util_mean, g.util_mean);
      add(&x.util_max, g.util_max);
      if (g.mem_used_max_bytes >= 0)
        x.mem_used.push_back(static_cast<double>(g.mem_used_max_bytes));
      if (n.window_s > 0) {
        add(&x.pcie_tx, g.pcie_tx_bytes / n.window_s);
        add(&x.pcie_rx, g.pcie_rx_bytes / n.window_s);
        add(&x.nvlink_tx, g.nvlink_tx_bytes / n.window_s);
        add(&x.nvlink_rx, g.nvlink_rx_bytes / n.window_s);
      }
      add(&x.sm_min, g.sm_clock_min_mhz);
      add(&x.sm_mean, g.sm_clock_mean_mhz);
      add(&x.mem_min, g.mem_clock_min_mhz);
      add(&x.mem_mean, g.mem_clock_mean_mhz);
      if (g.clock_reasons >= 0)
        x.out.clock_reasons = (x.out.clock_reasons < 0 ? 0 : x.out.clock_reasons) | g.clock_reasons;
    }
  }
  for (auto& [index, x] : by_index) {
    GpuTelemetrySummary g = x.out;
    g.util_mean = Median(x.util_mean);
    g.util_max = Median(x.util_max);
    g.mem_used_max_bytes = Median(x.mem_used);
    g.pcie_tx_bytes_per_s = Median(x.pcie_tx);
    g.pcie_rx_bytes_per_s = Median(x.pcie_rx);
    g.nvlink_tx_bytes_per_s = Median(x.nvlink_tx);
    g.nvlink_rx_bytes_per_s = Median(x.nvlink_rx);
    g.sm_clock_min_mhz = Median(x.sm_min);
    g.sm_clock_mean_mhz = Median(x.sm_mean);
    g.mem_clock_min_mhz = Median(x.mem_min);
    g.mem_clock_mean_mhz = Median(x.mem_mean);
    s->gpus.push_back(std::move(g));
  }
}

}  // namespace

TelemetrySummary SummarizeTelemetry(const std::vector<const TrialRecord*>& measured) {
  TelemetrySummary s;
  std::vector<double> cpu, io, memory, disk_read, disk_write, net, net_rx, net_tx, mem_min, membw;
  auto add = [](std::vector<double>* to, double v) {
    if (std::isfinite(v)) to->push_back(v);
  };
  for (const TrialRecord* t : measured) {
    if (t->node_telemetry.empty()) continue;
    const NodeTelemetry& n = t->node_telemetry.front();
    ++s.n;
    if (s.membw_note.empty()) s.membw_note = n.membw_note;
    add(&cpu, n.psi_cpu_some);
    add(&io, n.psi_io_some);
    add(&memory, n.psi_memory_some);
    if (n.mem_available_min_bytes >= 0)
      mem_min.push_back(static_cast<double>(n.mem_available_min_bytes));
    if (n.window_s <= 0) continue;
    add(&disk_read, static_cast<double>(DiskReadBytes(n)) / n.window_s);
    add(&disk_write, static_cast<double>(DiskWriteBytes(n)) / n.window_s);
    add(&net, static_cast<double>(NetRxBytes(n) + NetTxBytes(n)) / n.window_s);
    add(&net_rx, static_cast<double>(NetRxBytes(n)) / n.window_s);
    add(&net_tx, static_cast<double>(NetTxBytes(n)) / n.window_s);
    add(&membw, n.membw_bytes / n.window_s);
  }
  s.psi_cpu_some = Median(cpu);
  s.psi_io_some = Median(io);
  s.psi_memory_some = Median(memory);
  s.disk_read_bytes_per_s = Median(disk_read);
  s.disk_write_bytes_per_s = Median(disk_write);
  s.net_bytes_per_s = Median(net);
  s.net_rx_bytes_per_s = Median(net_rx);
  s.net_tx_bytes_per_s = Median(net_tx);
  s.mem_available_min_bytes = Median(mem_min);
  s.membw_bytes_per_s = Median(membw);
  SummarizeGpuTelemetry(measured, &s);
  return s;
}

}  // namespace codl::experiment
