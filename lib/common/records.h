// The results model: what one experiment and its trials leave behind. Plain structs shared by
// the store (SQLite), the statistics/reporting code, the controller and the CLI. gRPC messages
// are converted to and from these at the rpc edge only.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/common/result.h"

namespace codl {

// Experiment lifecycle. "interrupted" = the controller died while it ran; never silently lost.
enum class ExperimentState { kQueued, kRunning, kDone, kFailed, kCancelled, kInterrupted };
// Trial lifecycle. kFailed: the victim failed (exit != 0, timeout, no parsable progress): recorded,
// never counted as a measurement. kFlagged: measured, but an antagonist missed its target.
enum class TrialState { kPending, kRunning, kDone, kFailed, kFlagged, kCancelled };

const char* ToString(ExperimentState s);
const char* ToString(TrialState s);
bool ParseExperimentState(const std::string& s, ExperimentState* out);
bool ParseTrialState(const std::string& s, TrialState* out);
// Whether a trial in state `s` is one of the experiment's committed trials: done, flagged or
// failed (its last attempt). Running, pending and cancelled ones (cut off, run again by a
// resume) are not. Every trial count people read (status, results, watch, report, JSON) is this.
inline bool Committed(TrialState s) {
  return s == TrialState::kDone || s == TrialState::kFlagged || s == TrialState::kFailed;
}

// Why a trial attempt failed, as the retry policy reads it (docs/experiment-format.md, "retry").
// kVictim: the victim's own failure (it ran and exited non-zero, timed out, printed no
// progress); kVictimStart: the agent could not start it (its cache, HOME, placement) or refused
// the call; kAntagonistStart: an antagonist did not start or died before the victim ran;
// kAgentLost: an agent was unreachable or restarted mid-trial; kControllerRestart: the
// controller stopped while the trial ran (a resume runs it again); kCancelled: cut off by a
// cancel. kNone: the trial did not fail (or was stored before kinds were).
enum class FailureKind {
  kNone,
  kVictim,
  kVictimStart,
  kAntagonistStart,
  kAgentLost,
  kControllerRestart,
  kCancelled,
};
// "", "victim", "victim_start", "antagonist_start", "agent_lost", "controller_restart",
// "cancelled"
const char* ToString(FailureKind k);
// false for a name this build does not know (the parser lists the known ones).
bool ParseFailureKind(const std::string& s, FailureKind* out);
// How people read a failed trial's kind: "the victim failed" (kVictim, and kNone: a record older
// than kinds), "the victim could not start", "an antagonist did not start or died", "an agent
// was lost", "cut off by a controller restart", "cancelled".
const char* FailureDescription(FailureKind k);
// The retryable kinds' names, for messages: "victim, victim_start, …".
std::string FailureKindNames();
// The agent's reply error for a victim it could not start (agent/victim_runner.cc); the
// controller reads a failed reply with this prefix as kVictimStart.
inline constexpr std::string_view kVictimNotStarted = "victim could not start: ";

// Why a measured trial was flagged. kUnknown: a code this build does not know, or a record
// older than typed reasons, which kept only the text (RestoreFlagReasons).
enum class FlagCode {
  kUnknown,
  kMissedTarget,
  kDidNotSettle,
  kTooFewSamples,
  kMetricLooksWrong,
  kNeighbourEnded,  // a workload antagonist exited by itself before the victim (or solo run) ended
};
// "unknown", "missed_target", "did_not_settle", "too_few_samples", "metric_looks_wrong",
// "neighbour_ended"
const char* ToString(FlagCode c);
FlagCode ParseFlagCode(const std::string& s);  // kUnknown for anything else

struct FlagReason {
  FlagCode code = FlagCode::kUnknown;
  std::string detail;  // "membw reached 412 of target 1e+03 bytes/s"
  bool operator==(const FlagReason& o) const { return code == o.code && detail == o.detail; }
};
// The details joined by "; ": what TrialRecord::error says for a flagged trial.
std::string JoinFlagReasons(const std::vector<FlagReason>& reasons);

// One telemetry sample of an antagonist, t_s relative to the trial's start.
struct RateSample {
  double t_s = 0;
  double achieved = 0;
  double target = 0;
  int steps = 0;  // a workload antagonist's sample: the steps it covers (achieved: their mean)
};

// One antagonist's part in one trial.
struct AntagonistResult {
  std::string name;      // the antagonist's name in the experiment YAML
  std::string injector;  // e.g. "memcpy"
  std::string node;      // agent id it ran on
  double level = 0;      // fraction of peak requested (0 when an absolute rate was asked)
  double target_rate = 0;
  double achieved_rate = 0;  // mean achieved over the victim's run
  double achieved_cov = 0;   // coefficient of variation of the per-interval achieved rate
  double peak_rate = 0;      // calibrated peak used to turn the level into a rate
  std::string unit;          // "bytes/s", "IOPS", ...
  bool reached_target = true;
  double start_skew_s = 0;  // actual start minus the common start time (controller clock)
  std::vector<RateSample> samples;
  double cpu_s = 0;            // CPU seconds (user + system) of its process tree
  double run_s = 0;            // its run time, spawn to exit: cores used = cpu_s / run_s
  std::string effective_cpus;  // the CPUs it could run on, e.g. "0-3"
};

// One step of the victim as it reported it.
struct VictimStep {
  int64_t step = 0;
  double step_time_s = 0;
  std::map<std::string, double> phases;  // e.g. "read_s", "compute_s"; absent phases omitted
  double t_s = 0;                        // when the step ended, relative to the trial's start
  bool warmup = false;
};

// One rank of a victim run as several ranks (victim.distributed).
struct RankRecord {
  int rank = 0;
  std::string node;
  int exit_code = 0;
  double wall_s = 0;
  // Over its measured steps (RankSummaries, lib/analysis/rank_summary.h): the median step time
  // and the median busy time, step time minus comm_s (what the rank did itself, without
  // waiting for the others: the straggler has the largest). 0 without steps.
  double step_median_s = 0;
  double busy_median_s = 0;
  std::map<std::string, double> phase_medians;  // listed in the trial's phase_order
  std::vector<VictimStep> steps;  // ranks after 0, with series (rank 0's are the trial's steps)
};

// Node telemetry (docs/results.md, "Node telemetry"): what one node's agent counted over the
// victim's run window (its spawn to its exit, the window the antagonists' rates cover).
struct DiskTelemetry {
  std::string device;  // a whole disk from /proc/diskstats ("vda", "nvme0n1")
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
  int64_t reads = 0;  // completed I/Os
  int64_t writes = 0;
};
struct NicTelemetry {
  std::string interface;  // from /proc/net/dev, lo included
  int64_t rx_bytes = 0;
  int64_t tx_bytes = 0;
};
// One GPU of a node over the window, from NVML (agent/gpu_telemetry.h): utilization, clocks and
// memory sampled every 0.2 s; PCIe and NVLink bytes as counter differences. NaN or -1: the GPU
// or driver does not report it (`notes` says which).
struct GpuTelemetry {
  int index = 0;     // NVML device index (not CUDA_VISIBLE_DEVICES order)
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int samples = 0;   // samples taken over the window
  double util_mean = std::numeric_limits<double>::quiet_NaN();  // % of time a kernel ran, 0..100
  double util_max = std::numeric_limits<double>::quiet_NaN();
  double mem_util_mean = std::numeric_limits<double>::quiet_NaN();  // % of time memory was busy
  int64_t mem_used_max_bytes = -1;  // device memory in use, highest sample
  int64_t mem_total_bytes = -1;
  double pcie_tx_bytes = std::numeric_limits<double>::quiet_NaN();  // over the window
  double pcie_rx_bytes = std::numeric_limits<double>::quiet_NaN();
  double nvlink_tx_bytes = std::numeric_limits<double>::quiet_NaN();  // data, every link
  double nvlink_rx_bytes = std::numeric_limits<double>::quiet_NaN();
  double sm_clock_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double sm_clock_mean_mhz = std::numeric_limits<double>::quiet_NaN();
  double mem_clock_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double mem_clock_mean_mhz = std::numeric_limits<double>::quiet_NaN();
  // NVML clock event (throttle) reasons seen in any sample, OR'ed; -1: not read.
  // lib/common/gpu_clock_reasons.h names the bits.
  int64_t clock_reasons = -1;
  std::string notes;  // what this GPU could not report, "; "-joined
};

struct NodeTelemetry {
  std::string node;  // agent id
  double window_s = 0;
  // PSI (/proc/pressure): the share of the window (0..1) in which some / all non-idle tasks
  // were stalled on the resource; NaN where the node has no PSI (`notes` says why).
  double psi_cpu_some = std::numeric_limits<double>::quiet_NaN();
  double psi_cpu_full = std::numeric_limits<double>::quiet_NaN();
  double psi_io_some = std::numeric_limits<double>::quiet_NaN();
  double psi_io_full = std::numeric_limits<double>::quiet_NaN();
  double psi_memory_some = std::numeric_limits<double>::quiet_NaN();
  double psi_memory_full = std::numeric_limits<double>::quiet_NaN();
  std::vector<DiskTelemetry> disks;
  std::vector<NicTelemetry> nics;
  // /proc/meminfo, bytes; -1: not read. min: the lowest MemAvailable seen (start, end, and the
  // 0.2 s samples between).
  int64_t mem_available_start_bytes = -1;
  int64_t mem_available_end_bytes = -1;
  int64_t mem_available_min_bytes = -1;
  int64_t cached_start_bytes = -1;
  int64_t cached_end_bytes = -1;
  // DRAM bytes read + written over the window (resctrl MBM or uncore IMC counters); NaN when
  // the node has neither: membw_note then holds the reason, never a zero.
  double membw_bytes = std::numeric_limits<double>::quiet_NaN();
  std::string membw_note;  // the source ("resctrl mbm_total_bytes"), or why it is unavailable
  std::string notes;       // what else could not be read, "; "-joined ("" when all was)
  // The node's NVIDIA GPUs through NVML; none where gpu_note says why ("gpu: unavailable
  // (libnvidia-ml.so.1 not found: ...)"), never zeros. gpu_note "": an older agent.
  std::vector<GpuTelemetry> gpus;
  std::string gpu_note;  // the source ("NVML, driver 550.54.15"), or why there are no rows
};
// Sums over a node's disks and interfaces.
int64_t DiskReadBytes(const NodeTelemetry& t);
int64_t DiskWriteBytes(const NodeTelemetry& t);
int64_t NetRxBytes(const NodeTelemetry& t);
int64_t NetTxBytes(const NodeTelemetry& t);

struct TrialRecord {
  std::string experiment_id;
  int index = 0;  // position in the executed order (0-based)
  // Which attempt at this planned trial this record is (1 = the first); earlier attempts that
  // failed for a retryable reason are kept as AttemptRecords, never counted.
  int attempt = 1;
  FailureKind failure = FailureKind::kNone;  // kFailed / kCancelled: why (the retry policy's view)
  // Why each earlier attempt did not count, oldest first (read from the store's attempts; not
  // written by SaveTrial: Store::SaveAttempt keeps them). Empty for a first attempt.
  std::vector<FailureKind> earlier_failures;
  int repetition = 0;
  bool baseline = false;
  // A workload antagonist's solo run (role neighbour, pairing "job2@solo"): no victim ran, and
  // its one antagonist result is the workload's figure alone. Never a victim measurement.
  bool solo = false;
  std::string pairing;  // canonical key: "baseline" or "membw@0.5+storage@1"
  TrialState state = TrialState::kPending;
  std::string error;                     // why it failed; flagged: JoinFlagReasons(flag_reasons)
  std::vector<FlagReason> flag_reasons;  // kFlagged: why, in the order found
  int exit_code = 0;
  std::string stderr_tail;
  std::string victim_node;
  // The trial's value, seconds: its median step time (jsonl/regex) or its wall time. What
  // stands for the trial is the spec's TrialMetric (victim.metric) computed from it and the
  // steps (lib/analysis/trial_metric.h); the progress field names what the victim printed.
  double value_s = 0;
  double wall_s = 0;                            // victim wall time
  std::map<std::string, double> phase_medians;  // median per-phase time over measured steps
  // phase_medians' names in the order the victim first reported them (the map sorts them by
  // name); empty when unknown (older records): name order. lib/analysis/phase_order.h.
  std::vector<std::string> phase_order;
  int64_t started_unix_ms = 0;
  int64_t finished_unix_ms = 0;
  std::vector<VictimStep> steps;
  std::vector<AntagonistResult> antagonists;
  double victim_cpu_s = 0;            // CPU seconds of the victim's tree: cores = / wall_s
  std::string victim_effective_cpus;  // the CPUs the victim could run on, e.g. "0-3"
  // Several ranks (victim.distributed): every rank, rank 0 first; the fields above are rank
  // 0's (its elapsed is the job's: a synchronous job's rank 0 waits for the slowest). Empty
  // for a single instance.
  std::vector<RankRecord> ranks;
  // victim.trace: the profiler trace rank 0's victim wrote (zlib) and its uncompressed size,
  // carried from the agent's reply to Store::PutTrialTrace (not a column of the trial's row:
  // GetTrials leaves these empty), or why the trial has none.
  std::string trace_zlib;
  int64_t trace_raw_bytes = 0;
  std::string trace_error;
  // victim.cache with paths: the bytes under them and those resident in the page cache as the
  // victim started (after cold / warm); -1: not measured.
  int64_t cache_total_bytes = -1;
  int64_t cache_resident_bytes = -1;
  // Node telemetry over the victim's window: the victim's node first (rank 0's), then the other
  // ranks' nodes. Empty when not measured (an older agent, or a trial whose victim did not run).
  std::vector<NodeTelemetry> node_telemetry;
};

// An attempt at a planned trial that did not count: it failed (or was cut off) and the trial
// ran again (the retry policy, a resume, `codlctl resume --retry-failed`). The trial's record
// holds the counted, last attempt.
struct AttemptRecord {
  int index = 0;
  int attempt = 1;
  TrialState state = TrialState::kFailed;
  FailureKind failure = FailureKind::kNone;
  std::string error;
  std::string victim_node;
  int64_t started_unix_ms = 0;
  int64_t finished_unix_ms = 0;
};
// Trial `t` as an attempt that did not count, failed for `why`.
AttemptRecord AttemptOf(const TrialRecord& t, FailureKind why);

// A flagged record written before typed reasons has only its `error` text: it becomes one
// kUnknown reason, so that readers can rely on flag_reasons. Other records are left as they are.
void RestoreFlagReasons(TrialRecord* t);

// Why a failed trial failed, as people should read it: its error and the last non-empty line of
// the victim's stderr, escaped for a terminal and capped ("victim exited with status 1:
// ModuleNotFoundError: No module named 'torch'"). The error alone when stderr is empty or ends
// in the same words.
std::string FailureWithStderr(const std::string& error, const std::string& stderr_tail);
// A hint for the common causes a victim's stderr shows (a module, command or file not found,
// permission denied), pointing at the victim user and its environment; "" otherwise.
std::string FailureHint(const std::string& stderr_tail);

// Cores a child used on average: CPU seconds over wall seconds (0 when no time passed).
inline double CoresUsed(double cpu_s, double wall_s) { return wall_s > 0 ? cpu_s / wall_s : 0; }

struct ExperimentRecord {
  std::string id;
  std::string name;
  std::string source_path;  // the YAML file as submitted (for messages)
  std::string yaml;         // the YAML text, kept verbatim for reproducibility
  ExperimentState state = ExperimentState::kQueued;
  std::string error;
  // A failed run's kind of failure, so that codlctl's exit status (3: an agent was unreachable)
  // does not depend on `error`'s text; kOk when it did not fail or was stored without one.
  StatusCode error_code = StatusCode::kOk;
  uint64_t seed = 0;
  int total_trials = 0;
  int64_t created_unix_ms = 0;
  int64_t finished_unix_ms = 0;
  // Versions, node snapshots, warm-up runs, per-trial load: a JSON object written by the
  // controller as the experiment runs (docs/results.md, "provenance").
  std::string provenance_json = "{}";
  // Adaptive repetitions: why the controller stopped running blocks (docs/validity.md,
  // "Adaptive repetitions"); "" for a fixed `repetitions: N` or an older record.
  std::string stop_reason;
  // Who submitted it, as the controller identified the caller ("user-submit/alice",
  // "admin/root", "admin" for an unnamed admin); "" when unknown (stored before submitters
  // were recorded): only an admin may then cancel or resume it (docs/security.md).
  std::string submitter;
  // The process that runs or queued it (ProcessToken, as the store records it; read only): a
  // `running` experiment whose owner is gone was interrupted. '' when unknown.
  std::string owner;
};

// The name in a submitter ("alice" of "user-submit/alice"); "" for an unnamed one ("admin").
std::string_view SubmitterName(std::string_view submitter);
// Whether two submitters are the same caller: the same name when both have one (alice's
// user-submit token and her admin certificate), else the same text. "" matches nothing.
bool SameSubmitter(std::string_view a, std::string_view b);

// A cached calibration: the peak one injector with one option set reached alone on one node.
struct CalibrationRecord {
  std::string node;
  std::string injector;
  std::string options_key;  // canonical "k=v,k=v" of the options that affect the peak
  double peak_rate = 0;
  std::string unit;
  double duration_s = 0;
  int64_t measured_unix_ms = 0;
  std::string node_fingerprint;  // of the node snapshot it was measured under ("" unknown)
};

}  // namespace codl
