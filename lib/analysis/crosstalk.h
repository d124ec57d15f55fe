// Cross-talk (docs/results.md, "Cross-talk"): what each antagonist touches besides its own
// resource. In a crosstalk experiment (`crosstalk:` in the YAML, or `codlctl crosstalk`) every
// antagonist runs alone, with no victim, over an idle window; the agent's node telemetry over
// that window, less the idle baseline's, is the antagonist's footprint on every resource the
// node counts: a matrix of antagonist × resource, its own resource marked, an off-target
// footprint over its threshold flagged. Where an independent counter exists for what the
// antagonist reports it achieved (io_uring: the disks' diskstats; net: the interfaces' bytes;
// memcpy: the memory-bandwidth counters), the two are compared and the relative error given.
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/stats.h"

namespace codl::experiment {

struct ExperimentResults;
struct PairingSummary;

// One column of the matrix.
struct CrosstalkResource {
  std::string key;    // JSON/CSV name: "cpu_cores", "psi_cpu_some", "disk_bytes_per_s", ...
  std::string title;  // table heading: "cpu cores"
  std::string unit;   // "cores", "share", "bytes/s", "bytes"
  std::string prose;  // in sentences: "CPU", "PSI cpu some", "disk I/O", "memory held"
  // An off-target footprint at or above this is flagged (docs/results.md, "Cross-talk").
  double threshold = 0;
  bool gpu = false;  // from NVML: shown only where some window counted a GPU
};
// The columns, in table order: cpu_cores, psi_cpu_some, psi_io_some, psi_memory_some,
// disk_bytes_per_s, net_max_bytes_per_s (the larger of received and
// transmitted: loopback counts each byte both ways), mem_held_bytes, membw_bytes_per_s, and
// from NVML on GPU nodes gpu_util (the busiest GPU's share of time a kernel ran),
// gpu_mem_bytes, pcie_bytes_per_s and nvlink_bytes_per_s (tx + rx, every GPU).
const std::vector<CrosstalkResource>& CrosstalkResources();
// The keys of the columns that are `injector`'s own resource (empty for one the node has no
// counter for, e.g. llc, or an injector it does not know).
std::vector<std::string> OwnCrosstalkResources(const std::string& injector);

struct CrosstalkCell {
  // cpu_cores: the antagonist's own process tree (its CPU seconds over its run time); every
  // other column: the pairing's median less the idle baseline's (mem_held_bytes: the drop of
  // the lowest MemAvailable). NaN: the node did not count it (membw without counters).
  double value = kNaN;
  bool own = false;    // the antagonist's own resource
  bool large = false;  // off-target and at or over the column's threshold
};

// An antagonist's self-reported achieved rate beside an independent counter of the same bytes.
struct CounterCheck {
  std::string counter;           // "diskstats read+write", "/proc/net/dev max(rx, tx)", ...
  double reported = kNaN;        // the antagonist's mean achieved rate, bytes/s
  double counted = kNaN;         // the counter's rate over the window, less the idle baseline's
  double relative_error = kNaN;  // (counted - reported) / reported
  std::string note;              // why there is no figure ("" when there is)
};

struct CrosstalkRow {
  std::string pairing;  // "memcpy@0.5"
  std::string antagonist;
  std::string injector;
  std::string intensity;  // "0.5", "max", "2GiB/s"
  double achieved_rate = kNaN;
  std::string unit;
  // Windows with telemetry, those below target included: its footprint at what it achieved
  // (achieved_rate says how much that was).
  int n = 0;
  int n_below_target = 0;            // windows in which it missed its target (flagged trials)
  std::vector<CrosstalkCell> cells;  // one per CrosstalkResources(), in order
  bool has_check = false;
  CounterCheck check;
  // One sentence per flagged cell: "memcpy@0.5 (memcpy): CPU 0.52 cores (threshold 0.25
  // cores), besides memory bandwidth".
  std::vector<std::string> off_target;
};

struct CrosstalkMatrix {
  double window_s = kNaN;          // the idle window's median length
  int baseline_n = 0;              // idle windows with no antagonist
  std::vector<CrosstalkRow> rows;  // the single-antagonist pairings, in results order
  std::string membw_note;          // the node's memory-bandwidth source, or why it has none
  std::string gpu_note;            // the node's GPU source ("NVML, driver …") or why it has none
};

// The matrix of a crosstalk experiment's results (pairings of one antagonist each; pairings of
// several are left out: their footprint is not one antagonist's).
CrosstalkMatrix SummarizeCrosstalk(const ExperimentResults& results);

// Which columns of CrosstalkResources() a table shows: the GPU ones only where some row has a
// GPU figure (a CPU node's table stays narrow; JSON and CSV keep every column).
std::vector<bool> CrosstalkColumnsShown(const CrosstalkMatrix& m);
// "" where the GPU columns are shown; else the sentence the table and the report print in their
// place: "gpu: unavailable (libnvidia-ml.so.1 not found: …): the gpu util, gpu mem, pcie and
// nvlink columns are left out" (the agent's reason, or "gpu: no GPU figures (…)").
std::string CrosstalkGpuLeftOut(const CrosstalkMatrix& m);

// Renderings (crosstalk_format.cc): the table `codlctl crosstalk` and `results` print, JSON (the
// `crosstalk` object of `results -o json`), CSV (one row per antagonist × resource).
std::string FormatCrosstalkTable(const CrosstalkMatrix& m);
std::string FormatCrosstalkJson(const CrosstalkMatrix& m);
std::string FormatCrosstalkCsv(const CrosstalkMatrix& m);

// Confounds from node telemetry, for every experiment with a victim (confound.h's CPU share is
// the other): `p`'s footprint over the baseline's `base` that its antagonists should not have —
// disk I/O from a pairing with no storage antagonist (more than max(1 MB/s, a quarter of the
// baseline's)), PSI cpu some up by 0.10 or more with no cpu antagonist (unless a CPU-share
// confound already names it). Pairings with a workload antagonist are left out (a real job's
// footprint is its own). One sentence each.
std::vector<std::string> TelemetryConfounds(const PairingSummary& p, const PairingSummary& base);

}  // namespace codl::experiment
