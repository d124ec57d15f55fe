#include "injectors/gpu/cuda_common.h"

#ifdef CODL_HAVE_CUDA

#include <time.h>

#include <algorithm>
#include <cmath>

#include "injectors/gpu/duty_window.h"
#include "lib/common/clock.h"

namespace codl::injectors::gpu {

std::string CudaErrorText(const std::string& what, cudaError_t error) {
  return what + ": " + cudaGetErrorString(error) + " (" + std::to_string(static_cast<int>(error)) +
         ")";
}

void PollSleep(double seconds, const StopToken& stop) {
  if (seconds >= 1e-3) {
    stop.SleepFor(seconds);
    return;
  }
  timespec ts{0, static_cast<long>(seconds * 1e9)};
  nanosleep(&ts, nullptr);
}

InFlightWindow::~InFlightWindow() {
  // Destroying an event whose record is still pending is allowed: CUDA frees it on completion.
  for (Slot& s : slots_) {
    if (s.start != nullptr) cudaEventDestroy(s.start);
    if (s.end != nullptr) cudaEventDestroy(s.end);
  }
}

Status InFlightWindow::Init(int depth, bool timing) {
  timing_ = timing;
  slots_.resize(static_cast<size_t>(std::max(depth, 1)));
  // Timing events are needed only for busy time; plain ones are cheaper to record and query.
  const unsigned flags = timing ? cudaEventDefault : cudaEventDisableTiming;
  for (Slot& s : slots_) {
    if (timing) CODL_CUDA_RETURN(cudaEventCreateWithFlags(&s.start, flags));
    CODL_CUDA_RETURN(cudaEventCreateWithFlags(&s.end, flags));
  }
  return Status::Ok();
}

Status InFlightWindow::Begin(cudaStream_t stream) {
  if (!timing_) return Status::Ok();
  Slot& s = slots_[static_cast<size_t>((head_ + count_) % static_cast<int>(slots_.size()))];
  CODL_CUDA_RETURN(cudaEventRecord(s.start, stream));
  return Status::Ok();
}

Status InFlightWindow::End(cudaStream_t stream, uint64_t units, uint64_t ops) {
  if (full()) return Err("InFlightWindow::End on a full window");
  Slot& s = slots_[static_cast<size_t>((head_ + count_) % static_cast<int>(slots_.size()))];
  CODL_CUDA_RETURN(cudaEventRecord(s.end, stream));
  s.units = units;
  s.ops = ops;
  ++count_;
  return Status::Ok();
}

Result<int> InFlightWindow::Harvest(WorkerContext* ctx, double* busy_s) {
  int done = 0;
  while (count_ > 0) {
    Slot& s = slots_[static_cast<size_t>(head_)];
    const cudaError_t q = cudaEventQuery(s.end);
    if (q == cudaErrorNotReady) break;
    if (q != cudaSuccess) return Err(CudaErrorText("cudaEventQuery", q));
    if (timing_ && busy_s != nullptr) {
      float ms = 0;
      CODL_CUDA_RETURN(cudaEventElapsedTime(&ms, s.start, s.end));
      *busy_s += ms * 1e-3;
    }
    if (ctx != nullptr) ctx->Done(s.units, s.ops);
    head_ = (head_ + 1) % static_cast<int>(slots_.size());
    --count_;
    ++done;
  }
  return done;
}

Status WaitForStream(cudaStream_t stream, const StopToken& stop) {
  while (!stop.stop_requested()) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return Status::Ok();
    if (q != cudaErrorNotReady) return Err(CudaErrorText("cudaStreamQuery", q));
    PollSleep(1e-3, stop);
  }
  return Status::Ok();
}

Status RunPacedStream(WorkerContext& ctx, cudaStream_t stream, const PacedStreamSpec& spec,
                      const std::function<Status(cudaStream_t)>& issue) {
  CODL_CUDA_RETURN(cudaSetDevice(spec.device));  // the current device is per thread
  // Leftovers of a previous phase are not ours to count; wait for them without going deaf to
  // the stop (a blocking cudaStreamSynchronize behind a long kernel would be).
  if (Status s = WaitForStream(stream, ctx.stop); !s.ok()) return s;
  if (ctx.stop.stop_requested()) return Status::Ok();
  InFlightWindow window;
  const int max_depth = std::max(spec.depth, kMaxAutoDepth);
  if (Status s = window.Init(max_depth, /*timing=*/true); !s.ok()) return s;
  // With a duty cycle the pacer's budget is spent only inside the on-windows (gpu_host.h).
  const double pace_units = static_cast<double>(spec.units) * spec.duty.pacing_scale();
  DutyWindow duty(spec.duty, *::codl::SystemClock::Get());
  // Operations shorter than a poll (a 64 MiB D2D copy takes ~30 us on HBM3) would leave the
  // GPU idle between polls with only spec.depth queued, so the depth grows until about
  // kQueuedWorkS of work is queued, from each operation's GPU time (its start/end events).
  // This only sizes the queue; what is counted and when is unchanged.
  int depth = spec.depth;
  double op_s = 0;  // moving average of one operation's GPU time
  while (!ctx.stop.stop_requested()) {
    double busy = 0;
    auto harvested = window.Harvest(&ctx, &busy);
    if (!harvested.ok()) return harvested.status();
    if (window.empty()) duty.Idle();
    if (*harvested > 0 && busy > 0) {
      const double sample = busy / *harvested;
      op_s = op_s == 0 ? sample : 0.8 * op_s + 0.2 * sample;
      const double want = std::ceil(kQueuedWorkS / op_s) + 1;
      depth = static_cast<int>(
          std::clamp(want, static_cast<double>(spec.depth), static_cast<double>(max_depth)));
      if (Status w = CheckDutyWindow(spec.duty, op_s); !w.ok()) return w;
    }
    double wait = kPollS;
    if (window.size() < depth) {
      double w = duty.WaitFor(op_s);
      if (w == 0 && spec.ready && !spec.ready()) w = kPollS;
      if (w == 0) w = ctx.pacer.TryAcquire(pace_units);
      if (w == 0) {
        if (Status s = window.Begin(stream); !s.ok()) return s;
        if (Status s = issue(stream); !s.ok()) return s;
        if (Status s = window.End(stream, spec.units, spec.ops); !s.ok()) return s;
        duty.Issued(op_s);
        continue;
      }
      // Idle: sleep toward the next grant, but wake to count completions and to pick up a
      // pacing rate the controller raised (it updates every 50 ms).
      wait = window.empty() ? std::min(w, 0.005) : std::min(w, kPollS);
    }
    PollSleep(wait, ctx.stop);
  }
  auto last = window.Harvest(&ctx);
  return last.ok() ? Status::Ok() : last.status();
}

}  // namespace codl::injectors::gpu

#endif  // CODL_HAVE_CUDA
