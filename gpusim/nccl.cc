// libnccl.so.2 for a gpusim node: communicators of N ranks (processes, or threads of one process
// through ncclCommInitAll) that meet through a shared-memory file named by the unique id, and
// collectives that move the real data through it (sums check) and take the link model's time:
// per rank, NCCL's ring traffic (allreduce 2(n-1)/n x S, allgather and reducescatter (n-1)/n of
// the large buffer, broadcast S, send/recv their bytes) over the device's NVLink resource.
// Init may be non-blocking (ncclInProgress until every rank has joined); a rank that aborts or
// dies turns its peers' pending collectives into an asynchronous ncclRemoteError.
// Limits (docs/gpu.md#gpusim): up to 8 ranks; grouped send/recv in which every rank takes part
// with equal counts (alltoall, as CoDL issues it); float, double, int and byte types.
#include <nccl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpusim/nccl_comm.h"
#include "gpusim/runtime.h"

using codl::gpusim::Allocation;
using codl::gpusim::Node;
using codl::gpusim::ProcessAlive;
using codl::gpusim::Runtime;

using namespace codl::gpusim::nccl;  // NOLINT: this file is its API

namespace {

thread_local std::string t_last_error;

}  // namespace

struct ncclComm {
  std::shared_ptr<CommState> st;
};

namespace {

void Execute(const std::shared_ptr<CommState>& st, const Op& op) {
  std::lock_guard<std::mutex> lock(st->op_mu);
  if (st->async.load() != ncclSuccess) return;  // a failed communicator does nothing more
  Runtime& rt = Runtime::Get();
  const codl::gpusim::DeviceSpec& spec = rt.spec(st->device);
  Node& node = Node::Get();
  if (st->nranks == 1) {
    const double bytes =
        op.kind == Kind::kPointToPoint ? 0 : static_cast<double>(op.count * TypeSize(op.type));
    const unsigned char* from =
        op.kind == Kind::kPointToPoint && !op.p2p.empty() ? op.p2p[0].send : op.send;
    if (op.kind != Kind::kPointToPoint && from != op.recv) {
      node.Consume(st->device, codl::gpusim::kHbm, 2 * bytes, spec.hbm_bps, 1.0f,
                   [&](double a, double b) {
                     const auto [lo, hi] = codl::gpusim::SliceOf(a, b, static_cast<size_t>(bytes));
                     if (hi > lo) std::memmove(op.recv + lo, from + lo, hi - lo);
                   });
    } else if (op.kind == Kind::kPointToPoint) {
      for (const P2p& p : op.p2p) {
        if (p.recv != nullptr) {
          for (const P2p& q : op.p2p) {
            if (q.send != nullptr) std::memmove(p.recv, q.send, std::min(p.bytes, q.bytes));
          }
        }
      }
    }
    return;
  }
  // The collective holds its share of the link from its first byte: the data exchange runs in
  // the first slice of the modeled transfer, not before it.
  const double bytes = LinkBytes(op, st->nranks);
  bool exchanged = false;
  node.Consume(st->device, codl::gpusim::kNvlink, bytes, spec.nvlink_bps, 1.0f,
               [&](double from, double) {
                 if (from == 0) exchanged = Exchange(*st, op);
               });
  if (exchanged && node.ok())
    node.shm()->dev[st->device].nvlink_rx_bytes.fetch_add(static_cast<uint64_t>(bytes));
}

ncclResult_t Usage(const std::string& why) {
  t_last_error = why;
  return ncclInvalidArgument;
}

ncclResult_t CheckBuffer(const CommState& st, const void* p, size_t bytes, const char* what) {
  if (bytes == 0) return ncclSuccess;
  Allocation a;
  if (p == nullptr || !Runtime::Get().Find(p, bytes, &a) || a.device != st.device)
    return Usage(std::string(what) + " is not a device pointer of cuda:" +
                 std::to_string(st.device) + " holding the whole buffer");
  return ncclSuccess;
}

ncclResult_t Enqueue(ncclComm_t comm, Op op, cudaStream_t stream) {
  if (comm == nullptr) return Usage("comm is NULL");
  const std::shared_ptr<CommState> st = comm->st;
  if (const int a = st->async.load(); a != ncclSuccess) {
    t_last_error = a == ncclInProgress ? "communicator still initializing" : st->error;
    return a == ncclInProgress ? ncclInvalidUsage : static_cast<ncclResult_t>(a);
  }
  if (TypeSize(op.type) == 0)
    return Usage("datatype " + std::to_string(op.type) + " is not simulated");
  if (op.red < ncclSum || op.red > ncclAvg)
    return Usage("reduction op " + std::to_string(op.red) + " is not simulated");
  Runtime& rt = Runtime::Get();
  CUstream_st* s = rt.Resolve(stream);
  if (s == nullptr) return Usage("invalid stream");
  if (rt.Operate(st->device) != cudaSuccess) {
    t_last_error = "CUDA error on cuda:" + std::to_string(st->device);
    return ncclUnhandledCudaError;
  }
  rt.Enqueue(s, [st, op] { Execute(st, op); });
  return ncclSuccess;
}

// A collective's buffers must be this rank's device memory, whole: `send_parts` and
// `recv_parts` are the buffers' sizes in units of count x type (-1: nranks of them; 0: unused).
ncclResult_t Collective(ncclComm_t comm, const Op& op, int send_parts, int recv_parts,
                        cudaStream_t stream) {
  if (comm == nullptr) return Usage("comm is NULL");
  const size_t bytes = op.count * TypeSize(op.type);
  const auto parts = [&](int p) {
    return p < 0 ? static_cast<size_t>(comm->st->nranks) : static_cast<size_t>(p);
  };
  if (send_parts != 0) {
    if (ncclResult_t r = CheckBuffer(*comm->st, op.send, bytes * parts(send_parts), "sendbuff");
        r != ncclSuccess)
      return r;
  }
  if (ncclResult_t r = CheckBuffer(*comm->st, op.recv, bytes * parts(recv_parts), "recvbuff");
      r != ncclSuccess)
    return r;
  return Enqueue(comm, op, stream);
}

const unsigned char* Bytes(const void* p) { return static_cast<const unsigned char*>(p); }
unsigned char* Bytes(void* p) { return static_cast<unsigned char*>(p); }

// Grouped calls (ncclGroupStart/End) of this thread, by communicator.
thread_local int t_group_depth = 0;
thread_local std::vector<std::pair<ncclComm_t, std::pair<P2p, cudaStream_t>>> t_group;

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr && !comm->st->error.empty()) t_last_error = comm->st->error;
  return t_last_error.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return Usage("uniqueId is NULL");
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) return ncclSystemError;
  std::memset(id, 0, sizeof *id);
  std::string text = kIdPrefix;
  char hex[3];
  for (unsigned char b : rnd) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    text += hex;
  }
  std::memcpy(id->internal, text.data(), text.size());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  if (comm == nullptr) return Usage("comm is NULL");
  *comm = nullptr;
  if (nranks < 1 || nranks > kMaxRanks)
    return Usage("nranks " + std::to_string(nranks) + ": 1 to 8 here");
  if (rank < 0 || rank >= nranks) return Usage("rank " + std::to_string(rank) + " out of range");
  const std::string hex = IdHex(id);
  if (hex.empty()) return Usage("the unique id is not from this NCCL (gpusim)");
  Runtime& rt = Runtime::Get();
  const int device = rt.current();
  if (!rt.valid(device) || rt.DeviceError(device) != cudaSuccess) {
    t_last_error = "no usable CUDA device";
    return ncclUnhandledCudaError;
  }
  auto st = std::make_shared<CommState>();
  st->rank = rank;
  st->nranks = nranks;
  st->device = device;
  st->path = "/dev/shm/codl-gpusim-nccl-" + std::to_string(getuid()) + "-" + hex;
  const bool blocking = config == nullptr || config->blocking != 0;
  *comm = new ncclComm{st};
  if (blocking) {
    Join(st.get());
    return static_cast<ncclResult_t>(st->async.load());
  }
  // The state joins this thread when it goes (~CommState), so the thread never outlives it.
  st->init = std::thread(Join, st.get());
  return ncclInProgress;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev < 1) return Usage("comms is NULL or ndev < 1");
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  std::vector<std::thread> threads;
  std::vector<ncclResult_t> results(static_cast<size_t>(ndev), ncclSuccess);
  const int saved = Runtime::Get().current();
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      Runtime::Get().set_current(devlist != nullptr ? devlist[i] : i);
      results[static_cast<size_t>(i)] = ncclCommInitRank(&comms[i], ndev, id, i);
    });
  }
  for (auto& t : threads) t.join();
  Runtime::Get().set_current(saved);
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (comm == nullptr || state == nullptr) return Usage("comm or asyncError is NULL");
  *state = static_cast<ncclResult_t>(comm->st->async.load());
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return Usage("comm is NULL");
  return ncclSuccess;  // collectives complete on their streams; nothing is left to flush
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return Usage("comm is NULL");
  comm->st->local_abort.store(true);  // an init still waiting for peers ends
  delete comm;                        // queued collectives keep the state until they ran
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  const std::shared_ptr<CommState> st = comm->st;
  st->local_abort.store(true);
  if (st->shm != nullptr) {
    int32_t none = 0;
    st->shm->aborted.compare_exchange_strong(none, st->rank + 1);
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Collective(comm, Op{Kind::kAllReduce, Bytes(send), Bytes(recv), count, type, op, 0, {}}, 1,
                    1, stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
  return Collective(comm,
                    Op{Kind::kAllGather, Bytes(send), Bytes(recv), count, type, ncclSum, 0, {}}, 1,
                    -1, stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Collective(comm,
                    Op{Kind::kReduceScatter, Bytes(send), Bytes(recv), count, type, op, 0, {}}, -1,
                    1, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
  if (comm != nullptr && (root < 0 || root >= comm->st->nranks)) return Usage("root out of range");
  const bool sends = comm != nullptr && comm->st->rank == root;
  return Collective(comm,
                    Op{Kind::kBroadcast, Bytes(send), Bytes(recv), count, type, ncclSum, root, {}},
                    sends ? 1 : 0, 1, stream);
}

ncclResult_t ncclGroupStart(void) {
  ++t_group_depth;
  return ncclSuccess;
}

namespace {
ncclResult_t PointToPoint(ncclComm_t comm, P2p p, cudaStream_t stream) {
  if (comm == nullptr) return Usage("comm is NULL");
  if (p.peer < 0 || p.peer >= comm->st->nranks) return Usage("peer out of range");
  const void* buf = p.send != nullptr ? static_cast<const void*>(p.send) : p.recv;
  if (ncclResult_t r = CheckBuffer(*comm->st, buf, p.bytes, p.send ? "sendbuff" : "recvbuff");
      r != ncclSuccess)
    return r;
  if (t_group_depth > 0) {
    t_group.push_back({comm, {p, stream}});
    return ncclSuccess;
  }
  Op o{Kind::kPointToPoint, nullptr, nullptr, 0, ncclUint8, ncclSum, 0, {p}};
  return Enqueue(comm, o, stream);
}
}  // namespace

ncclResult_t ncclGroupEnd(void) {
  if (t_group_depth == 0) return Usage("ncclGroupEnd without ncclGroupStart");
  if (--t_group_depth > 0) return ncclSuccess;
  auto calls = std::move(t_group);
  t_group.clear();
  ncclResult_t result = ncclSuccess;
  // One operation per communicator (and stream), holding its sends and receives.
  while (!calls.empty()) {
    const ncclComm_t comm = calls.front().first;
    const cudaStream_t stream = calls.front().second.second;
    Op o{Kind::kPointToPoint, nullptr, nullptr, 0, ncclUint8, ncclSum, 0, {}};
    for (auto it = calls.begin(); it != calls.end();) {
      if (it->first == comm) {
        o.p2p.push_back(it->second.first);
        it = calls.erase(it);
      } else {
        ++it;
      }
    }
    if (ncclResult_t r = Enqueue(comm, o, stream); r != ncclSuccess && result == ncclSuccess)
      result = r;
  }
  return result;
}

ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return PointToPoint(
      comm, P2p{peer, static_cast<const unsigned char*>(send), nullptr, count * TypeSize(type)},
      stream);
}

ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return PointToPoint(
      comm, P2p{peer, nullptr, static_cast<unsigned char*>(recv), count * TypeSize(type)}, stream);
}

}  // extern "C"
