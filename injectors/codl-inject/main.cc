// codl-inject: runs ONE injector in the foreground (what codl-agent spawns; also useful alone,
// like fio or stress-ng). See args.h for the command line and docs/injectors.md for the rest.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "injectors/codl-inject/args.h"
#include "injectors/codl-inject/output.h"
#include "injectors/core/registry.h"
#include "injectors/core/scratch.h"
#include "injectors/core/start_wait.h"
#include "lib/common/units.h"
#include "lib/common/version.h"

namespace codl::inject {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "codl-inject: %s\n", message.c_str());
  return code;
}

// SIGINT/SIGTERM are blocked in every thread and taken by one waiter thread, which turns them
// into a StopSource request (a signal handler could not safely do more than set a flag). A
// second signal means "now": exit at once; a later --cleanup-stale removes the leftovers.
class SignalStopper {
 public:
  SignalStopper() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);  // before any other thread exists
    thread_ = std::thread([this] {
      while (!done_.load()) {
        timespec ts{0, 50'000'000};
        const int sig = sigtimedwait(&set_, nullptr, &ts);
        if (sig <= 0) continue;
        if (signalled_.exchange(true)) _exit(128 + sig);
        source_.RequestStop();
      }
    });
  }
  ~SignalStopper() {
    done_ = true;
    thread_.join();
  }
  injectors::StopToken token() const { return source_.token(); }
  bool signalled() const { return signalled_.load(); }

 private:
  sigset_t set_;
  injectors::StopSource source_;
  std::atomic<bool> done_{false}, signalled_{false};
  std::thread thread_;
};

// --rate/--peak text to the injector's unit: a bare number is already in it.
Result<double> ParseRateFor(const injectors::Injector& inj, const injectors::OptionValues& options,
                            const std::string& flag, const std::string& text) {
  if (auto n = ParseNumber(text); n.ok()) {
    if (*n < 0) return Err(flag + ": " + text + " must not be negative");
    return *n;
  }
  auto rate = ParseRate(text);
  if (!rate.ok()) return rate.status().WithContext(flag);
  auto converted = inj.ToInjectorUnit(*rate, options);
  if (!converted.ok()) return converted.status().WithContext(flag);
  return *converted;
}

std::unique_ptr<injectors::Reporter> MakeReporter(bool json, const std::string& unit,
                                                  const std::string& phase) {
  if (json) return std::make_unique<JsonReporter>(unit, phase);
  return std::make_unique<HumanReporter>(unit, phase);
}

int CleanupStaleCommand(const CliArgs& args, const std::vector<std::string>& roots) {
  auto removed = injectors::CleanupStale(roots);
  if (!removed.ok()) return Fail(kExitRuntime, removed.error());
  for (const auto& path : *removed) {
    if (args.json) {
      std::printf("%s\n", injectors::protocol::Removed{path}.Format().c_str());
    } else {
      std::printf("removed %s\n", path.c_str());
    }
  }
  if (!args.json && removed->empty()) std::printf("no stale run directories\n");
  return kExitOk;
}

// One run of one injector, step by step: options and targets, setup, calibration (when asked
// or needed for --level), the synchronized start, the load, the summary. Each step returns an
// exit code, or nullopt to go on.
class RunSession {
 public:
  RunSession(const CliArgs& args, const injectors::HostInfo& host, injectors::Injector& inj)
      : args_(args),
        host_(host),
        inj_(inj),
        services_(inj.descriptor(), args.json),
        stop_(signals_.token()) {
    summary_.injector = inj.descriptor().name;
    summary_.unit = inj.descriptor().unit;
  }

  int Run() {
    if (auto rc = Prepare()) return *rc;
    if (auto rc = Setup()) return *rc;
    if (auto rc = CalibrateIfNeeded()) return *rc;
    ResolveTarget();
    if (auto rc = PrepareStart()) return *rc;
    NoteReady();
    return Load();
  }

 private:
  using Step = std::optional<int>;

  Step Prepare() {
    auto options = injectors::ParseInjectorOptions(inj_, args_.options);
    if (!options.ok()) return Fail(kExitUsage, options.error());
    options_ = std::move(*options);
    services_.SetOptions(&options_);
    if (args_.intensity == Intensity::kRate) {
      auto r = ParseRateFor(inj_, options_, "--rate", args_.rate_text);
      if (!r.ok()) return Fail(kExitUsage, r.error());
      target_ = *r;
    }
    if (!args_.peak_text.empty()) {
      auto r = ParseRateFor(inj_, options_, "--peak", args_.peak_text);
      if (!r.ok()) return Fail(kExitUsage, r.error());
      summary_.peak_rate = *r;
    }
    if (Status why = inj_.Unsupported(host_); !why.ok()) {
      return Fail(kExitRuntime, summary_.injector + " is unavailable here: " + why.message());
    }
    return std::nullopt;
  }

  Step Setup() {
    start_.setup_estimate_s = inj_.SetupEstimateS(options_, host_);
    const auto t0 = std::chrono::steady_clock::now();
    Status s = inj_.Setup(options_, host_, services_, stop_);
    start_.setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      if (stop_.stop_requested()) return Finish({});  // interrupted while preparing: not a failure
      return Fail(kExitRuntime, s.error());
    }
    return std::nullopt;
  }

  // --calibrate, or --level without --peak: measure the peak first.
  Step CalibrateIfNeeded() {
    const bool calibrate_only = args_.command == Command::kCalibrate;
    const bool needs_peak = args_.intensity == Intensity::kLevel && args_.peak_text.empty();
    if (!calibrate_only && !needs_peak) return std::nullopt;
    const double len =
        calibrate_only && args_.duration_s > 0 ? args_.duration_s : args_.calibrate_duration_s;
    auto reporter = MakeReporter(args_.json, summary_.unit, "calibrate");
    auto cal = inj_.Calibrate(len, stop_, *reporter);
    reporter.reset();
    if (!cal.ok()) return Fail(kExitRuntime, cal.error());
    summary_.peak_rate = cal->achieved_rate;
    if (calibrate_only || stop_.stop_requested()) {
      summary_.mode = "calibrate";
      return Finish(*cal);
    }
    return std::nullopt;
  }

  void ResolveTarget() {
    switch (args_.intensity) {
      case Intensity::kMax: summary_.mode = "max"; break;
      case Intensity::kRate: summary_.mode = "rate"; break;
      case Intensity::kLevel:
        summary_.mode = "level";
        summary_.level = args_.level;
        target_ = args_.level * summary_.peak_rate;
        break;
      case Intensity::kNone: break;
    }
    summary_.target_rate = target_;
  }

  // A synchronized start: what the load needs before its first unit of work is made now.
  Step PrepareStart() {
    if (args_.start_at_unix_ns <= 0) return std::nullopt;
    if (Status s = inj_.PrepareStart(); !s.ok()) return Fail(kExitRuntime, s.error());
    return std::nullopt;
  }

  // A synchronized start: everything slow (setup, calibration, process start) is done. The
  // wait for the common start is the injector's (Target::start: RunPaced creates its threads
  // now and holds them at the instant); how it went is the StartAccount, printed with the
  // first interval.
  void NoteReady() {
    if (args_.start_at_unix_ns <= 0) return;
    start_.start_at_unix_ns = args_.start_at_unix_ns;
    start_.ready_unix_ns = injectors::RealtimeNanos();
    gate_.at_unix_ns = args_.start_at_unix_ns;
  }

  int Load() {
    injectors::Target t = args_.intensity == Intensity::kMax ? injectors::Target::Max()
                                                             : injectors::Target::Rate(target_);
    // --duration is enforced here, by the tool itself, not left to whoever started us; it counts
    // from the moment the load begins (the common start, when there is one).
    double until_start_s = 0;
    if (args_.start_at_unix_ns > 0) {
      t.start = &gate_;
      until_start_s = std::max<double>(
          0, static_cast<double>(args_.start_at_unix_ns - injectors::RealtimeNanos()) * 1e-9);
    }
    const injectors::StopToken run_stop =
        args_.duration_s > 0 ? stop_.WithDeadline(until_start_s + args_.duration_s) : stop_;
    auto reporter = MakeReporter(args_.json, summary_.unit, "run");
    StartAccountReporter* account = nullptr;
    if (args_.json && args_.start_at_unix_ns > 0) {
      auto r = std::make_unique<StartAccountReporter>(inj_, start_, gate_, std::move(reporter));
      account = r.get();
      reporter = std::move(r);
    }
    auto run = inj_.Run(t, run_stop, *reporter);
    if (account) account->Finish();
    reporter.reset();
    if (!run.ok()) return Fail(kExitRuntime, run.error());
    if (args_.intensity == Intensity::kMax && summary_.peak_rate == 0) {
      summary_.peak_rate = run->achieved_rate;  // a max run measures the peak too
    }
    return Finish(*run);
  }

  int Finish(const injectors::RunSummary& run) {
    summary_.run = run;
    summary_.stopped_by_signal = signals_.signalled();
    if (args_.json) {
      PrintSummaryJson(summary_);
    } else {
      PrintSummaryHuman(summary_);
    }
    return kExitOk;
  }

  const CliArgs& args_;
  const injectors::HostInfo& host_;
  injectors::Injector& inj_;
  StdoutHostServices services_;
  SignalStopper signals_;
  const injectors::StopToken stop_;
  injectors::OptionValues options_;
  SummaryFields summary_;
  StartAccount start_;
  injectors::StartGate gate_;
  double target_ = 0;
};

int RunCommand(const CliArgs& args, const injectors::HostInfo& host) {
  auto inj = injectors::CreateInjector(args.injector);
  if (!inj) return Fail(kExitUsage, injectors::ValidateInjectorName(args.injector).message());
  if (args.command == Command::kInjectorHelp) {
    PrintInjectorHelp(*inj, host);
    return kExitOk;
  }
  return RunSession(args, host, *inj).Run();
}

int Main(int argc, char** argv) {
  std::vector<std::string> argv_vec(argv, argv + argc);
  if (argc == 2 && argv_vec[1] == "--version") {
    std::printf("codl-inject %s\n", CodlVersion());
    return kExitOk;
  }
  auto args = ParseArgs(argv_vec);
  if (!args.ok()) return Fail(kExitUsage, args.error());
  if (args->command == Command::kUsage) {
    PrintUsage(stdout);
    return kExitOk;
  }
  auto roots = injectors::ResolveScratchRoots(injectors::DefaultScratchRoots(args->scratch_roots));
  if (args->command == Command::kList) {  // listing needs no scratch space: never fail on it
    PrintList(args->json, injectors::DetectHost(roots.ok() ? *roots : std::vector<std::string>{}));
    return kExitOk;
  }
  if (!roots.ok()) return Fail(kExitUsage, roots.error());
  const injectors::HostInfo host = injectors::DetectHost(*roots);
  switch (args->command) {
    case Command::kCleanupStale: return CleanupStaleCommand(*args, *roots);
    default: return RunCommand(*args, host);
  }
}

}  // namespace
}  // namespace codl::inject

int main(int argc, char** argv) { return codl::inject::Main(argc, argv); }
