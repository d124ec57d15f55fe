// ExperimentSpec: an experiment YAML file, parsed and validated. Field names follow
// docs/experiment-format.md (the public interface). Every error names FILE:LINE:COL.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lib/common/records.h"
#include "lib/common/result.h"
#include "lib/common/tunables.h"
#include "lib/spec/trial_metric.h"

namespace codl::experiment {

// Which agents something runs on. YAML: `all`, `{labels: {k: v}}`, `{hosts: [a, b]}`,
// `{count: N}`, or a plain list of hostnames. Default: all.
struct NodeSelector {
  enum class Kind { kAll, kLabels, kHosts, kCount };
  Kind kind = Kind::kAll;
  std::map<std::string, std::string> labels;
  std::vector<std::string> hosts;
  int count = 0;
  bool specified = false;  // false: the key was absent (antagonists then share the victim's node)
};

struct ProgressSpec {
  enum class Format { kJsonl, kRegex, kWall };
  Format format = Format::kJsonl;
  std::string field = "step_time_s";  // jsonl: the per-step metric, seconds
  std::string pattern;                // regex: first capture group is the metric (a number)
};

// Where a victim or an antagonist instance may run on its node. YAML: `cpus: "0-3,6"` (a CPU
// list, or a single CPU number) and `numa: N` (a node id). The syntax is checked here; whether
// the node has those CPUs is checked by the agent, whose error quotes `where`.
struct PlacementSpec {
  std::string cpus;   // canonical CPU list ("0-3,6"); empty: any
  int numa = -1;      // NUMA node id; -1: any
  std::string where;  // "exp.yaml:12:5: victim" (the mapping holding cpus/numa), for errors
  bool empty() const { return cpus.empty() && numa < 0; }
};

struct ExperimentSpec;

// victim.trace.steps at most: a profiler trace of more steps is too large to keep per trial.
inline constexpr int kMaxTraceSteps = 100;

// victim.cache: what the page cache holds of the victim's data when each trial starts. cold:
// the agent evicts the files under `paths` before every trial (baselines too); warm: it reads
// them in; as-is (default): neither. With paths the agent records the bytes resident at the
// victim's start either way (agent/page_cache.h).
struct CacheSpec {
  std::string mode = "as-is";      // cold | warm | as-is
  std::vector<std::string> paths;  // absolute directories or files
};

struct VictimSpec {
  std::vector<std::string> command;  // argv; argv[0] looked up beside the agent binary, then PATH
  std::map<std::string, std::string> env;
  std::string workdir;  // empty: the agent's working directory
  ProgressSpec progress;
  int warmup_steps = 0;
  double timeout_s = 600;  // victim.timeout
  TrialMetric metric;      // victim.metric: elapsed (the default), throughput, mean, median, pNN
  NodeSelector nodes;
  PlacementSpec placement;  // victim.cpus, victim.numa
  // victim.distributed: one instance per selected node (at least 2), ranks in node order, with
  // torch.distributed's RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set (DistributedEnvironment).
  // false: one instance, on the first selected node.
  bool distributed = false;
  int master_port = 29500;  // victim.master_port: rank 0 listens here (distributed only)
  // victim.trace: {steps: K}: a PyTorch profiler trace of K measured steps, taken by
  // `python3 -m codl.run` (CODL_TRACE_STEPS / CODL_TRACE_FILE) in the first baseline trial and
  // the first trial of every pairing, kept with the trial (`codlctl trace`). 0: none.
  int trace_steps = 0;
  CacheSpec cache;  // victim.cache
};

// The environment the controller gives rank `rank` of a distributed victim: RANK, WORLD_SIZE,
// LOCAL_RANK (0: one instance per node), MASTER_ADDR, MASTER_PORT, CODL_VICTIM_RANK,
// CODL_VICTIM_WORLD_SIZE. The parser refuses these names in victim.env of a distributed victim.
std::map<std::string, std::string> DistributedEnvironment(int rank, int world_size,
                                                          const std::string& master_addr,
                                                          int master_port);
bool IsDistributedVariable(const std::string& name);

// What `codlctl validate --plan` says about where the victim runs: "victim: one instance on the
// first node of hosts: [a, b]" or "victim: distributed, one rank per node of count: 2 (ranks in
// agent-id order), master port 29500".
std::string DescribeNodeSelector(const NodeSelector& sel);
std::string VictimPlacementLine(const ExperimentSpec& spec);

// One intensity of one antagonist: a level (fraction of the calibrated peak), an absolute rate, or
// `max` (as hard as it can, open loop: no target, so never flagged; its achieved rate is recorded).
struct Intensity {
  double level = 0;  // used when !absolute; in (0, 1]; 1 for max (the agent's max_level policy)
  double rate = 0;   // base units (bytes/s, ops/s) when absolute
  bool absolute = false;
  bool max = false;   // levels: [max]
  std::string label;  // as written: "0.5", "2GiB/s"
};

// antagonists[].workload: a real command as the neighbour instead of an injector (docs/
// experiment-format.md, "Workload antagonists"). It starts before the victim, counts as settled
// once it has reported warmup_steps steps, and its own figure is read from the steps it reports
// inside the victim's run (or inside a solo run as long as a baseline victim run).
struct WorkloadSpec {
  std::vector<std::string> command;  // argv; argv[0] looked up beside the agent, then on PATH
  std::map<std::string, std::string> env;
  std::string workdir;
  ProgressSpec progress;  // jsonl or regex: a workload must report steps
  // elapsed (= mean): seconds per step over the window; throughput: steps per second.
  TrialMetric metric;  // elapsed (the default), mean or throughput
  int warmup_steps = 0;
  double settle_timeout_s = 120;  // workload.settle: how long its warmup steps may take
  bool throughput() const { return metric.kind == TrialMetric::Kind::kThroughput; }
};

// The injector name a workload antagonist carries in records and the agent's protocol.
inline constexpr const char* kWorkloadInjector = "workload";
// Its one intensity (levels do not apply): its pairing key reads "job2@run", its solo trials'
// "job2@solo".
inline constexpr const char* kWorkloadRunLabel = "run";
inline constexpr const char* kWorkloadSoloLabel = "solo";

// `tolerance: {slowdown: 1.10, resolution: 0.05, max_trials: 30}` (on an antagonist, or
// top-level for every injector antagonist): after the listed trials, CoDL bisects over the
// level in [0, 1] for the highest level whose slowdown's CI upper bound stays <= slowdown and
// the lowest whose CI lower bound exceeds it (docs/experiment-format.md, "Tolerance search").
struct ToleranceSpec {
  bool enabled = false;
  double slowdown = 1.10;    // the threshold, > 1
  double resolution = 0.05;  // stop when the two levels are this close, in (0, 1)
  int max_trials = 30;       // trials the search may add for this antagonist, baselines included
  std::string where;         // "exp.yaml:12:5: tolerance", for messages
};

struct AntagonistSpec {
  std::string name;
  std::string injector;                        // kWorkloadInjector for a workload
  std::map<std::string, std::string> options;  // raw strings; validated against the injector
  std::vector<Intensity> intensities;          // YAML: levels: [...] and/or rates: [...]
  NodeSelector nodes;                          // default: the victim's nodes
  PlacementSpec placement;                     // cpus, numa: per instance on its node
  std::optional<WorkloadSpec> workload;        // set: a real command, not an injector
  ToleranceSpec tolerance;                     // its own, or the top-level one
};

enum class Pairings { kSingles, kPairs, kAll, kExplicit };

// `repetitions: {min: 5, max: 40, ci_halfwidth: 2%}`: whole blocks (every pairing and the
// baselines once) until every pairing's relative CI half-width is at most ci_halfwidth, or max
// blocks ran (docs/experiment-format.md, "repetitions"). A plain integer leaves it disabled.
struct AdaptiveRepetitions {
  bool enabled = false;
  int min = 0;              // blocks always run before the first check
  int max = 0;              // blocks at most (ExperimentSpec::repetitions is set to this)
  double ci_halfwidth = 0;  // target: (ci_high - ci_low) / 2 / slowdown, as a fraction (0.02)
};

// `retry: {attempts: 2, on: [antagonist_start, agent_lost, controller_restart, victim_start]}`
// (docs/experiment-format.md, "retry"): a trial whose attempt failed for a kind in `on` runs
// again, up to `attempts` attempts in all; only the last one counts. The default retries
// infrastructure failures once and never a victim's own failure or a flagged trial.
struct RetryPolicy {
  int attempts = 2;  // 1: never run again
  std::set<FailureKind> on = {FailureKind::kVictimStart, FailureKind::kAntagonistStart,
                              FailureKind::kAgentLost, FailureKind::kControllerRestart};
  // Whether attempt number `attempt` (1-based), failed for `kind`, gets another.
  bool Retries(FailureKind kind, int attempt) const {
    return attempt < attempts && on.count(kind) > 0;
  }
  static constexpr int kMaxAttempts = 10;
};

struct ExperimentSpec {
  std::string name;
  std::string source_path;
  NodeSelector nodes;  // default placement for victim and antagonists
  VictimSpec victim;
  std::vector<AntagonistSpec> antagonists;
  Pairings pairings = Pairings::kSingles;
  std::vector<std::vector<std::string>> explicit_pairings;  // antagonist names per combination
  int repetitions = 5;  // blocks in the plan; adaptive: the most that may run (adaptive.max)
  AdaptiveRepetitions adaptive;
  bool randomize = true;     // order.randomize
  uint64_t seed = 42;        // order.seed (the parser draws one at random when it is absent)
  double settle_s = 2;       // settle
  double cooldown_s = 0;     // cooldown
  double calibration_s = 2;  // calibration.duration
  double lease_s = tunables::kDefaultLeaseS;  // lease
  // agent_grace: how long a trial whose agent was lost waits for it to come back (then the
  // trial runs again) before the experiment stops as interrupted; 0: it stops at once.
  double agent_grace_s = 60;
  RetryPolicy retry;  // retry
  // Whether order.seed was written; else the seed was drawn (and is recorded as provenance).
  bool seed_explicit = false;
  // calibration.max_age: a cached calibration older than this is measured again.
  double calibration_max_age_s = 24 * 3600;
  int warmup_trials = 1;  // warmup_trials: whole victim runs before trial 1, never analysed
  // min_antagonist_samples: an interference trial whose victim window holds fewer samples of
  // an antagonist is flagged "too short to judge".
  int min_antagonist_samples = 5;
  // crosstalk (docs/experiment-format.md, "Cross-talk"): no victim; each antagonist runs alone
  // and its footprint on every resource is measured over an idle window of this many seconds
  // (the victim is `sleep` for that long). 0: an ordinary experiment.
  double crosstalk_window_s = 0;
};

// crosstalk: true's window, seconds, and the longest one allowed.
inline constexpr double kDefaultCrosstalkWindowS = 5;
inline constexpr double kMaxCrosstalkWindowS = 3600;

// Validates one injector option: returns "" when fine, else a message (no location; the parser
// adds FILE:LINE:COL of the offending value). Injected so that experiment/ does not depend on
// the injector registry.
using OptionValidator = std::function<std::string(
    const std::string& injector, const std::string& key, const std::string& value)>;
// Returns "" when the injector name is known, else a message listing the known ones.
using InjectorValidator = std::function<std::string(const std::string& injector)>;

struct ParseHooks {
  InjectorValidator injector;  // may be empty: any name accepted
  OptionValidator option;      // may be empty: any option accepted
};

// Parses and validates `yaml_text` (the contents of `source_path`). Errors look like
// "exp.yaml:12:5: antagonists[0].levels[1]: 1.5 is out of range (0, 1]".
Result<ExperimentSpec> ParseExperiment(std::string_view yaml_text, const std::string& source_path,
                                       const ParseHooks& hooks = {});
Result<ExperimentSpec> LoadExperimentFile(const std::string& path, const ParseHooks& hooks = {});

// One trial of the plan: which antagonists at which intensity (empty = baseline).
struct PlannedPart {
  int antagonist = 0;  // index into ExperimentSpec::antagonists
  Intensity intensity;
};

struct PlannedTrial {
  int index = 0;  // execution order
  int repetition = 0;
  bool baseline = false;
  // A workload antagonist alone (parts: it), no victim: its solo figure over as long as a
  // baseline victim run. Planned like baselines: one per workload per repetition block.
  bool solo = false;
  std::vector<PlannedPart> parts;
  std::string pairing;  // canonical key: "baseline" or "membw@0.5+storage@1" (names sorted)
};

// Expands pairings x intensities x repetitions, interleaves baselines throughout (one baseline
// per repetition block at least, spread across the order), and shuffles with the recorded seed
// when randomize is set. Deterministic for a given spec.
// Each block also holds one solo trial per workload antagonist, placed like a baseline.
std::vector<PlannedTrial> ExpandPlan(const ExperimentSpec& spec);
// The indexes of the workload antagonists, in file order.
std::vector<int> WorkloadAntagonists(const ExperimentSpec& spec);

// Rough wall-clock estimate for `codlctl validate --plan`: calibration + per-trial settle, the
// victim's expected run time (victim_estimate_s), and cooldown.
double EstimateDurationSeconds(const ExperimentSpec& spec, const std::vector<PlannedTrial>& plan,
                               double victim_estimate_s);

// Antagonists report one sample per this interval (codl-inject --json); a trial is judged on
// the samples that fall in its victim's run.
inline constexpr double kAntagonistSampleIntervalS = 0.2;

// For `codlctl validate --plan`: "" when a victim of about `victim_s` (or the victim timeout,
// if shorter) leaves every antagonist min_antagonist_samples samples, else why its trials will
// be flagged "too short to judge". measured: the estimate comes from a previous run.
std::string ShortVictimWarning(const ExperimentSpec& spec, double victim_s, bool measured);

// For `codlctl validate`: "" unless explicit pairings combine an antagonist that is never
// listed alone (its interaction cannot be computed), else which ones and why.
std::string MissingSinglesWarning(const ExperimentSpec& spec);

// The canonical pairing key for a set of parts.
std::string PairingKey(const ExperimentSpec& spec, const std::vector<PlannedPart>& parts);

// The interference combinations (pairings x intensities) in their fixed, unshuffled order: one
// entry per combination, its parts sorted by antagonist index. Repetitions not applied.
std::vector<std::vector<PlannedPart>> ExpandCombinations(const ExperimentSpec& spec);

// Baseline trials in each repetition block: max(1, ceil(combinations / 4)), so that baselines
// are about a fifth of the trials and every run of ~4 interference trials has a baseline nearby.
int BaselinesPerBlock(int combinations);

// Trials ExpandPlan would produce, computed without expanding (as a double: "all" over many
// antagonists overflows integers). The parser rejects plans over 100000 trials.
double CountPlannedTrials(const ExperimentSpec& spec);

}  // namespace codl::experiment
