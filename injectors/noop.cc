// noop: the reference injector. It pressures nothing, but goes through the whole path (option
// table, Unsupported, Setup, Calibrate, Run with closed-loop pacing, telemetry, stop), so it is
// the file to copy when adding an injector, and a cheap plant for end-to-end tests.
//
// THE CONTRACT, as every injector must honour it:
//   * descriptor(): a static table. `unit` is the unit of every rate in and out; each option has
//     a type, unit, default (valid text), bounds and help. The core parses and validates user
//     input against it; Setup() receives typed OptionValues and never re-parses text.
//   * Unsupported(): ok or NotHere(a human reason); no side effects. Compiled-out features (no
//     CUDA, no liburing) still register and explain themselves here.
//   * CheckOptions() (optional): rules across options; InvalidArgument naming them.
//   * Setup(): may allocate and create files (only via scratch.h RunDir under a scratch root);
//     must honour `stop` if it takes long; errors are runtime failures (exit code 1). Never
//     prints: a rendezvous value, victim variables or a note go through `services`.
//   * Run(): hold the target until `stop`, report ≥ 4×/s, return within 100 ms of a stop.
//     Use RunPaced(): write only the worker loop, count finished work with ctx.Done().
//     Count work when it is *complete* (bytes copied, I/O completed), not when issued.
//   * Calibrate(): usually inherited (Run at max for the duration).
//   * The destructor frees everything, scratch files included.
//   * Then add one line to core/registry.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"

namespace codl::injectors {
namespace {

class NoopInjector final : public Injector {
 public:
  const Descriptor& descriptor() const override {
    static const Descriptor d{
        "noop",
        "nothing (reference skeleton)",
        "units/s",
        "counts paced units; exercises options, calibration, pacing and telemetry",
        "one unit = one counted tick; nothing is pressured",
        {
            IntOption("threads", "1", 1, 256, "worker threads"),
            IntOption("chunk", "100", 1, 1e9, "units taken from the pacer per step", "units"),
            DoubleOption("capacity", "1000000", 0, 1e12,
                         "peak of the pretend resource (0 = unlimited); what --calibrate measures",
                         "units/s"),
        },
        Capabilities{},      // flags the hosts act on (injector.h); noop needs nothing special
        {{"threads", "1"}},  // smoke run: options for ~1 s on any host
    };
    return d;
  }

  Status Unsupported(const HostInfo&) const override { return Status::Ok(); }

  Status Setup(const OptionValues& options, const HostInfo&, HostServices&,
               const StopToken&) override {
    threads_ = static_cast<int>(options.Int("threads"));
    chunk_ = static_cast<uint64_t>(options.Int("chunk"));
    capacity_ = options.Double("capacity");
    return Status::Ok();
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
    PacedRunSpec spec;
    spec.workers = threads_;
    // The pretend resource: a second pacer at `capacity` stands in for the device's limit, so
    // the controller sees a real plant (and saturates when the target exceeds capacity).
    SteadyClock clock;
    Pacer device(clock, 0.01);
    device.SetRate(capacity_ > 0 ? capacity_ : std::numeric_limits<double>::infinity());
    auto worker = [&](WorkerContext& ctx) -> Status {
      // The whole hot loop: wait for the pacer, do one unit of work, count it.
      while (ctx.Acquire(chunk_)) {
        if (!device.Acquire(static_cast<double>(chunk_), ctx.stop)) break;
        ctx.Done(chunk_);
      }
      return Status::Ok();
    };
    return RunPaced(spec, target, stop, reporter, worker);
  }

 private:
  int threads_ = 1;
  uint64_t chunk_ = 100;
  double capacity_ = 1e6;
};

}  // namespace

std::unique_ptr<Injector> MakeNoopInjector() { return std::make_unique<NoopInjector>(); }

}  // namespace codl::injectors
