#include "lib/analysis/trial_rows.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "lib/analysis/neighbours.h"
#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/phase_order.h"
#include "lib/analysis/rank_summary.h"
#include "lib/analysis/results.h"
#include "lib/analysis/trial_metric.h"
#include "lib/common/gpu_clock_reasons.h"

namespace codl::experiment {
namespace {

std::vector<const TrialRecord*> ByIndex(const std::vector<TrialRecord>& trials) {
  std::vector<const TrialRecord*> sorted;
  for (const auto& t : trials) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto* a, const auto* b) { return a->index < b->index; });
  return sorted;
}

// The columns every row of the exports starts with: which trial (`trial` from 1, as progress,
// warnings and the report number them; `trial_index` from 0, as the store and the plan do),
// under which interference.
// `role`: baseline or interfered (the victim's rows), or neighbour (a workload antagonist's).
const std::vector<std::string> kTrialColumns = {"experiment_id", "experiment",  "trial",
                                                "trial_index",   "repetition",  "pairing",
                                                "role",          "antagonists", "intensities"};
constexpr size_t kRoleColumn = 6;

std::vector<Cell> TrialCells(const ExperimentRecord& e, const TrialRecord& t) {
  std::string names, intensities;
  // Joined with ';' (a '+' may occur inside a rate label such as "1e+9/s").
  for (const auto& [name, intensity] : PairingIntensities(IsBaselineTrial(t) ? "" : t.pairing)) {
    names += (names.empty() ? "" : ";") + name;
    intensities += (intensities.empty() ? "" : ";") + intensity;
  }
  return {Cell::Text(e.id),
          Cell::Text(e.name),
          Cell::Int(t.index + 1),
          Cell::Int(t.index),
          Cell::Int(t.repetition),
          Cell::Text(IsBaselineTrial(t) ? "baseline" : t.pairing),
          Cell::Text(IsBaselineTrial(t) ? "baseline" : "interfered"),
          Cell::Text(names),
          Cell::Text(intensities)};
}

// Mean cores over the antagonist instances that measured CPU time, summed per trial: what the
// interference cost in CPU beside the resource it targets. NaN when none measured.
double AntagonistCores(const TrialRecord& t) {
  double sum = 0;
  bool any = false;
  for (const auto& a : t.antagonists) {
    if (a.run_s <= 0) continue;
    sum += CoresUsed(a.cpu_s, a.run_s);
    any = true;
  }
  return any ? sum : std::nan("");
}

// A flagged trial's reason codes in the order found, joined by ';'
// ("missed_target;did_not_settle").
std::string FlagCodes(const TrialRecord& t) {
  std::string codes;
  for (const FlagReason& r : t.flag_reasons)
    codes += (codes.empty() ? "" : ";") + std::string(ToString(r.code));
  return codes;
}

// The rank with the largest busy time in this trial (its straggler); -1 for a single instance.
int SlowestRank(const TrialRecord& t) {
  int slowest = -1;
  double most = -1;
  for (const RankRecord& r : t.ranks) {
    if (r.step_median_s > 0 && r.busy_median_s > most) {
      most = r.busy_median_s;
      slowest = r.rank;
    }
  }
  return slowest;
}

void Append(std::vector<Cell>* row, std::initializer_list<Cell> cells) {
  row->insert(row->end(), cells.begin(), cells.end());
}

// The node telemetry columns of --trials (docs/results.md, "Node telemetry"): the victim
// node's figures over the victim's window; disks and nics in full as JSON text.
const std::vector<std::string> kTelemetryColumns = {"telemetry_node",
                                                    "telemetry_window_s",
                                                    "psi_cpu_some",
                                                    "psi_cpu_full",
                                                    "psi_io_some",
                                                    "psi_io_full",
                                                    "psi_memory_some",
                                                    "psi_memory_full",
                                                    "disk_read_bytes",
                                                    "disk_write_bytes",
                                                    "disk_reads",
                                                    "disk_writes",
                                                    "net_rx_bytes",
                                                    "net_tx_bytes",
                                                    "mem_available_min_bytes",
                                                    "mem_available_start_bytes",
                                                    "mem_available_end_bytes",
                                                    "cached_start_bytes",
                                                    "cached_end_bytes",
                                                    "membw_bytes",
                                                    "membw_note",
                                                    "disks",
                                                    "nics",
                                                    "telemetry_notes"};

// {"vda":{"read_bytes":…,"write_bytes":…,"reads":…,"writes":…}} or {"lo":{"rx_bytes":…,…}}.
std::string TelemetryDevicesJson(const NodeTelemetry& n, bool disks) {
  nlohmann::json o = nlohmann::json::object();
  if (disks) {
    for (const DiskTelemetry& d : n.disks) {
      o[d.device] = {{"read_bytes", d.read_bytes},
                     {"write_bytes", d.write_bytes},
                     {"reads", d.reads},
                     {"writes", d.writes}};
    }
  } else {
    for (const NicTelemetry& c : n.nics)
      o[c.interface] = {{"rx_bytes", c.rx_bytes}, {"tx_bytes", c.tx_bytes}};
  }
  return o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The victim's (rank 0's) node's telemetry, the first record; null when there is none.
const NodeTelemetry* VictimNodeTelemetry(const TrialRecord& t) {
  return t.node_telemetry.empty() ? nullptr : &t.node_telemetry.front();
}

// One node's figures; null: every column missing.
void AppendTelemetry(std::vector<Cell>* row, const NodeTelemetry* node) {
  if (node == nullptr) {
    row->insert(row->end(), kTelemetryColumns.size(), Cell::Missing());
    return;
  }
  const NodeTelemetry& n = *node;
  auto memory = [](int64_t v) { return v >= 0 ? Cell::Int(v) : Cell::Missing(); };
  int64_t reads = 0, writes = 0;
  for (const DiskTelemetry& d : n.disks) {
    reads += d.reads;
    writes += d.writes;
  }
  Append(row, {Cell::Text(n.node),
               Cell::Number(n.window_s),
               Cell::Number(n.psi_cpu_some),
               Cell::Number(n.psi_cpu_full),
               Cell::Number(n.psi_io_some),
               Cell::Number(n.psi_io_full),
               Cell::Number(n.psi_memory_some),
               Cell::Number(n.psi_memory_full),
               Cell::Int(DiskReadBytes(n)),
               Cell::Int(DiskWriteBytes(n)),
               Cell::Int(reads),
               Cell::Int(writes),
               Cell::Int(NetRxBytes(n)),
               Cell::Int(NetTxBytes(n)),
               memory(n.mem_available_min_bytes),
               memory(n.mem_available_start_bytes),
               memory(n.mem_available_end_bytes),
               memory(n.cached_start_bytes),
               memory(n.cached_end_bytes),
               Cell::Number(n.membw_bytes),
               Cell::Text(n.membw_note),
               Cell::Text(TelemetryDevicesJson(n, true)),
               Cell::Text(TelemetryDevicesJson(n, false)),
               Cell::Text(n.notes)});
}

// The GPU columns of --trials (docs/results.md, "Node telemetry"): the victim node's GPUs
// through NVML, summed (bytes), averaged (utilization), or the extreme (the rest) over the GPUs
// that report the figure; gpu_note says why there are none; `gpus` in full as JSON text.
const std::vector<std::string> kGpuTelemetryColumns = {"gpu_note",
                                                       "gpu_count",
                                                       "gpu_util_mean",
                                                       "gpu_util_max",
                                                       "gpu_mem_used_max_bytes",
                                                       "gpu_pcie_tx_bytes",
                                                       "gpu_pcie_rx_bytes",
                                                       "gpu_nvlink_tx_bytes",
                                                       "gpu_nvlink_rx_bytes",
                                                       "gpu_sm_clock_min_mhz",
                                                       "gpu_clock_reasons",
                                                       "gpus"};

nlohmann::json GpuJsonNumber(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// [{"index":0,"name":…,"util_mean":…,…,"clock_reasons":"sw_power_cap|sw_thermal"}]
std::string GpusJson(const NodeTelemetry& n) {
  nlohmann::json a = nlohmann::json::array();
  for (const GpuTelemetry& g : n.gpus) {
    a.push_back(
        {{"index", g.index},
         {"name", g.name},
         {"samples", g.samples},
         {"util_mean", GpuJsonNumber(g.util_mean)},
         {"util_max", GpuJsonNumber(g.util_max)},
         {"mem_util_mean", GpuJsonNumber(g.mem_util_mean)},
         {"mem_used_max_bytes", g.mem_used_max_bytes >= 0 ? nlohmann::json(g.mem_used_max_bytes)
                                                          : nlohmann::json(nullptr)},
         {"mem_total_bytes",
          g.mem_total_bytes >= 0 ? nlohmann::json(g.mem_total_bytes) : nlohmann::json(nullptr)},
         {"pcie_tx_bytes", GpuJsonNumber(g.pcie_tx_bytes)},
         {"pcie_rx_bytes", GpuJsonNumber(g.pcie_rx_bytes)},
         {"nvlink_tx_bytes", GpuJsonNumber(g.nvlink_tx_bytes)},
         {"nvlink_rx_bytes", GpuJsonNumber(g.nvlink_rx_bytes)},
         {"sm_clock_min_mhz", GpuJsonNumber(g.sm_clock_min_mhz)},
         {"sm_clock_mean_mhz", GpuJsonNumber(g.sm_clock_mean_mhz)},
         {"mem_clock_min_mhz", GpuJsonNumber(g.mem_clock_min_mhz)},
         {"mem_clock_mean_mhz", GpuJsonNumber(g.mem_clock_mean_mhz)},
         {"clock_reasons", GpuClockReasonsText(g.clock_reasons)},
         {"notes", g.notes}});
  }
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AppendGpuTelemetry(std::vector<Cell>* row, const NodeTelemetry* node) {
  if (node == nullptr) {
    row->insert(row->end(), kGpuTelemetryColumns.size(), Cell::Missing());
    return;
  }
  const NodeTelemetry& n = *node;
  const double nan = std::nan("");
  double util_sum = 0, util_max = nan, mem_max = nan, sm_min = nan;
  double sums[4] = {nan, nan, nan, nan};  // PCIe tx, rx, NVLink tx, rx
  int util_n = 0;
  int64_t reasons = -1;
  auto keep = [](double* to, double v, bool larger) {
    if (std::isfinite(v) && (std::isnan(*to) || (larger ? v > *to : v < *to))) *to = v;
  };
  for (const GpuTelemetry& g : n.gpus) {
    if (std::isfinite(g.util_mean)) {
      util_sum += g.util_mean;
      ++util_n;
    }
    keep(&util_max, g.util_max, true);
    if (g.mem_used_max_bytes >= 0) keep(&mem_max, static_cast<double>(g.mem_used_max_bytes), true);
    keep(&sm_min, g.sm_clock_min_mhz, false);
    const double bytes[4] = {g.pcie_tx_bytes, g.pcie_rx_bytes, g.nvlink_tx_bytes,
                             g.nvlink_rx_bytes};
    for (int i = 0; i < 4; ++i) {
      if (std::isfinite(bytes[i])) sums[i] = (std::isnan(sums[i]) ? 0 : sums[i]) + bytes[i];
    }
    if (g.clock_reasons >= 0) reasons = (reasons < 0 ? 0 : reasons) | g.clock_reasons;
  }
  Append(row, {Cell::Text(n.gpu_note), Cell::Int(static_cast<int64_t>(n.gpus.size())),
               Cell::Number(util_n > 0 ? util_sum / util_n : nan), Cell::Number(util_max),
               Cell::Number(mem_max), Cell::Number(sums[0]), Cell::Number(sums[1]),
               Cell::Number(sums[2]), Cell::Number(sums[3]), Cell::Number(sm_min),
               reasons >= 0 ? Cell::Text(GpuClockReasonsText(reasons)) : Cell::Missing(),
               Cell::Text(GpusJson(n))});
}

// A workload antagonist's figure in a trial (beside the victim, or its solo run): role
// "neighbour", its metric and unit, before the trial's victim row. The columns a neighbour has
// no value for (the victim's wall time, cores, ranks, cache) are missing.
void AppendNeighbourRows(const ExperimentRecord& e, const TrialRecord& t, TidyTable* table) {
  std::set<std::string> names;
  for (const AntagonistResult& a : t.antagonists) {
    if (a.injector != kWorkloadInjector || !names.insert(a.name).second) continue;
    const double value = NeighbourValue(t, a.name);
    const bool measured = t.state == TrialState::kDone && std::isfinite(value);
    const std::string reason = measured ? ""
                               : t.state == TrialState::kDone
                                   ? "no measurement (no step of the workload in the window)"
                                   : ExclusionReason(t, value);
    std::vector<Cell> row = TrialCells(e, t);
    row[kRoleColumn] = Cell::Text("neighbour");
    Append(&row, {Cell::Text(ToString(t.state)),
                  Cell::Text(a.unit == "steps/s" ? "throughput" : "elapsed"), Cell::Text(a.unit),
                  Cell::Number(value), Cell::Bool(t.state == TrialState::kFlagged),
                  Cell::Text(t.state == TrialState::kFlagged ? FlagCodes(t) : ""),
                  Cell::Bool(!reason.empty()), Cell::Text(reason), Cell::Missing(), Cell::Missing(),
                  Cell::Missing(), Cell::Text(""), Cell::Text(a.node), Cell::Int(1),
                  Cell::Missing(), Cell::Int(t.started_unix_ms), Cell::Int(t.finished_unix_ms),
                  Cell::Missing(), Cell::Missing()});
    row.insert(row.end(), kTelemetryColumns.size(), Cell::Missing());
    row.insert(row.end(), kGpuTelemetryColumns.size(), Cell::Missing());
    table->rows.push_back(std::move(row));
  }
}

}  // namespace

std::string ExclusionReason(const TrialRecord& t, double metric_value) {
  auto with = [&t](const std::string& what) {
    return t.error.empty() ? what : what + ": " + t.error;
  };
  switch (t.state) {
    case TrialState::kDone:
      return std::isfinite(metric_value) ? "" : "no measurement (no steps or metric recorded)";
    case TrialState::kFlagged: return with("flagged (an antagonist missed its target)");
    case TrialState::kFailed: {
      const std::string why = FailureWithStderr(t.error, t.stderr_tail);
      const std::string what = std::string("failed (") + FailureDescription(t.failure) + ")";
      return why.empty() ? what : what + ": " + why;
    }
    default: return std::string("not run (") + ToString(t.state) + ")";
  }
}

TidyTable TrialsTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials,
                      const TrialMetric& metric) {
  TidyTable table;
  table.columns = kTrialColumns;
  for (const char* c : {"state", "metric", "metric_unit", "value", "flagged", "flag_reasons",
                        "excluded", "exclude_reason", "wall_s", "victim_cores", "antagonist_cores",
                        "victim_cpus", "victim_node", "ranks", "slowest_rank", "started_unix_ms",
                        "finished_unix_ms", "cache_total_bytes", "cache_resident_bytes"})
    table.columns.push_back(c);
  table.columns.insert(table.columns.end(), kTelemetryColumns.begin(), kTelemetryColumns.end());
  table.columns.insert(table.columns.end(), kGpuTelemetryColumns.begin(),
                       kGpuTelemetryColumns.end());
  table.columns.push_back("attempt");  // last: older readers' columns keep their places
  table.columns.push_back("failure");
  for (const TrialRecord* t : ByIndex(trials)) {
    AppendNeighbourRows(e, *t, &table);
    if (t->solo) continue;  // no victim ran: its neighbour row is all there is
    const double value = TrialMetricValue(*t, metric);
    const std::string reason = ExclusionReason(*t, value);
    const int slowest = SlowestRank(*t);
    std::vector<Cell> row = TrialCells(e, *t);
    const bool cpu_measured = !t->victim_effective_cpus.empty();
    Append(&row,
           {Cell::Text(ToString(t->state)), Cell::Text(metric.Name()), Cell::Text(metric.Unit()),
            Cell::Number(value), Cell::Bool(t->state == TrialState::kFlagged),
            Cell::Text(t->state == TrialState::kFlagged ? FlagCodes(*t) : ""),
            Cell::Bool(!reason.empty()), Cell::Text(reason), Cell::Number(t->wall_s),
            cpu_measured ? Cell::Number(CoresUsed(t->victim_cpu_s, t->wall_s)) : Cell::Missing(),
            Cell::Number(AntagonistCores(*t)), Cell::Text(t->victim_effective_cpus),
            Cell::Text(t->victim_node),
            Cell::Int(t->ranks.empty() ? 1 : static_cast<int64_t>(t->ranks.size())),
            slowest >= 0 ? Cell::Int(slowest) : Cell::Missing(), Cell::Int(t->started_unix_ms),
            Cell::Int(t->finished_unix_ms),
            t->cache_total_bytes >= 0 ? Cell::Int(t->cache_total_bytes) : Cell::Missing(),
            t->cache_resident_bytes >= 0 ? Cell::Int(t->cache_resident_bytes) : Cell::Missing()});
    AppendTelemetry(&row, VictimNodeTelemetry(*t));
    AppendGpuTelemetry(&row, VictimNodeTelemetry(*t));
    Append(&row,
           {Cell::Int(t->attempt),
            t->failure == FailureKind::kNone ? Cell::Missing() : Cell::Text(ToString(t->failure))});
    table.rows.push_back(std::move(row));
  }
  return table;
}

TidyTable PhasesTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials) {
  TidyTable table;
  table.columns = kTrialColumns;
  for (const char* c : {"state", "excluded", "rank", "phase", "seconds"}) {
    table.columns.push_back(c);
  }
  const std::vector<const TrialRecord*> ordered = ByIndex(trials);
  const std::vector<std::string> phases = OrderPhases(ordered);  // one order for every trial
  for (const TrialRecord* t : ordered) {
    // A phase median exists only for trials with steps: the metric's value does not matter.
    const bool excluded = t->state != TrialState::kDone;
    // Rank 0 (the trial's own medians), then each later rank's.
    std::vector<std::pair<int, const std::map<std::string, double>*>> ranks = {
        {0, &t->phase_medians}};
    for (const RankRecord& r : t->ranks) {
      if (r.rank != 0) ranks.push_back({r.rank, &r.phase_medians});
    }
    for (const auto& [rank, medians] : ranks) {
      for (const auto& phase : phases) {
        auto it = medians->find(phase);
        if (it == medians->end()) continue;
        std::vector<Cell> row = TrialCells(e, *t);
        Append(&row, {Cell::Text(ToString(t->state)), Cell::Bool(excluded), Cell::Int(rank),
                      Cell::Text(phase), Cell::Number(it->second)});
        table.rows.push_back(std::move(row));
      }
    }
  }
  return table;
}

TidyTable NodeTelemetryTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials) {
  TidyTable table;
  table.columns = kTrialColumns;
  for (const char* c : {"state", "node_role"}) table.columns.push_back(c);
  table.columns.insert(table.columns.end(), kTelemetryColumns.begin(), kTelemetryColumns.end());
  table.columns.insert(table.columns.end(), kGpuTelemetryColumns.begin(),
                       kGpuTelemetryColumns.end());
  for (const TrialRecord* t : ByIndex(trials)) {
    std::set<std::string> victim_nodes = {t->victim_node};
    for (const RankRecord& r : t->ranks) victim_nodes.insert(r.node);
    for (const NodeTelemetry& n : t->node_telemetry) {
      std::vector<Cell> row = TrialCells(e, *t);
      // A solo trial ran no victim: every node of it ran the workload alone.
      const bool victim = !t->solo && victim_nodes.count(n.node) > 0;
      Append(&row, {Cell::Text(ToString(t->state)), Cell::Text(victim ? "victim" : "antagonists")});
      AppendTelemetry(&row, &n);
      AppendGpuTelemetry(&row, &n);
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

TidyTable RanksTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials) {
  TidyTable table;
  table.columns = kTrialColumns;
  for (const char* c : {"state", "excluded", "rank", "node", "exit_code", "wall_s", "step_median_s",
                        "busy_median_s", "slowest"}) {
    table.columns.push_back(c);
  }
  for (const TrialRecord* t : ByIndex(trials)) {
    if (t->solo) continue;  // no victim ran
    const bool excluded = t->state != TrialState::kDone;
    const int slowest = SlowestRank(*t);
    auto add = [&](const RankRecord& r) {
      std::vector<Cell> row = TrialCells(e, *t);
      const bool stepped = r.step_median_s > 0;
      Append(&row, {Cell::Text(ToString(t->state)), Cell::Bool(excluded), Cell::Int(r.rank),
                    Cell::Text(r.node), Cell::Int(r.exit_code), Cell::Number(r.wall_s),
                    stepped ? Cell::Number(r.step_median_s) : Cell::Missing(),
                    stepped ? Cell::Number(r.busy_median_s) : Cell::Missing(),
                    Cell::Bool(r.rank == slowest)});
      table.rows.push_back(std::move(row));
    };
    if (!t->ranks.empty()) {
      for (const RankRecord& r : t->ranks) add(r);
      continue;
    }
    // A single instance is its rank 0.
    RankRecord only;
    only.node = t->victim_node;
    only.exit_code = t->exit_code;
    only.wall_s = t->wall_s;
    SummarizeRankSteps(t->steps, &only);
    add(only);
  }
  return table;
}

}  // namespace codl::experiment
