// The injector plug-in interface. An injector (antagonist) pressures one resource at a target
// rate and reports what it achieved. Adding one = one source file defining a factory plus one line
// in core/registry.cc (nothing else: the build globs the sources, and the tests, controller and
// agent act on the Descriptor); injectors/noop.cc is the annotated skeleton to copy.
//
// Lifecycle, driven by codl-inject (or any other host of the library):
//   1. the core parses the user's KEY=VALUE strings against descriptor().options (types, units,
//      bounds, enum choices; exact messages) and then calls CheckOptions() for cross-option rules;
//   2. Unsupported(host) must be ok or the run is refused with its reason;
//   3. Setup(options, host, services, stop) allocates buffers / creates files (may take seconds;
//      honour stop); what it must tell the host (a rendezvous value, victim variables, notes)
//      goes through `services` (host_services.h), never to stdout;
//   4. Calibrate(duration) and/or Run(target) any number of times, one at a time;
//   5. the destructor releases everything (scratch files included).
// Only the C++ standard library and common/ may appear here: this header is compiled into
// codl-inject on bare GPU boxes and must not depend on CUDA, liburing or gRPC.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "injectors/core/host_services.h"
#include "injectors/core/options.h"
#include "injectors/core/stop_token.h"
#include "lib/common/result.h"
#include "lib/common/units.h"

namespace codl::injectors {

// What an injector is, as far as its hosts must know. The controller, the agent and the tests
// act on these flags only; none of them names an injector. The registry checks each flag's
// contract (CheckDescriptorContract) on first use.
struct Capabilities {
  // One instance per node of the antagonist's node set, all forming one job. The controller
  // fills in the integer options `ranks` (node count) and `rank` (node index) and the string
  // option `rendezvous_key` unless the experiment sets them. Rank 0 hands its value to
  // HostServices::PublishRendezvous (a protocol::RendezvousPublish record), and the agent starts
  // every other rank with --set <rendezvous_option>=<hex> of that value
  // (protocol::RendezvousFetch).
  bool collective = false;
  std::string rendezvous_option = "";  // collective only: the string option that receives the value
  // May call HostServices::ExportVictimEnv once set up; the agent passes those variables to
  // victims it starts while this injector runs. Names must pass IsExportableEnvName
  // (victim_env.h); the agent drops the others, and the record from any injector without the
  // flag.
  bool exports_victim_env = false;
  bool needs_gpu = false;       // Unsupported() is ok only with a usable CUDA device
  bool writes_scratch = false;  // creates files under HostInfo::scratch_roots
};

// What the injector is and what it accepts. `unit` is the unit of every rate it reports or
// accepts: "bytes/s", "IOPS", "units/s", "busbw bytes/s", "SM%"...
struct Descriptor {
  std::string name;       // registry key, e.g. "io_uring"
  std::string resource;   // what it pressures, e.g. "storage bandwidth"
  std::string unit;       // e.g. "bytes/s"
  std::string summary;    // one line for --list
  std::string unit_help;  // how the unit counts, shown by --help (e.g. "each byte copied once")
  std::vector<OptionSpec> options;
  Capabilities capabilities = {};
  // --set options for a short (~1 s) smoke run that works on any host where Unsupported() is
  // ok: small buffers and files, one rank. The tests run every injector with them.
  std::map<std::string, std::string> smoke_options = {};
};

// Facts about this host that Unsupported() and Setup() may consult.
struct HostInfo {
  std::vector<std::string> scratch_roots;  // realpath'ed directories injectors may write under
  unsigned cpus = 1;                       // online CPUs
};

// A synchronized start (codl-inject --start-at): the load begins at `at_unix_ns`
// (CLOCK_REALTIME), not before, and whatever can be made ready before it is (RunPaced creates
// its worker threads first and holds them at the instant, so only their wake-up is left at
// it). Run() stamps `started_unix_ns` when the load began: the first worker left the wait.
struct StartGate {
  int64_t at_unix_ns = 0;
  std::atomic<int64_t> started_unix_ns{0};
};

// What to hold. kMax = as fast as possible (calibration); kRate = an absolute rate in the
// injector's unit (a level is converted by the caller: level × calibrated peak).
struct Target {
  enum class Kind { kMax, kRate };
  Kind kind = Kind::kMax;
  double rate = 0;
  // Null: begin at once. Otherwise Run() honours the gate: RunPaced does; an injector with a
  // loop of its own calls AwaitStart() (start_wait.h) first. Owned by the caller.
  StartGate* start = nullptr;
  static Target Max() { return Target{}; }
  static Target Rate(double r) { return Target{Kind::kRate, r}; }
  bool is_max() const { return kind == Kind::kMax; }
};

// One telemetry interval. `achieved` is the mean rate over the interval in the injector's unit;
// `target` is 0 under kMax; `extra` holds secondary rates (io_uring: "iops").
struct Sample {
  double t_s = 0;         // end of the interval, seconds since the phase started
  double interval_s = 0;  // its length
  double achieved = 0;
  double target = 0;
  bool saturated = false;  // the controller cannot reach the target (capacity below target)
  std::map<std::string, double> extra;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // Called at least 4 times per second from the injector's control thread. Must not block long.
  virtual void Report(const Sample& sample) = 0;
};

// Result of one Calibrate()/Run(). Statistics exclude the settle period (see paced_run.h).
struct RunSummary {
  double achieved_rate = 0;  // mean over the measured window, injector unit
  double cov = 0;            // coefficient of variation of the per-interval achieved rate
  double seconds = 0;        // length of the whole phase
  bool saturated = false;    // the target was above what the resource delivered
  std::map<std::string, double> extra;  // secondary means, e.g. {"iops": 51234}
  std::vector<std::string> notes;       // degradations worth telling the user (e.g. "sqpoll off")
};

class Injector {
 public:
  virtual ~Injector() = default;

  // Static description; must be cheap and identical for every instance.
  virtual const Descriptor& descriptor() const = 0;

  // Ok if this injector can run here, else NotHere(a human reason): "built without CUDA",
  // "io_uring disabled by kernel.io_uring_disabled=2". Must not have side effects.
  virtual Status Unsupported(const HostInfo& host) const = 0;

  // Rules that involve several options (e.g. queue_depth × block_size memory). Ok when fine,
  // else InvalidArgument(a message naming the options). Single-option bounds are already
  // enforced by the core.
  virtual Status CheckOptions(const OptionValues& options) const { return Status::Ok(); }

  // Receives validated, typed options. Errors here are runtime failures (exit code 1).
  virtual Status Setup(const OptionValues& options, const HostInfo& host, HostServices& services,
                       const StopToken& stop) = 0;

  // Seconds Setup() is expected to take with these options on `host`, from what it has to
  // prepare (an io_uring read flood writes its whole file set). The controller starts every
  // antagonist of a trial after the slowest setup, so none starts late. Err on the long side:
  // an underestimate makes an antagonist miss the common start, an overestimate only delays
  // the trial. 0 (the default): negligible.
  virtual double SetupEstimateS(const OptionValues& options, const HostInfo& host) const {
    return 0;
  }

  // Called once before a synchronized start's wait (codl-inject --start-at), after Setup() and
  // any calibration: do now what Run() would otherwise do before its first unit of work
  // (io_uring: create its ring, register buffers and files), so that the load reaches the
  // resource within microseconds of the common start. Errors are runtime failures. Default:
  // nothing.
  virtual Status PrepareStart() { return Status::Ok(); }

  // When the latest Run() first handed work to its resource and when that work first came back,
  // on CLOCK_REALTIME (the clock of codl-inject --start-at); an io_uring flood: its first submit
  // and its first completion. A synchronized start reports them, so a late start can be told
  // apart from the resource's own first-I/O latency. 0: not yet, or not tracked (the default).
  struct FirstLoad {
    int64_t submitted_unix_ns = 0;
    int64_t completed_unix_ns = 0;
  };
  virtual FirstLoad FirstLoadTimes() const { return {}; }

  // Converts a user-given rate (bytes/s or ops/s from common/units ParseRate) into the
  // injector's unit, or explains why it does not apply. The default accepts bytes/s for a
  // "bytes/s" injector and ops/s for an "IOPS"/"ops/s" one. Override the one-argument form
  // for a fixed conversion, the two-argument form when it depends on the validated options
  // (io_uring converts IOPS with its block_size). Hosts call the two-argument form.
  virtual Result<double> ToInjectorUnit(const Rate& rate) const;
  virtual Result<double> ToInjectorUnit(const Rate& rate, const OptionValues& options) const {
    return ToInjectorUnit(rate);
  }

  // Peak rate alone for `duration_s`. The default runs Run(Target::Max()) until the duration
  // ends and returns its summary (achieved_rate is the peak). Override only when peak is not
  // "as fast as possible" (e.g. a duty-cycled kernel).
  virtual Result<RunSummary> Calibrate(double duration_s, const StopToken& stop,
                                       Reporter& reporter);

  // Holds `target` until `stop`; reports through `reporter` at least 4×/s; returns within
  // 100 ms of the stop request. Most injectors implement this with RunPaced() (paced_run.h),
  // which provides the closed-loop rate control, telemetry and summary statistics.
  virtual Result<RunSummary> Run(const Target& target, const StopToken& stop,
                                 Reporter& reporter) = 0;
};

using InjectorFactory = std::unique_ptr<Injector> (*)();

// What Unsupported() returns when the injector cannot run on this host.
inline Status NotHere(std::string reason) { return FailedPrecondition(std::move(reason)); }
// A probe's reason ("" = usable) as Unsupported()'s answer.
inline Status NotHereIf(std::string reason) {
  return reason.empty() ? Status::Ok() : NotHere(std::move(reason));
}
// The ranks of a receiver/sender pair (net, rdma): at most 2, and rank below ranks. `one` names
// a single instance in the message ("a net antagonist").
inline Status CheckPairRanks(const std::string& injector, const std::string& one,
                             const OptionValues& o) {
  const int64_t ranks = o.Int("ranks");
  if (ranks > 2) {
    return InvalidArgument(injector + ": ranks " + std::to_string(ranks) + ": " + one +
                           " is one receiver/sender pair (2 nodes; option receiver says "
                           "which receives); give each further pair an antagonist of its own");
  }
  if (o.Int("rank") >= ranks) {
    return InvalidArgument("option 'rank': " + std::to_string(o.Int("rank")) +
                           " must be less than ranks (" + std::to_string(ranks) + ")");
  }
  return Status::Ok();
}

}  // namespace codl::injectors
