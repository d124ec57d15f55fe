// Results: per-pairing slowdown summaries of one experiment's trials, and their table / CSV /
// JSON renderings (`codlctl results ID -o table|csv|json`). Field and column names are a public
// interface, documented in docs/results.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/analysis/attribution.h"
#include "lib/analysis/crosstalk.h"
#include "lib/analysis/interaction.h"
#include "lib/analysis/neighbours.h"
#include "lib/analysis/pressure.h"
#include "lib/analysis/rank_summary.h"
#include "lib/analysis/stats.h"
#include "lib/analysis/tidy.h"
#include "lib/analysis/tolerance.h"
#include "lib/analysis/trial_metric.h"
#include "lib/common/records.h"

namespace codl::experiment {

// One antagonist of one pairing, over that pairing's measured trials (all of its per-node
// AntagonistResults; when none were measured, over the flagged ones).
struct AntagonistSummary {
  std::string name;
  std::string injector;
  std::string intensity;        // as in the pairing key: "0.5" (level) or "2GiB/s" (rate)
  double level = 0;             // requested fraction of peak; 0 for an absolute rate
  double target_rate = kNaN;    // mean requested rate, `unit`
  double achieved_rate = kNaN;  // mean of AntagonistResult::achieved_rate
  double achieved_cov = kNaN;   // mean of AntagonistResult::achieved_cov
  std::string unit;             // "bytes/s", "IOPS", ...
  int n_missed_target = 0;      // results with reached_target == false (all trials)
  bool max = false;     // intensity `max`: open loop, no target; achieved_rate is its outcome
  double cores = kNaN;  // mean CPU cores used (cpu_s / run_s), where the agent measured it
  std::string cpus;     // CPUs it could run on ("0-3"; "0-3 | 4-7" when trials differed)
};

struct PhaseSlowdown {
  std::string phase;       // as the victim reports it, e.g. "read_s"
  double median_s = kNaN;  // median over measured trials of the trial's phase median
  // median_s / the baseline's median_s; NaN when the phase's median is near zero at baseline
  // (below kNearZeroShare of its median step: `added_s` is the figure then, never a ratio)
  double slowdown = kNaN;
  // Additive attribution (lib/analysis/attribution.h): per-step means, medians over trials.
  bool on_path = true;   // false: an overlapped stage (read_s, decode_s)
  std::string feeds;     // the on-path phase an overlapped stage feeds, "data_wait_s"
  double mean_s = kNaN;  // median over measured trials of the trial's mean per step
  double baseline_mean_s = kNaN;
  // baseline_mean_s < kNearZeroShare x the baseline's mean step (without per-step series: the
  // same judgement on the medians)
  bool near_zero = false;
  double mean_slowdown = kNaN;  // mean_s / baseline_mean_s; NaN when near_zero
  double added_s = kNaN;        // mean_s - baseline_mean_s: seconds this phase adds per step
  double added_ci_low = kNaN;   // its bootstrap CI (NaN below 3 trials a side)
  double added_ci_high = kNaN;
  bool significant = false;  // the CI excludes 0
};

// A pairing's added step time and how much of it its on-path phases account for (per-step
// means, medians over trials; lib/analysis/attribution.h). All NaN without per-step series.
struct StepAttribution {
  double step_s = kNaN;           // median over measured trials of the mean step time
  double baseline_step_s = kNaN;  // the baseline's
  double added_s = kNaN;          // step_s - baseline_step_s
  double ci_low = kNaN;           // bootstrap CI of added_s (NaN below 3 trials a side)
  double ci_high = kNaN;
  double explained_s = kNaN;    // sum of the on-path phases' added_s
  double unexplained_s = kNaN;  // added_s - explained_s: untimed work, or medians not adding up
};

// The victim node's telemetry over a pairing's measured trials (docs/results.md, "Node
// telemetry"): the median over trials of each per-trial figure; rates are bytes over the
// telemetry window. NaN where no trial has it.
// One GPU of the victim's node over a pairing's measured trials: medians over the trials that
// have it (rates: bytes over the telemetry window); clock_reasons OR'ed over them (-1: never
// read). NaN where no trial has the figure.
struct GpuTelemetrySummary {
  int index = 0;  // NVML device index
  std::string name;
  int n = 0;  // trials with this GPU
  double util_mean = kNaN;
  double util_max = kNaN;
  double mem_used_max_bytes = kNaN;
  double pcie_tx_bytes_per_s = kNaN;
  double pcie_rx_bytes_per_s = kNaN;
  double nvlink_tx_bytes_per_s = kNaN;
  double nvlink_rx_bytes_per_s = kNaN;
  double sm_clock_min_mhz = kNaN;
  double sm_clock_mean_mhz = kNaN;
  double mem_clock_min_mhz = kNaN;
  double mem_clock_mean_mhz = kNaN;
  int64_t clock_reasons = -1;
};

struct TelemetrySummary {
  int n = 0;  // measured trials with telemetry
  double psi_cpu_some = kNaN;
  double psi_io_some = kNaN;
  double psi_memory_some = kNaN;
  double disk_read_bytes_per_s = kNaN;
  double disk_write_bytes_per_s = kNaN;
  double net_bytes_per_s = kNaN;     // received + transmitted, every interface (lo too)
  double net_rx_bytes_per_s = kNaN;  // received alone (on lo, each byte is counted both ways)
  double net_tx_bytes_per_s = kNaN;  // transmitted alone
  double mem_available_min_bytes = kNaN;
  double membw_bytes_per_s = kNaN;
  std::string membw_note;                 // the first trial's: the source, or why it is unavailable
  std::vector<GpuTelemetrySummary> gpus;  // by NVML index; none where gpu_note says why
  std::string gpu_note;                   // the first trial's that has one
};
TelemetrySummary SummarizeTelemetry(const std::vector<const TrialRecord*>& measured);

struct PairingSummary {
  std::string pairing;  // canonical key: "baseline", "membw@0.5+storage@1"
  bool baseline = false;
  std::vector<AntagonistSummary> antagonists;  // sorted by name; empty for the baseline
  int n = 0;                      // measured trials: state done (the figures below use only these)
  int n_flagged = 0;              // measured, but an antagonist missed its target: excluded
  int n_failed = 0;               // the victim failed: excluded
  int n_not_run = 0;              // pending, running or cancelled
  double median_metric_s = kNaN;  // metric_median when the metric is a time (seconds), else NaN
  double metric_median = kNaN;    // median over measured trials of the per-trial metric, its unit
  double cov = kNaN;              // coefficient of variation of the metric
  double slowdown = kNaN;         // metric_median vs the baseline's (1 for the baseline); for
                                  // throughput baseline / measured, so > 1 is always slower
  double ci_low = kNaN;           // bootstrap 95% CI of the slowdown (NaN for the baseline)
  double ci_high = kNaN;
  // Selection made visible: the same figures over every trial whose victim ran (measured and
  // flagged), beside the held-target ones above.
  int n_all = 0;            // n + n_flagged
  double flag_rate = kNaN;  // n_flagged / n_all
  double slowdown_all = kNaN;
  double ci_all_low = kNaN;
  double ci_all_high = kNaN;
  double p_value = kNaN;  // two-sided Mann-Whitney U vs the baseline trials
  // The smallest p the exact test can give for these sample sizes (2 / C(n + n_base, n)): above
  // alpha, no outcome could have been significant.
  double p_min = kNaN;
  // p adjusted across the experiment's pairings: Holm (family-wise error) and
  // Benjamini-Hochberg (false discovery rate). Significance marks use p_holm.
  double p_holm = kNaN;
  double q_bh = kNaN;
  // Minimal detectable effect: the smallest slowdown these n trials against the baselines could
  // detect (alpha 0.05, power 80 %, the baseline's robust spread; lib/analysis/adaptive.h). NaN
  // when no outcome could be significant (p_min > 0.05) or a side has fewer than 2 trials.
  double mde = kNaN;
  // With fewer than 3 trials on either side a bootstrap interval is (nearly) a point: it is not
  // reported (ci_low/ci_high NaN) and the table says "n/a (n < 3)".
  bool ci_small_n = false;
  bool ci_exact = false;  // the interval enumerated every resample (small n)
  MannWhitneyMethod p_method = MannWhitneyMethod::kNone;
  std::vector<PhaseSlowdown> phases;   // in OrderPhases order (phase_order.h)
  StepAttribution attribution;         // the baseline's: its step_s only
  double victim_cores = kNaN;          // mean CPU cores the victim's tree used (measured trials)
  std::string victim_cpus;             // CPUs the victim could run on (as AntagonistSummary::cpus)
  std::vector<std::string> confounds;  // CpuConfounds (confound.h): what else an antagonist used
  // victim.cache with paths: median over measured trials of the bytes under them, and of the
  // share resident in the page cache as the victim started (NaN: not measured).
  double cache_total_bytes = kNaN;
  double cache_resident_fraction = kNaN;
  RankSpread ranks;  // a victim with several ranks: per-rank medians, spread, slowest rank
  // Workload antagonists of the pairing (real jobs as the neighbour): their own slowdown
  // beside the victim against their solo runs, and the pair's combined throughput.
  std::vector<NeighbourSummary> neighbours;
  TelemetrySummary telemetry;  // the victim node's, over its measured trials
  // The same over every trial whose victim ran, flagged ones too: a crosstalk footprint is the
  // antagonist's at what it achieved, held target or not (crosstalk.h).
  TelemetrySummary telemetry_all;
};

// A trial whose victim failed, for the "failed trials" section: why, with its stderr's last line.
struct FailedTrial {
  int index = 0;  // 0-based, as TrialRecord::index
  std::string pairing;
  std::string reason;  // FailureWithStderr(error, stderr_tail)
  std::string hint;    // FailureHint(stderr_tail); "" when none applies
};

struct ExperimentResults;
// "" for a done experiment; else the line that opens every view of its results, e.g.
// "partial results: experiment interrupted (controller stopped while the experiment ran) after
// 7 of 20 planned trials; continue it with `codlctl resume ID`".
std::string UnfinishedLine(const ExperimentResults& r);
// "" when no trial ran more than once; else e.g. "retried: 2 of 30 trials ran more than once
// (attempts dropped: 1 antagonist_start, 1 controller_restart); each counts its last attempt
// only".
std::string RetriedLine(const ExperimentResults& r);

struct ExperimentResults {
  // The experiment's YAML as Summarize read it (null when it does not parse).
  std::shared_ptr<const ExperimentSpec> spec;
  std::string experiment_id;
  std::string name;
  uint64_t seed = 0;
  int bootstrap_resamples = 0;
  double confidence = 0.95;
  std::string metric = "elapsed";  // TrialMetric::Name() of the per-trial metric the figures use
  std::string metric_unit = "s";
  double noisy_cov_threshold = 0.10;
  double baseline_cov = kNaN;
  bool noisy_baseline = false;           // baseline_cov > noisy_cov_threshold
  std::vector<PairingSummary> pairings;  // the baseline first, then in plan (trial index) order
  // Every combination of 2+ antagonists against its singles, in pairing order (interaction.h).
  std::vector<InteractionSummary> interactions;
  // Reproducibility (docs/validity.md, "Provenance"): the YAML as submitted, start/end times,
  // and the controller's provenance JSON object (versions, nodes, warm-ups, per-trial load).
  std::string yaml;
  int64_t created_unix_ms = 0;
  int64_t finished_unix_ms = 0;
  std::string provenance_json = "{}";
  std::string stop_reason;  // adaptive repetitions: why the runs stopped ("" for fixed ones)
  std::string submitter;    // who submitted it (ExperimentRecord::submitter); "" unknown
  // Whether these are all the figures the plan asked for: the experiment's state ("done",
  // "running", "interrupted", ...) and error, its planned trials, the trials committed (done,
  // flagged or failed), and how often it was resumed (`codlctl resume`).
  std::string state = "done";
  std::string state_error;
  int trials_planned = 0;
  int trials_committed = 0;
  int resumptions = 0;
  // Committed trials whose counted attempt is not their first (the retry policy, a resume,
  // `--retry-failed`), and why the attempts that did not count failed: kind -> attempts.
  int trials_retried = 0;
  std::map<std::string, int> retried_for;
  // "simulated (gpusim)" when any node's GPUs were gpusim's CPU stand-in (its provenance's
  // gpu_device label): the GPU figures are the stand-in's model. "" on hardware or no GPU.
  std::string gpu_device;
  std::vector<FailedTrial> failed_trials;  // in index order
  // Trials flagged because their per-step values cannot be step times (MetricLooksWrong), and
  // the first one's detail: a wrong progress field or pattern, said once for the experiment.
  int n_metric_looks_wrong = 0;
  std::string metric_looks_wrong;
  // `tolerance:` searches, one per antagonist that has one (lib/analysis/tolerance.h).
  std::vector<ToleranceResult> tolerance;
  // The pressure each workload (the victim, each workload antagonist) puts on each injector
  // antagonist at full tilt (lib/analysis/pressure.h): the victim's rows first.
  std::vector<PressureSummary> pressure;
  // A crosstalk experiment (`crosstalk:` in its YAML: antagonists alone, no victim): the matrix
  // of their footprints (crosstalk.h); `crosstalk` false otherwise.
  bool crosstalk = false;
  CrosstalkMatrix crosstalk_matrix;
};

// Summarizes every pairing seen in `trials` (in any order). A trial is the baseline when
// TrialRecord::baseline is set or its pairing is "baseline". Bootstrap resamples are seeded from
// ExperimentRecord::seed mixed with the pairing key, so results are reproducible.
struct SummarizeOptions {
  TrialMetric metric;  // default: elapsed
  double noisy_cov_threshold = 0.10;
  // The experiment's YAML parsed once (ReadStoredExperiment); null: Summarize parses it.
  std::shared_ptr<const ExperimentSpec> spec;
};

// A stored experiment's YAML read once: parsed, or why it no longer parses (an older or newer
// format, a results file written by something else). Every reader of a stored experiment
// (results, report, profile, predict, repetitions) starts from one beside its record.
struct StoredExperiment {
  std::shared_ptr<const ExperimentSpec> spec;  // null when the YAML does not parse
  std::string parse_error;                     // why, when it does not
  // victim.metric, or elapsed when the YAML does not parse.
  TrialMetric metric() const { return spec ? spec->victim.metric : TrialMetric{}; }
  // Summarize's options: this experiment's metric (or `metric` when it names one) and spec.
  SummarizeOptions Options(const TrialMetric* metric = nullptr) const;
};
StoredExperiment ReadStoredExperiment(const ExperimentRecord& record);
ExperimentResults Summarize(const ExperimentRecord& experiment,
                            const std::vector<TrialRecord>& trials,
                            const SummarizeOptions& options);
ExperimentResults Summarize(const ExperimentRecord& experiment,
                            const std::vector<TrialRecord>& trials,
                            double noisy_cov_threshold = 0.10);

// Why an experiment that ran to its end measured nothing it set out to, or "" when it did: no
// trial was measured (every one failed, was flagged or did not run), or it has interfered
// pairings and none got a slowdown, held-target or over all trials (e.g. no measured
// baseline). codlctl then exits 1.
std::string NothingMeasured(const ExperimentResults& results);

// A pairing key's antagonists and their intensity labels: "membw@0.5+storage@2GiB/s" ->
// {membw: "0.5", storage: "2GiB/s"}; empty for "baseline".
std::map<std::string, std::string> PairingIntensities(const std::string& key);

// Aligned, for terminals: the narrow default (pairing, n, metric, slowdown [CI], p, flagged,
// achieved; prose wrapped at 120 columns) or, `wide` (`-o wide`), every column unwrapped.
std::string FormatTable(const ExperimentResults& results, bool wide = false);
// "level" | "rate" | "max": how an antagonist's intensity was given (the summary CSV's
// intensity_kind; "workload" is reserved for a real job as the neighbour).
std::string IntensityKind(const AntagonistSummary& a);
// One row per pairing x phase (`codlctl results --phases-summary`): the phase's median over
// measured trials, the baseline's, and their ratio. docs/results.md.
TidyTable PhaseSummaryTable(const ExperimentResults& results);
std::string FormatCsv(const ExperimentResults& results);   // one row per pairing x antagonist
std::string FormatJson(const ExperimentResults& results);  // every field; NaN -> null
// `codlctl results -o interactions-csv`: one row per combination (interaction_format.cc).
std::string FormatInteractionsCsv(const ExperimentResults& results);

}  // namespace codl::experiment
