// SummarizeTelemetry (results.h): the victim node's telemetry, median over a pairing's trials.
#include <cmath>

#include "lib/analysis/results.h"
#include "lib/analysis/stats.h"

namespace codl::experiment {

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
  return s;
}

}  // namespace codl::experiment
