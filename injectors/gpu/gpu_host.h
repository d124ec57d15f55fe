// Host-side pieces of the GPU injectors: everything that needs no CUDA and is therefore built and
// unit-tested on every machine (CI has no GPU). The CUDA/NCCL files call into these, so the rules
// below are the ones that run on the H200, not copies of them.
//   * nccl-tests' bus-bandwidth convention (BusBwFactor) and message shapes (NcclShapeFor);
//   * the size of the rendezvous value (an ncclUniqueId);
//   * DutyCycle, the on/off window shared by the nccl and mps_cotenant workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors::gpu {

// ---- NCCL collectives ---------------------------------------------------------------------

enum class NcclOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast };

// Option spellings, in --help order: allreduce, allgather, reducescatter, alltoall, broadcast.
const std::vector<std::string>& NcclOpNames();
Result<NcclOp> ParseNcclOp(std::string_view name);  // "unknown NCCL op 'x' (known: ...)"
const char* NcclOpName(NcclOp op);

// nccl-tests' busbw = algbw × factor, so numbers compare with nccl-tests and across rank counts:
//   allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast 1.
// For n = 1 those formulas give 0 (no bus traffic) for all but broadcast; CoDL defines the
// factor as 1 there (busbw := algbw) so a 1-rank antagonist still has a measurable peak and a
// rate to hold. Documented in docs/gpu.md and in the injector's --help.
double BusBwFactor(NcclOp op, int nranks);
// The table above as one line for --help ("allreduce 2(n-1)/n, ...; n=1: 1 (algbw)").
std::string BusBwFactorHelp();

// Element counts for one collective of `size` bytes in nccl-tests' sense (the "size" column:
// allreduce/broadcast buffer, allgather total output, reducescatter total input, alltoall
// per-rank send buffer). Partitioned ops round down to a multiple of nranks elements.
struct NcclShape {
  size_t send_count = 0;   // elements in the send buffer
  size_t recv_count = 0;   // elements in the receive buffer
  size_t chunk_count = 0;  // elements per peer (alltoall) / per rank (allgather, reducescatter)
  uint64_t alg_bytes = 0;  // bytes the algbw counts per op (the rounded size)
};
Result<NcclShape> NcclShapeFor(NcclOp op, uint64_t size_bytes, int nranks, size_t elem_bytes);

// ---- rendezvous (no MPI; the agent relays the id through the controller) ------------------

constexpr size_t kNcclUniqueIdBytes = 128;  // sizeof(ncclUniqueId); static_assert'ed in nccl.cc
// Its hex and the record that carries it are the protocol's (injectors/core/protocol.h).

// ---- duty cycle ---------------------------------------------------------------------------

// Work may be issued during the first duty × period of every period. `t` is read on a clock
// every rank shares (DutyWindow uses Unix time), so the on-windows of ranks on different nodes
// line up: a rank in its off time holds no NCCL kernel spinning for a peer that is in its on
// time. duty ≥ 1 means always on. Operations are not preempted, so DutyWindow issues only those
// that end inside the window.
class DutyCycle {
 public:
  DutyCycle(double duty, double period_s);
  // Seconds from `t` until the next on-window opens; 0 inside one.
  double WaitAt(double t) const;
  // When the on-window that contains `t` closes (t itself when the window is closed; +inf with
  // duty ≥ 1).
  double WindowEndAt(double t) const;
  double duty() const { return duty_; }
  double period() const { return period_s_; }
  bool always_on() const { return duty_ >= 1; }
  // Pacer units per unit of work: the pacer's (time-averaged) budget is spent only while the
  // window is open, so each unit costs `duty` of a unit and the mean still equals the target.
  double pacing_scale() const { return duty_ >= 1 ? 1.0 : duty_; }

 private:
  double duty_;
  double period_s_;
};

// Operations this long cannot be gated finely enough: "" when the duty cycle can be kept with
// operations of `op_s` GPU seconds, else why not (the period must be at least 5 operations and
// the on-window at least one; otherwise the achieved duty is off by more than ~20%).
Status CheckDutyWindow(const DutyCycle& duty, double op_s);

// "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is detected)"
std::string NoDeviceReason(int code, std::string_view text);

// CUDA driver/runtime version integer (13000, 12040) as "13.0", "12.4".
std::string CudaVersionString(int version);

}  // namespace codl::injectors::gpu
