// VictimRunner: runs a victim command as a supervised child, feeds its stdout to the progress
// parser, enforces victim.timeout, and returns the outcome. A failed victim is reported as a
// failed trial with its exit status and stderr tail — never as a measurement.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>

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
// `dir` prepended to a victim's PYTHONPATH: victim.env's, else the agent's own.
std::string VictimPythonPath(const std::string& dir,
                             const std::map<std::string, std::string>& victim_env);

class VictimRunner {
 public:
  // placer: applies victim.cpus / victim.numa (null: placement requests fail the run). Victims
  // run as `run_as` when set (the agent's victim_user), else as the agent.
  VictimRunner(const Clock* clock, const Placer* placer = nullptr,
               std::optional<RunAs> run_as = std::nullopt)
      : clock_(clock), placer_(placer), run_as_(std::move(run_as)) {}
  // Blocks until the victim exits, times out, or `cancel` becomes true.
  // on_step (optional) is called for every step the victim reports, as it reports it;
  // on_dataset (optional) for every dataset-generation record (ProgressParser).
  using DatasetProgress = ProgressParser::DatasetProgress;
  VictimOutcome Run(const experiment::VictimSpec& spec, const std::atomic<bool>* cancel = nullptr,
                    const std::function<void(const VictimStep&)>& on_step = {},
                    const std::function<void(const DatasetProgress&)>& on_dataset = {});

 private:
  const Clock* clock_;
  const Placer* placer_;
  std::optional<RunAs> run_as_;
};

}  // namespace codl::agent
