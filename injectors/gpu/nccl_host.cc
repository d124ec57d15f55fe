#include "injectors/gpu/nccl_host.h"

#include <algorithm>
#include <cmath>

#include "lib/common/units.h"

namespace codl::injectors::gpu {

double NcclStopGraceS(int vote_every, double op_s, const DutyCycle& duty) {
  const double op = op_s > 0 && std::isfinite(op_s) ? op_s : 0;
  const double stretch = duty.always_on() ? 1.0 : 1.0 / duty.duty();
  const double off = duty.always_on() ? 0.0 : duty.period();
  const double grace = kNcclStopFloorS + 2.0 * std::max(vote_every, 1) * op * stretch + off;
  return std::min(kNcclStopCapS, grace);
}

std::string NcclDebugFile(bool stderr_is_regular_file, const std::string& log_dir) {
  if (!stderr_is_regular_file) return "/dev/stderr";
  return (log_dir.empty() ? std::string("/tmp") : log_dir) + "/nccl.%h.%p.log";
}

Status CheckNcclMemory(uint64_t free_bytes, uint64_t buffer_bytes, int device) {
  const uint64_t need = buffer_bytes + kNcclInitReserveBytes;
  if (free_bytes >= need) return Status::Ok();
  return ResourceExhausted(
      "nccl: device " + std::to_string(device) + " has " +
      FormatSize(static_cast<double>(free_bytes)) + " free; the collective's buffers take " +
      FormatSize(static_cast<double>(buffer_bytes)) + " and the communicator about " +
      FormatSize(static_cast<double>(kNcclInitReserveBytes)) +
      " more (is the victim holding the memory? use a smaller size)");
}

Status CheckNcclCtas(int64_t min_ctas, int64_t max_ctas) {
  if (min_ctas > 0 && max_ctas > 0 && min_ctas > max_ctas) {
    return InvalidArgument("option 'min_ctas': " + std::to_string(min_ctas) +
                           " exceeds max_ctas (" + std::to_string(max_ctas) + ")");
  }
  return Status::Ok();
}

std::string NcclInitTimeoutMessage(int rank, int ranks, const std::string& timeout_text,
                                   const std::string& rendezvous_key) {
  return "nccl: rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
         ": not all ranks joined within " + timeout_text +
         (rendezvous_key.empty() ? "" : " (rendezvous key '" + rendezvous_key + "')") +
         "; are they all started with the same unique_id, op and size? Across nodes the usual "
         "cause is NCCL picking an interface the peers cannot reach: set NCCL_SOCKET_IFNAME "
         "(and check NCCL_DEBUG=INFO's 'NET/' lines)";
}

}  // namespace codl::injectors::gpu
