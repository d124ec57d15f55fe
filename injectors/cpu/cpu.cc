// cpu: CPU-core antagonist. N threads run compute kernels (integer, scalar float, SIMD or a mix;
// cpu_kernels.h) in fine time slices: each pacing step is one slice of `period` CPU time, and
// the shared closed-loop controller spaces the slices, so a level is a steady share of cores
// (a 0.5 level on 2 threads = each thread busy ~half of every few ms), not seconds-long bursts.
//
// Unit: core-s/s, the CPU time the threads actually got per wall second (1.0 = one core fully
// busy). Counted from CLOCK_THREAD_CPUTIME_ID, so time a thread spent preempted by someone else
// is not counted as pressure it applied. Kernel iterations are reported alongside as `ops`.
//
// Inside, the pacer and meter count nanoseconds of CPU time (RunPaced counts integer units);
// ScaledReporter converts to core-s/s at the edge.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/cpu/cpu_kernels.h"
#include "injectors/cpu_list.h"

namespace codl::injectors {
namespace {

constexpr double kNsPerS = 1e9;

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t WallNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Forwards samples with rates divided by `scale` (ns/s → core-s/s); `ops` stays per second.
class ScaledReporter final : public Reporter {
 public:
  ScaledReporter(Reporter& inner, double scale) : inner_(inner), scale_(scale) {}
  void Report(const Sample& s) override {
    Sample out = s;
    out.achieved /= scale_;
    out.target /= scale_;
    inner_.Report(out);
  }

 private:
  Reporter& inner_;
  double scale_;
};

class CpuInjector final : public Injector {
 public:
  const Descriptor& descriptor() const override {
    static const Descriptor d = [] {
      const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
      return Descriptor{
          "cpu",
          "CPU cores",
          "core-s/s",
          "CPU-core hog: threads computing in fine duty-cycled slices (int, float, vector mix)",
          "CPU time the threads got per second (1.0 = one core fully busy), from each thread's "
          "CPU clock; kernel iterations reported alongside as ops",
          {
              IntOption("threads", std::to_string(cpus), 1, 1024,
                        "compute threads (default: online CPUs); the peak is at most one "
                        "core-s/s per thread"),
              EnumOption("mix", "mixed", {"int", "float", "vector", "mixed"},
                         "what the kernel exercises: integer ALUs, scalar FP, SIMD (AVX2+FMA "
                         "where available), or a third of each"),
              DurationOption("period", "2ms", 0.0005, 0.05,
                             "duty-cycle granularity: CPU time per pacing step; a thread "
                             "computes one slice, then waits for the next"),
              StringOption("cpus", "none",
                           "CPU list to pin threads to round-robin, e.g. 0-3,6 (none = the "
                           "scheduler places them)"),
          },
          Capabilities{},
          {{"threads", "1"}},
      };
    }();
    return d;
  }

  Status Unsupported(const HostInfo&) const override { return Status::Ok(); }

  Status CheckOptions(const OptionValues& o) const override {
    return CheckCpuListOption("cpus", o.String("cpus"));
  }

  Status Setup(const OptionValues& o, const HostInfo&, HostServices&, const StopToken&) override {
    threads_ = static_cast<int>(o.Int("threads"));
    ParseCpuMix(o.String("mix"), &mix_);
    ParseCpuList(o.String("cpus"), &cpus_);
    slice_ns_ = static_cast<uint64_t>(o.Duration("period") * kNsPerS);
    batch_ = MeasureBatch();
    notes_ = {"mix " + o.String("mix") +
                  (mix_ == CpuMix::kVector || mix_ == CpuMix::kMixed
                       ? std::string(", vector kernel ") + VectorKernelName()
                       : std::string()),
              "slice " + o.Text("period") + ", " + std::to_string(batch_) +
                  " iterations between clock reads"};
    return Status::Ok();
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
    PacedRunSpec spec;
    spec.workers = threads_;
    spec.ops_name = "ops";
    // Credit of a few slices: enough that N threads asking at once are not serialized, small
    // enough that a level stays a steady share rather than a catch-up burst.
    spec.burst_s = 0.01;
    auto worker = [this](WorkerContext& ctx) -> Status {
      if (!cpus_.empty()) PinThisThread(cpus_[static_cast<size_t>(ctx.index) % cpus_.size()]);
      uint64_t seed = static_cast<uint64_t>(ctx.index) + 1;
      while (ctx.Acquire(slice_ns_)) {
        auto [used, ops] = ComputeSlice(&seed, ctx.stop);
        ctx.Done(used, ops);
      }
      sink_.fetch_xor(seed, std::memory_order_relaxed);
      return Status::Ok();
    };
    ScaledReporter scaled(reporter, kNsPerS);
    Target inner = target;  // the start gate too
    if (!inner.is_max()) inner.rate *= kNsPerS;
    auto summary = RunPaced(spec, inner, stop, scaled, worker);
    if (!summary.ok()) return summary;
    summary->achieved_rate /= kNsPerS;
    summary->notes = notes_;
    return summary;
  }

 private:
  // Computes until this thread has used one slice of CPU time. Also ends after 4 slices of wall
  // time (a thread starved by other load still returns to the pacer and sees a stop promptly).
  // Returns (CPU ns used, kernel iterations).
  std::pair<uint64_t, uint64_t> ComputeSlice(uint64_t* seed, const StopToken& stop) {
    const uint64_t cpu0 = ThreadCpuNs(), wall_end = WallNs() + 4 * slice_ns_;
    uint64_t used = 0, ops = 0;
    do {
      *seed += RunCpuKernel(mix_, batch_, *seed);
      ops += batch_;
      used = ThreadCpuNs() - cpu0;
    } while (used < slice_ns_ && WallNs() < wall_end && !stop.stop_requested());
    return {used, ops};
  }

  // Iterations per ~20 µs, so the thread CPU clock (a system call) costs ~1% of the work.
  uint64_t MeasureBatch() const {
    const uint64_t probe = 20000;
    uint64_t best = UINT64_MAX, sink = 0;
    for (int i = 0; i < 3; ++i) {  // best of 3: a preemption inflates one probe, not all
      const uint64_t t0 = ThreadCpuNs();
      sink += RunCpuKernel(mix_, probe, sink + 1);
      best = std::min(best, std::max<uint64_t>(1, ThreadCpuNs() - t0));
    }
    sink_.fetch_xor(sink, std::memory_order_relaxed);
    return std::clamp<uint64_t>(probe * 20000 / best, 64, 1'000'000);
  }

  int threads_ = 1;
  CpuMix mix_ = CpuMix::kMixed;
  std::vector<int> cpus_;
  uint64_t slice_ns_ = 2'000'000, batch_ = 1000;
  std::vector<std::string> notes_;
  mutable std::atomic<uint64_t> sink_{0};  // keeps kernel results observable
};

}  // namespace

std::unique_ptr<Injector> MakeCpuInjector() { return std::make_unique<CpuInjector>(); }

}  // namespace codl::injectors
