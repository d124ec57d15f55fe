// CUDA plumbing shared by the GPU injectors (only compiled with CODL_HAVE_CUDA):
//   * CODL_CUDA_RETURN: a failed runtime call becomes an Err naming the call and the error;
//   * InFlightWindow: a ring of events, so work is counted when the GPU has *finished* it;
//   * RunPacedStream: the worker loop of cuda_memcpy and mps_cotenant.
//
// Why poll events instead of cudaStreamSynchronize/cudaEventSynchronize: a blocking wait cannot
// see the stop token, and Run() must return within 100 ms of a stop even behind a 4 GiB copy or
// a hung collective. Polling every ~50 us costs little CPU and, with ≥ 2 operations in flight,
// never leaves the copy engine or the SMs idle while we notice a completion.
#pragma once

#ifdef CODL_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "injectors/core/paced_run.h"
#include "injectors/gpu/gpu_host.h"

namespace codl::injectors::gpu {

// "cudaMemcpyAsync(...): out of memory (2)"
std::string CudaErrorText(const std::string& what, cudaError_t error);

#define CODL_CUDA_RETURN(expr)                                                   \
  do {                                                                           \
    const cudaError_t codl_e_ = (expr);                                          \
    if (codl_e_ != cudaSuccess)                                                  \
      return ::codl::Err(::codl::injectors::gpu::CudaErrorText(#expr, codl_e_)); \
  } while (0)

// How long a worker sleeps between event polls while work is in flight.
constexpr double kPollS = 50e-6;
// RunPacedStream queues at least this much GPU work when operations are short, up to
// kMaxAutoDepth operations per stream.
constexpr double kQueuedWorkS = 0.5e-3;
constexpr int kMaxAutoDepth = 32;

// Sleeps `seconds`; long waits through the stop token so a stop still ends them promptly.
void PollSleep(double seconds, const StopToken& stop);

class InFlightWindow {
 public:
  InFlightWindow() = default;
  InFlightWindow(const InFlightWindow&) = delete;
  InFlightWindow& operator=(const InFlightWindow&) = delete;
  ~InFlightWindow();

  // `timing`: also record a start event per operation, so Harvest can report GPU busy time.
  Status Init(int depth, bool timing);
  bool full() const { return count_ == static_cast<int>(slots_.size()); }
  bool empty() const { return count_ == 0; }
  int size() const { return count_; }

  // Before the operation (timing windows only).
  Status Begin(cudaStream_t stream);
  // After it: `units`/`ops` are credited when the operation completes.
  Status End(cudaStream_t stream, uint64_t units, uint64_t ops);

  // Credits every completed operation, oldest first, to ctx (if given). With timing, the
  // operations' GPU time is added to *busy_s. Returns how many completed.
  Result<int> Harvest(WorkerContext* ctx, double* busy_s = nullptr);

 private:
  struct Slot {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    uint64_t units = 0;
    uint64_t ops = 0;
  };
  std::vector<Slot> slots_;
  int head_ = 0;  // oldest in flight
  int count_ = 0;
  bool timing_ = false;
};

struct PacedStreamSpec {
  int device = 0;
  int depth = 2;       // operations in flight, at least (see kQueuedWorkS)
  uint64_t units = 0;  // counted per completed operation (the injector's unit)
  uint64_t ops = 0;    // secondary count per operation (RunPaced's ops_name extra)
  DutyCycle duty{1, 0.1};
  // When set, the next operation is issued only while ready() is true (cuda_memcpy's bidir
  // split, copy_split.h); checked before the pacer, so no credit is taken for a held copy.
  std::function<bool()> ready;
};

// Polls until `stream` has no work left, or `stop` fires (then returns Ok with work pending).
Status WaitForStream(cudaStream_t stream, const StopToken& stop);

// Keeps spec.depth operations (more when they are short) in flight on `stream`; issues the
// next one (issue(stream)) when it fits in the duty window (duty_window.h: windows on Unix
// time, only operations expected to end inside one) and the pacer grants spec.units;
// credits each when it completes. Fails the run when the duty period is too short for the
// operations (CheckDutyWindow).
// Returns when ctx.stop fires (work still in flight is left to finish; the next call and the
// injector's destructor synchronize the stream).
Status RunPacedStream(WorkerContext& ctx, cudaStream_t stream, const PacedStreamSpec& spec,
                      const std::function<Status(cudaStream_t)>& issue);

}  // namespace codl::injectors::gpu

#endif  // CODL_HAVE_CUDA
