// gpusim's NCCL communicators: the shared-memory file ranks meet in, the barrier, and the
// collectives' data exchange and link traffic (nccl.cc is the API on top). Internal to gpusim.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace codl::gpusim::nccl {

inline constexpr int kMaxRanks = 8;
inline constexpr size_t kStage = 4u << 20;  // bytes each rank exchanges per round
inline constexpr uint64_t kCommMagic = 0x6e63636c67707331ull;
inline constexpr char kIdPrefix[] = "gpusim-nccl:";

struct CommShm {
  uint64_t magic;
  int32_t nranks;
  std::atomic<int32_t> joined;
  std::atomic<int32_t> aborted;  // rank + 1 of the first rank that aborted
  std::atomic<int32_t> claimed[kMaxRanks];
  std::atomic<int32_t> pids[kMaxRanks];
  std::atomic<uint64_t> arrive;  // barrier arrivals, ever increasing
  alignas(64) unsigned char stage[kMaxRanks][kStage];
};

struct CommState {
  CommShm* shm = nullptr;
  std::string path;
  int rank = 0, nranks = 1, device = 0;
  bool unlinked = false;
  std::atomic<int> async{ncclInProgress};
  std::atomic<bool> local_abort{false};
  std::mutex op_mu;  // one collective at a time per rank (as on one NCCL stream)
  uint64_t barriers = 0;
  std::string error;
  std::thread init;

  ~CommState();  // joins `init`, unmaps, removes the file if not every rank joined
  // The first failure sticks (it is what the communicator reports from then on).
  void Fail(ncclResult_t r, const std::string& why);
  // Every rank calls the same barriers in the same order; false when a peer aborted or died.
  bool Barrier();
};

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kPointToPoint };

struct P2p {
  int peer;
  const unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
  size_t bytes;
};

struct Op {
  Kind kind;
  const unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
  size_t count =
      0;  // elements: allreduce/broadcast the buffer, allgather the send, reducescatter the recv
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t red = ncclSum;
  int root = 0;
  std::vector<P2p> p2p;
};

// The 32 hex digits of an id from ncclGetUniqueId, or "".
std::string IdHex(const ncclUniqueId& id);
// Joins the communicator file: creates it (first rank), claims `rank`, waits for the others.
void Join(CommState* st);
size_t TypeSize(ncclDataType_t t);  // 0: a type gpusim does not simulate
// The data exchange, in rounds of at most kStage bytes per rank; false when a peer failed.
bool Exchange(CommState& c, const Op& op);
// Bytes one rank sends over its links for `op` (NCCL's ring algorithms).
double LinkBytes(const Op& op, int n);

}  // namespace codl::gpusim::nccl
