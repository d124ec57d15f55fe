// InjectChild: one codl-inject child of the agent, a run or a calibration alike. It spawns the
// process, reads its protocol records (injectors/core/protocol.h) as they arrive, relays a
// collective's rendezvous value, and keeps what the records say: samples, the summary, the
// account of a synchronized start, victim variables. AntagonistManager owns the table of
// children and their leases; everything about one child is here.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/child_process.h"
#include "agent/progress_parser.h"
#include "injectors/core/injector.h"
#include "injectors/core/protocol.h"
#include "lib/common/clock.h"
#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::agent {

class TelemetryHub;

// How the agent relays opaque rendezvous values (e.g. ncclUniqueId) through the controller.
struct RendezvousRelay {
  std::function<Status(const std::string& key, const std::string& value)> publish;
  std::function<Result<std::string>(const std::string& key, double wait_s)> fetch;
};

class InjectChild {
 public:
  struct Spec {
    std::string id;  // the antagonist id: logs and telemetry
    std::string injector;
    injectors::Capabilities caps;  // what the injector declares (the catalog's descriptor)
    std::vector<std::string> argv;
    std::shared_ptr<ChildPlacement> placement;  // null: wherever the agent runs
    const RendezvousRelay* relay = nullptr;     // null or empty: a publish is an error
    TelemetryHub* telemetry = nullptr;          // live samples go here too (may be null)
    const Clock* clock = nullptr;               // required
    // Set: a workload antagonist, a real command instead of codl-inject (argv is the command).
    // Its stdout and progress channel are read as victim progress (ProgressParser); its load
    // begins at the spawn, and each sample covers the measured steps (after warmup_steps) that
    // ended since the last one, at least kWorkloadSampleS of them: achieved = their mean
    // value (seconds), steps = how many. docs/experiment-format.md, "Workload antagonists".
    struct Workload {
      experiment::ProgressSpec progress;
      int warmup_steps = 0;
      std::map<std::string, std::string> env;
      bool inherit_env = true;  // false: `env` alone (the victim identity's clean_env)
      std::string workdir;
      std::optional<RunAs> run_as;
    };
    std::optional<Workload> workload;
  };
  static constexpr double kWorkloadSampleS = 0.2;
  static constexpr const char* kWorkloadUnit = "s/step";
  static Result<std::unique_ptr<InjectChild>> Spawn(Spec spec);
  ~InjectChild();  // kills the child if it still runs

  InjectChild(const InjectChild&) = delete;
  InjectChild& operator=(const InjectChild&) = delete;

  const std::string& id() const { return spec_.id; }
  const std::string& injector() const { return spec_.injector; }
  pid_t pid() const { return child_->pid(); }
  uint64_t start_time_ticks() const { return child_->start_time_ticks(); }
  bool exited() const { return child_->exited(); }
  int exit_code() const { return child_->exit_code(); }  // -signal when killed; once exited()
  double run_seconds() const { return child_->run_seconds(); }

  // Until codl-inject's StartAccount arrived (its load began), it exited, or timeout_s passed.
  // True when the load began.
  bool AwaitLoadStart(double timeout_s);
  bool WaitExit(double timeout_s) { return child_->WaitFor(timeout_s); }
  // SIGTERM, then SIGKILL after grace_s; blocks until reaped.
  void Terminate(double grace_s);
  void Kill() { child_->Kill(); }
  // The agent failed it for a reason of its own (a lease ran out): the error live() and
  // outcome() report from now on.
  void Fail(std::string why);

  // A synchronized start as codl-inject accounted for it; ready_unix_ns 0: no account (yet).
  struct Start {
    int64_t started_unix_ns = 0;  // the load began (agent clock); the spawn until then
    int64_t ready_unix_ns = 0;    // its setup and calibration were done, the wait began
    double setup_s = 0;           // Setup()'s measured duration
  };
  Start start() const;

  // While it runs: the latest sample.
  struct Live {
    bool running = false;
    std::string unit;
    double last_achieved = 0;
    double target = 0;
    int samples = 0;
    std::string error;
  };
  Live live() const;

  // Once it exited: what it achieved. From its Summary record, or from the samples when it was
  // killed before writing one.
  struct Outcome {
    bool have_summary = false;
    std::string unit;
    double target_rate = 0;
    double achieved_rate = 0;
    double cov = 0;
    std::vector<RateSample> samples;
    int exit_code = 0;
    std::string error;  // the agent's (Fail), a broken record, or a failed exit
    double cpu_s = 0;   // CPU seconds of its process tree
    double run_s = 0;   // spawn to exit
    std::string effective_cpus;
    // When the load first reached its resource (agent clock); 0: codl-inject did not say.
    int64_t first_load_unix_ns = 0;
    int64_t first_done_unix_ns = 0;
    // A workload that exited by itself before the agent stopped it (its exit_code says how).
    bool ended_early = false;
  };
  // `terminated`: the agent sent SIGTERM itself, so exiting by it is the normal end.
  Outcome outcome(bool terminated) const;

  // The variables of its VictimEnv record: only when the injector declares exports_victim_env,
  // only names IsExportableEnvName accepts.
  std::map<std::string, std::string> victim_env() const;

  bool is_workload() const { return spec_.workload.has_value(); }

  // "codl-inject exited with status N: <end of its stderr>", "" while it runs or after exit 0.
  std::string ExitProblem() const;
  // The end of its stderr (at most 600 bytes, valid UTF-8), for error messages.
  std::string StderrTail() const;

 private:
  explicit InjectChild(Spec spec) : spec_(std::move(spec)) {}
  void OnLine(std::string_view line);
  void OnWorkloadLine(std::string_view line);
  void AddSample(const RateSample& s);
  void Take(const injectors::protocol::Interval& r);
  void Take(const injectors::protocol::Summary& r);
  void Take(const injectors::protocol::StartAccount& r);
  void Take(const injectors::protocol::FirstLoad& r);
  void Take(const injectors::protocol::RendezvousPublish& r);
  void Take(const injectors::protocol::VictimEnv& r);
  void Take(const injectors::protocol::Note& r);
  void Take(const injectors::protocol::MpsStatus& r);
  template <class Other>
  void Take(const Other&) {}  // records a run does not write (--list, --cleanup-stale)

  const Spec spec_;
  std::unique_ptr<ChildProcess> child_;
  mutable std::mutex mu_;  // what the reader thread writes, below
  std::condition_variable started_cv_;
  bool load_started_ = false;
  Start start_;
  std::vector<RateSample> samples_;
  std::string unit_;
  std::optional<injectors::protocol::Summary> summary_;
  int64_t first_load_unix_ns_ = 0;
  int64_t first_done_unix_ns_ = 0;
  std::map<std::string, std::string> victim_env_;
  std::string error_;
  // A workload's progress and the measured steps not yet in a sample (reader thread only).
  std::unique_ptr<ProgressParser> parser_;
  bool channel_used_ = false;  // the progress channel spoke: stdout is the job's own from then
  int group_steps_ = 0;
  double group_sum_s_ = 0;
  double group_start_s_ = 0;  // since the spawn: the end of the last sample
  // The agent's own stop began (Terminate): an exit after it is not the workload ending early.
  bool stopping_ = false;
  bool exited_before_stop_ = false;  // it had exited when the stop began
};

}  // namespace codl::agent
