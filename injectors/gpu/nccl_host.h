// Host-side rules of the nccl injector (no NCCL or CUDA needed, so they are unit-tested on CI):
// how long a stopping rank waits for its peers, where NCCL's debug log goes, whether the
// device has room for a communicator, and the init-timeout message.
#pragma once

#include <cstdint>
#include <string>

#include "injectors/gpu/gpu_host.h"

namespace codl::injectors::gpu {

// The floor of every stop wait: a vote or the last collectives on an idle, healthy fabric.
constexpr double kNcclStopFloorS = 2.0;
// A stop never waits longer than this for peers before the communicator is aborted.
constexpr double kNcclStopCapS = 300.0;

// How long a rank that has seen its stop waits for its peers (the next vote, and afterwards
// the last agreed collectives) before it declares one dead and aborts the communicator. Peers
// keep their own pace until they read the vote: up to two segments of `vote_every` collectives,
// each `op_s` long (the longer of the paced interval and the GPU time), issued only inside the
// on-windows (so stretched by 1/duty), plus one whole period in case a peer is in its off time.
double NcclStopGraceS(int vote_every, double op_s, const DutyCycle& duty);

// Where NCCL_DEBUG output should go when NCCL_DEBUG is set and NCCL_DEBUG_FILE is not. NCCL
// logs to stdout by default (the agent's JSON-lines stream) and fopen()s NCCL_DEBUG_FILE with
// "w": /dev/stderr is safe for a pipe or a terminal, but truncates a stderr redirected to a
// regular file (clobbering what was logged before). So: "/dev/stderr" unless stderr is a
// regular file, then "<log_dir>/nccl.%h.%p.log" (NCCL expands %h host, %p pid).
std::string NcclDebugFile(bool stderr_is_regular_file, const std::string& log_dir);

// Device memory an NCCL communicator takes at init on top of the collective's buffers (its
// channels' FIFOs and proxy buffers; ~0.3-1 GiB on one H100-class node). A check, not a cap:
// Setup also records what init really took.
constexpr uint64_t kNcclInitReserveBytes = 1ull << 30;
// Ok, or ResourceExhausted(why `free_bytes` cannot hold `buffer_bytes` plus the communicator's
// own memory).
Status CheckNcclMemory(uint64_t free_bytes, uint64_t buffer_bytes, int device);

// Ok, or InvalidArgument(why the CTA limits cannot be passed to ncclConfig_t; 0 = NCCL's
// default).
Status CheckNcclCtas(int64_t min_ctas, int64_t max_ctas);

// The error when not all ranks joined within init_timeout, naming the usual causes.
std::string NcclInitTimeoutMessage(int rank, int ranks, const std::string& timeout_text,
                                   const std::string& rendezvous_key);

}  // namespace codl::injectors::gpu
