// VictimRunner: runs a victim command as a supervised child, feeds its stdout to the progress
// parser, enforces victim.timeout, and returns the outcome. A failed victim is reported as a
// failed trial with its exit status and stderr tail — never as a measurement.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/node_telemetry.h"
#include "agent/page_cache.h"
#include "agent/progress_parser.h"
#include "lib/common/clock.h"
#include "lib/common/subprocess.h"
#include "lib/spec/spec.h"

namespace codl::agent {

struct VictimOutcome {
  ProgressParser::Outcome progress;
  int exit_code = 0;
  double wall_s = 0;
  bool timed_out = false;
  std::string stderr_tail;
  int64_t started_unix_ns = 0;
  double cpu_s = 0;            // CPU seconds of the victim's process tree
  std::string effective_cpus;  // the CPUs it could run on
  // spec.trace_steps > 0: the trace the victim wrote (zlib) and its size, or why there is none.
  std::string trace_zlib;
  int64_t trace_raw_bytes = 0;
  std::string trace_error;
  // victim.cache with paths: what the page cache held of them as the victim started.
  bool cache_measured = false;
  CacheReport cache;
  // Node telemetry from just before the victim's spawn to just after its exit (node_telemetry.h);
  // not measured when the victim did not start.
  bool telemetry_measured = false;
  NodeTelemetry telemetry;
};

// A victim's profiler trace kept at most this large, compressed (uncompressed: kMaxTraceRawBytes).
inline constexpr size_t kMaxTraceZlibBytes = 8u << 20;
inline constexpr size_t kMaxTraceRawBytes = 256u << 20;

class Placer;

// Where the codl Python package (python/codl) is for victims, "" if nowhere: the first of
// $CODL_PYTHON_DIR, <this binary's folder>/../share/codl/python (an install), and the folder
// named in <this binary's folder>/codl-python-path (a build tree: the checkout's python/) that
// holds codl/__init__.py. Victims get it first on their PYTHONPATH (docs/victim.md).
std::string CodlPythonDir();
// `dir` prepended to a victim's PYTHONPATH: victim.env's, else `inherited` when set, else the
// agent's own.
std::string VictimPythonPath(const std::string& dir,
                             const std::map<std::string, std::string>& victim_env,
                             std::optional<std::string> inherited = std::nullopt);

// Who a victim runs as, and in what environment (docs/security.md, "Victim isolation").
struct VictimIdentity {
  std::optional<RunAs> run_as;  // nullopt: the agent's own user
  // true: the victim's environment is CleanVictimEnvironment's list plus its experiment's
  // `env`, nothing inherited from the agent; false: the agent's environment (less secrets)
  // plus `env`.
  bool clean_env = false;
  std::vector<std::string> env_keep;  // clean_env: names passed on from the agent's environment
  std::string home_root;              // clean_env: each trial's HOME is made under it
  // victim.cache.paths must resolve inside one of these (the scratch roots and cache_roots).
  std::vector<std::string> cache_roots;
  CacheLimits cache_limits;  // cache_max_bytes, cache_max_time
};

// The base of a victim's clean environment: PATH and LANG (the agent's values, else
// /usr/local/bin:/usr/bin:/bin and C.UTF-8), HOME and TMPDIR (= `home`), and the `keep` names
// the agent's environment has. The victim's own env, the torch.distributed and CoDL variables
// are added over it.
std::map<std::string, std::string> CleanVictimEnvironment(const std::vector<std::string>& keep,
                                                          const std::string& home);

class VictimRunner {
 public:
  // placer: applies victim.cpus / victim.numa (null: placement requests fail the run).
  VictimRunner(const Clock* clock, const Placer* placer = nullptr, VictimIdentity identity = {})
      : clock_(clock), placer_(placer), identity_(std::move(identity)) {}
  // Blocks until the victim exits, times out, or `cancel` becomes true.
  // on_step (optional) is called for every step the victim reports, as it reports it;
  // on_dataset (optional) for every dataset-generation record (ProgressParser).
  // run_as (set): this run's user instead of the identity's (an experiment's own uid).
  using DatasetProgress = ProgressParser::DatasetProgress;
  VictimOutcome Run(const experiment::VictimSpec& spec, const std::atomic<bool>* cancel = nullptr,
                    const std::function<void(const VictimStep&)>& on_step = {},
                    const std::function<void(const DatasetProgress&)>& on_dataset = {},
                    const std::optional<RunAs>& run_as = std::nullopt);
  const VictimIdentity& identity() const { return identity_; }

 private:
  const Clock* clock_;
  const Placer* placer_;
  VictimIdentity identity_;
};

}  // namespace codl::agent
