// mps_cotenant: an SM antagonist that shares the GPU with the victim through MPS.
//
// Under MPS, kernels of different processes run side by side on the SMs instead of
// time-slicing, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps the share of SMs one client may use.
// Setup uses the control daemon listening in pipe_dir or starts one, reports it
// (HostServices::ReportMps, for people and logs) and exports CUDA_MPS_PIPE_DIRECTORY and
// CUDA_MPS_LOG_DIRECTORY (HostServices::ExportVictimEnv), so the agent starts the victim with the
// same directories (Capabilities::exports_victim_env).
//
// In-process, not a child: the co-tenant's kernels run in this process, which becomes an MPS
// client. That works because CUDA reads CUDA_MPS_PIPE_DIRECTORY when it initializes and
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE when it creates the context, and nothing in codl-inject
// touches CUDA before Setup (Unsupported() probes in a forked child, gpu_probe.h). Setup sets
// the variables, then creates the context. A process that already used CUDA is refused.
//
// Unit: FLOP/s completed (FMA kernel: 2 FLOP per FMA; GEMM: 2n³ per SGEMM), counted when a
// kernel's end event fires; its peak (--calibrate) is what sm_percent and duty allow, so levels
// are fractions of that. Telemetry 'sm_share' = sm_percent × (completed launches × one launch's
// solo time) / elapsed: the "SM% × duty" the victim competes with. The solo time is the fastest
// of a few launches timed at setup, not each kernel's elapsed time, which under contention
// includes waiting for SMs the victim holds and so overstated the share.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/gpu/gpu_host.h"
#include "injectors/gpu/gpu_probe.h"
#include "injectors/gpu/mps_daemon.h"

#ifdef CODL_HAVE_CUDA
#include "injectors/gpu/compute_kernels.h"
#include "injectors/gpu/cuda_common.h"
#include "lib/gpu/cublas_loader.h"
#endif

namespace codl::injectors {
namespace {

#ifdef CODL_HAVE_CUDA
// cuBLAS is loaded on first use of kernel=gemm instead of linked (lib/gpu/cublas_loader.h).
using gpu_loaders::Cublas;
#endif

// RunPaced reports Meter ops per second; the co-tenant counts SM%·µs of kernel time as ops,
// so this rescales them to SM% on the way to the real reporter.
class SmShareReporter final : public Reporter {
 public:
  explicit SmShareReporter(Reporter& inner) : inner_(inner) {}
  void Report(const Sample& s) override {
    Sample c = s;
    if (auto it = c.extra.find("sm_share"); it != c.extra.end()) it->second *= 1e-6;
    inner_.Report(c);
  }

 private:
  Reporter& inner_;
};

class MpsCotenantInjector final : public Injector {
 public:
  ~MpsCotenantInjector() override { Release(); }

  const Descriptor& descriptor() const override {
    static const Descriptor d{
        "mps_cotenant",
        "GPU SMs",
        "FLOP/s",
        "compute co-tenant under MPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, FMA loop or SGEMM, "
        "duty cycle",
        "floating-point operations completed per second (FMA = 2 FLOP, SGEMM = 2n^3); peak is "
        "at the given sm_percent and duty; telemetry 'sm_share' = sm_percent x fraction of "
        "time the completed kernels would have run alone (solo time timed at setup)",
        {
            IntOption("sm_percent", "50", 1, 100,
                      "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of this client", "%"),
            EnumOption("kernel", "fma", {"fma", "gemm"},
                       "fma: register-only FMA loop (pure SM pressure); gemm: cuBLAS SGEMM "
                       "(SMs plus L2/HBM traffic)"),
            DoubleOption("duty", "1", 0.01, 1, "fraction of each period in which to launch"),
            DurationOption("period", "100ms", 0.001, 10, "duty-cycle period"),
            DurationOption("kernel_time", "2ms", 100e-6, 1,
                           "fma: loop length per launch, sized at setup (shorter = finer "
                           "interleaving with the victim, more launch overhead)"),
            IntOption("gemm_n", "4096", 256, 16384, "gemm: matrix dimension n (n x n x n)"),
            IntOption("depth", "2", 1, 8,
                      "kernels in flight, at least (more while they are short)"),
            IntOption("device", "0", 0, 1023, "CUDA device index"),
            StringOption("pipe_dir", "",
                         "CUDA_MPS_PIPE_DIRECTORY; empty: <scratch root>/codl-mps/pipe or "
                         "/tmp/codl-mps/pipe"),
            StringOption("log_dir", "",
                         "CUDA_MPS_LOG_DIRECTORY; empty: next to the pipe dir (.../log or "
                         "<pipe_dir>-log)"),
            BoolOption("start_daemon", "true",
                       "start nvidia-cuda-mps-control -d when none listens in pipe_dir (and quit "
                       "it afterwards); false: require a running one"),
        },
        // Its MPS client settings (CUDA_MPS_PIPE_DIRECTORY, ...) must reach the victim.
        Capabilities{.exports_victim_env = true, .needs_gpu = true},
        {{"sm_percent", "20"}},
    };
    return d;
  }

  Status Unsupported(const HostInfo&) const override {
    CODL_RETURN_IF_ERROR(gpu::CudaUsable());
    if (gpu::FindOnPath("nvidia-cuda-mps-control").empty()) {
      return NotHere("nvidia-cuda-mps-control not found on PATH (it ships with the NVIDIA driver)");
    }
    return Status::Ok();
  }

  Status CheckOptions(const OptionValues& o) const override {
    const std::string& pipe = o.String("pipe_dir");
    if (!pipe.empty()) return gpu::CheckMpsPipeDir(pipe);
    return Status::Ok();
  }

  using Injector::ToInjectorUnit;  // keep the (rate, options) overload visible
  Result<double> ToInjectorUnit(const Rate& rate) const override {
    if (rate.unit == RateUnit::kOpsPerSecond) return rate.value;  // "20Tops/s" = 2e13 FLOP/s
    return Err(
        "injector 'mps_cotenant' measures FLOP/s; a rate in bytes/s does not apply "
        "(give a bare number, e.g. 2e13, an ops/s rate such as 20Tops/s, or --level)");
  }

  Status Setup(const OptionValues& o, const HostInfo& host, HostServices& services,
               const StopToken& stop) override {
#ifdef CODL_HAVE_CUDA
    if (gpu::CudaUsedHere()) {
      return Err(
          "mps_cotenant: CUDA is already initialized in this process; MPS settings only "
          "apply to a process's first CUDA context (run it in its own codl-inject)");
    }
    sm_percent_ = static_cast<int>(o.Int("sm_percent"));
    gemm_ = o.String("kernel") == "gemm";
    duty_ = o.Double("duty");
    period_s_ = o.Duration("period");
    depth_ = static_cast<int>(o.Int("depth"));
    device_ = static_cast<int>(o.Int("device"));
    const gpu::MpsDirs dirs =
        gpu::ResolveMpsDirs(o.String("pipe_dir"), o.String("log_dir"), host.scratch_roots);
    auto control = gpu::MpsControl::Acquire(dirs, o.Bool("start_daemon"), stop);
    if (!control.ok()) return control.status().WithContext("mps_cotenant");
    control_ = std::move(*control);

    // Before the first CUDA call: the driver joins the MPS server named here when it
    // initializes and applies the thread percentage when it creates the context.
    setenv("CUDA_MPS_PIPE_DIRECTORY", dirs.pipe_dir.c_str(), 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", dirs.log_dir.c_str(), 1);
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(sm_percent_).c_str(), 1);
    gpu::MarkCudaUsedHere();
    cuda_initialized_ = true;
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
      return Err("mps_cotenant: joining the MPS server failed: " +
                 gpu::CudaErrorText("cudaGetDeviceCount", e) + control_->LogTail());
    }
    if (device_ >= count) {
      return Err("option 'device': " + std::to_string(device_) + " but only " +
                 std::to_string(count) + " CUDA device(s) are visible");
    }
    CODL_CUDA_RETURN(cudaSetDevice(device_));
    if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {  // creates the context now
      return Err("mps_cotenant: creating the MPS client context failed: " +
                 gpu::CudaErrorText("cudaFree(0)", e) + control_->LogTail());
    }
    cudaDeviceProp prop{};
    CODL_CUDA_RETURN(cudaGetDeviceProperties(&prop, device_));
    int mode = cudaComputeModeDefault;  // not in cudaDeviceProp since CUDA 13
    CODL_CUDA_RETURN(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device_));
    if (mode == cudaComputeModeProhibited) {
      return Err("mps_cotenant: device " + std::to_string(device_) + " is in PROHIBITED mode");
    }
    if (mode == cudaComputeModeDefault) {
      notes_.push_back(
          "device compute mode is DEFAULT: processes outside MPS time-slice with "
          "it; EXCLUSIVE_PROCESS makes every GPU user go through MPS");
    }
    if (!control_->HasClient(getpid())) {
      notes_.push_back(
          "could not confirm this process in the MPS server's client list (a "
          "daemon in another PID namespace?); check " +
          dirs.log_dir);
    }
    CODL_CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (Status s =
            gemm_ ? PrepareGemm(o.Int("gemm_n")) : PrepareFma(prop, o.Duration("kernel_time"));
        !s.ok()) {
      return s;
    }
    services.ReportMps({dirs.pipe_dir, dirs.log_dir, control_->started()});
    return services.ExportVictimEnv({{"CUDA_MPS_PIPE_DIRECTORY", dirs.pipe_dir},
                                     { "CUDA_MPS_LOG_DIRECTORY",
                                       dirs.log_dir }});
#else
    return Err("mps_cotenant: built without CUDA");
#endif
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
#ifdef CODL_HAVE_CUDA
    if (stream_ == nullptr) return Err("mps_cotenant: Run before Setup");
    PacedRunSpec spec;
    spec.workers = 1;
    spec.ops_name = "sm_share";
    SmShareReporter scaled(reporter);
    const double sm = sm_percent_;
    auto worker = [&](WorkerContext& ctx) -> Status {
      gpu::PacedStreamSpec ps;
      ps.device = device_;
      ps.depth = depth_;
      ps.units = flop_per_launch_;
      ps.duty = gpu::DutyCycle(duty_, period_s_);
      ps.ops = static_cast<uint64_t>(solo_launch_s_ * sm * 1e6 + 0.5);  // SM%·µs

      return gpu::RunPacedStream(ctx, stream_, ps, [this](cudaStream_t s) { return Launch(s); });
    };
    auto summary = RunPaced(spec, target, stop, scaled, worker);
    if (!summary.ok()) return summary;
    if (auto it = summary->extra.find("sm_share"); it != summary->extra.end()) it->second *= 1e-6;
    summary->notes.insert(summary->notes.end(), notes_.begin(), notes_.end());
    return summary;
#else
    return Err("mps_cotenant: built without CUDA");
#endif
  }

 private:
#ifdef CODL_HAVE_CUDA
  // Sizes the FMA loop so one launch takes about `kernel_time` under this client's SM limit.
  Status PrepareFma(const cudaDeviceProp& prop, double kernel_time_s) {
    int per_sm = 0;
    CODL_CUDA_RETURN(gpu::FmaBlocksPerSm(&per_sm));
    blocks_ = std::max(1, per_sm) * prop.multiProcessorCount;
    CODL_CUDA_RETURN(
        cudaMalloc(&sink_, static_cast<size_t>(blocks_) * gpu::kFmaThreads * sizeof(float)));
    iterations_ = 4096;
    auto probe = FastestLaunchS(3);  // the first launch pays module loading
    if (!probe.ok()) return probe.status();
    const double scale = *probe > 0 ? kernel_time_s / *probe : 1.0;
    iterations_ = static_cast<int>(std::clamp(iterations_ * scale, 64.0, 1e9));
    flop_per_launch_ = static_cast<uint64_t>(blocks_) * gpu::kFmaThreads *
                       static_cast<uint64_t>(iterations_) * gpu::kFmaFlopPerIteration;
    auto solo = FastestLaunchS(3);
    if (!solo.ok()) return solo.status();
    solo_launch_s_ = *solo;
    return Status::Ok();
  }

  // The fastest of `n` launches, in seconds: the least contended, the closest to solo time.
  Result<double> FastestLaunchS(int n) {
    cudaEvent_t a = nullptr, b = nullptr;
    CODL_CUDA_RETURN(cudaEventCreate(&a));
    CODL_CUDA_RETURN(cudaEventCreate(&b));
    double best = 0;
    Status status = Status::Ok();
    for (int i = 0; i < n && status.ok(); ++i) {
      float ms = 0;
      cudaEventRecord(a, stream_);
      status = Launch(stream_);
      if (!status.ok()) break;
      cudaEventRecord(b, stream_);
      if (cudaError_t e = cudaEventSynchronize(b); e != cudaSuccess) {
        status = Err(gpu::CudaErrorText("cudaEventSynchronize", e));
      } else if (cudaError_t t = cudaEventElapsedTime(&ms, a, b); t != cudaSuccess) {
        status = Err(gpu::CudaErrorText("cudaEventElapsedTime", t));
      } else if (best == 0 || ms * 1e-3 < best) {
        best = ms * 1e-3;
      }
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (!status.ok()) return status;
    return best;
  }

  Status PrepareGemm(int64_t n) {
    gemm_n_ = static_cast<int>(n);
    const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(float);
    for (float** m : {&a_, &b_, &c_}) {
      CODL_CUDA_RETURN(cudaMalloc(m, bytes));
      // 0x3c3c3c3c ≈ 0.0115: non-zero operands, so the multipliers switch like real data.
      CODL_CUDA_RETURN(cudaMemset(*m, 0x3c, bytes));
    }
    if (!Cublas().error.empty()) return Err("mps_cotenant: kernel=gemm: " + Cublas().error);
    if (cublasStatus_t s = Cublas().create(&cublas_); s != CUBLAS_STATUS_SUCCESS) {
      return Err("mps_cotenant: cublasCreate failed (status " + std::to_string(s) + ")");
    }
    Cublas().set_stream(cublas_, stream_);
    flop_per_launch_ =
        2ull * static_cast<uint64_t>(n) * static_cast<uint64_t>(n) * static_cast<uint64_t>(n);
    auto solo = FastestLaunchS(4);  // the first also loads cuBLAS's kernels
    if (!solo.ok()) return solo.status();
    solo_launch_s_ = *solo;
    return Status::Ok();
  }

  Status Launch(cudaStream_t s) {
    if (!gemm_) {
      CODL_CUDA_RETURN(gpu::LaunchFmaKernel(blocks_, iterations_, sink_, s));
      return Status::Ok();
    }
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t st =
        Cublas().sgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, gemm_n_, gemm_n_, gemm_n_, &alpha, a_,
                       gemm_n_, b_, gemm_n_, &beta, c_, gemm_n_);
    if (st != CUBLAS_STATUS_SUCCESS) {
      return Err("mps_cotenant: cublasSgemm failed (status " + std::to_string(st) + ")");
    }
    return Status::Ok();
  }

  void Release() {
    if (stream_ != nullptr) {
      cudaSetDevice(device_);
      cudaStreamSynchronize(stream_);
      if (cublas_ != nullptr) Cublas().destroy(cublas_);
      for (float* p : {sink_, a_, b_, c_}) {
        if (p != nullptr) cudaFree(p);
      }
      cudaStreamDestroy(stream_);
      stream_ = nullptr;
    }
    // Leave the MPS server before quitting the daemon we may have started.
    if (cuda_initialized_) cudaDeviceReset();
    cuda_initialized_ = false;
    control_.reset();  // quits the daemon only if Setup started it
  }

  std::unique_ptr<gpu::MpsControl> control_;
  bool cuda_initialized_ = false;  // this process is (or tried to become) an MPS client
  std::vector<std::string> notes_;
  int sm_percent_ = 50, depth_ = 2, device_ = 0;
  bool gemm_ = false;
  double duty_ = 1, period_s_ = 0.1;
  cudaStream_t stream_ = nullptr;
  // fma
  int blocks_ = 0, iterations_ = 0;
  float* sink_ = nullptr;
  // gemm
  cublasHandle_t cublas_ = nullptr;
  int gemm_n_ = 0;
  float *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
  uint64_t flop_per_launch_ = 0;
  double solo_launch_s_ = 0;  // one launch's GPU time at setup (fastest of a few)
#else
  void Release() {}
#endif
};

}  // namespace

std::unique_ptr<Injector> MakeMpsCotenantInjector() {
  return std::make_unique<MpsCotenantInjector>();
}

}  // namespace codl::injectors
