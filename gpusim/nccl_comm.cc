#include "gpusim/nccl_comm.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "gpusim/node.h"

namespace codl::gpusim::nccl {

CommState::~CommState() {
  if (init.joinable()) init.join();
  if (shm != nullptr) munmap(shm, sizeof(CommShm));
  if (!unlinked && !path.empty()) unlink(path.c_str());
}

void CommState::Fail(ncclResult_t r, const std::string& why) {
  const int now = async.load();
  if (now != ncclSuccess && now != ncclInProgress) return;
  error = why;
  async.store(r);
}

bool CommState::Barrier() {
  const uint64_t target = ++barriers * static_cast<uint64_t>(nranks);
  shm->arrive.fetch_add(1);
  int spins = 0;
  while (shm->arrive.load() < target) {
    if (local_abort.load()) return Fail(ncclInvalidUsage, "communicator aborted"), false;
    if (const int a = shm->aborted.load(); a > 0)
      return Fail(ncclRemoteError, "rank " + std::to_string(a - 1) + " aborted the communicator"),
             false;
    if (++spins % 2000 == 0) {  // ~ every 100 ms
      for (int r = 0; r < nranks; ++r) {
        if (!ProcessAlive(shm->pids[r].load())) {
          Fail(ncclRemoteError, "rank " + std::to_string(r) + " (pid " +
                                    std::to_string(shm->pids[r].load()) + ") died");
          return false;
        }
      }
    }
    timespec ts{0, 50000};
    nanosleep(&ts, nullptr);
  }
  return true;
}

std::string IdHex(const ncclUniqueId& id) {
  const size_t n = sizeof kIdPrefix - 1;
  if (std::memcmp(id.internal, kIdPrefix, n) != 0) return "";
  std::string hex(id.internal + n, 32);
  for (char c : hex) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
  }
  return hex;
}

// Joins the communicator file: creates it (first rank), claims `rank`, waits for the others.
void Join(CommState* st) {
  const int fd = open(st->path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return st->Fail(ncclSystemError, st->path + ": " + std::strerror(errno));
  flock(fd, LOCK_EX);
  struct stat sb {};
  fstat(fd, &sb);
  const bool fresh = sb.st_size == 0;
  if (fresh && ftruncate(fd, sizeof(CommShm)) != 0) {
    close(fd);
    return st->Fail(ncclSystemError, st->path + ": " + std::strerror(errno));
  }
  void* p = mmap(nullptr, sizeof(CommShm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return st->Fail(ncclSystemError, "mmap: " + std::string(std::strerror(errno)));
  }
  st->shm = static_cast<CommShm*>(p);
  if (fresh) {
    st->shm->magic = kCommMagic;
    st->shm->nranks = st->nranks;
  }
  std::string why;
  if (st->shm->magic != kCommMagic) {
    why = "not a gpusim communicator";
  } else if (st->shm->nranks != st->nranks) {
    why = "nranks " + std::to_string(st->nranks) + " but rank 0 said " +
          std::to_string(st->shm->nranks);
  } else {
    int32_t expected = 0;
    if (!st->shm->claimed[st->rank].compare_exchange_strong(expected, 1)) {
      why = "rank " + std::to_string(st->rank) + " joined twice";
    } else {
      st->shm->pids[st->rank].store(getpid());
      if (st->shm->joined.fetch_add(1) + 1 == st->nranks) {
        unlink(st->path.c_str());  // everyone has it mapped: nothing left behind after a crash
        st->unlinked = true;
      }
    }
  }
  flock(fd, LOCK_UN);
  close(fd);
  if (!why.empty()) return st->Fail(ncclInvalidUsage, why);
  while (st->shm->joined.load() < st->nranks) {
    if (st->local_abort.load()) return st->Fail(ncclInvalidUsage, "aborted during init");
    timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
  st->unlinked = true;  // the last rank removed it
  st->async.store(ncclSuccess);
}

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;  // half, bfloat16, fp8: not here
  }
}

namespace {

template <typename T>
void ReduceT(T* dst, const std::vector<const unsigned char*>& srcs, size_t count, ncclRedOp_t op,
             int n) {
  for (size_t i = 0; i < count; ++i) {
    T acc = reinterpret_cast<const T*>(srcs[0])[i];
    for (size_t r = 1; r < srcs.size(); ++r) {
      const T v = reinterpret_cast<const T*>(srcs[r])[i];
      switch (op) {
        case ncclSum:
        case ncclAvg: acc = static_cast<T>(acc + v); break;
        case ncclProd: acc = static_cast<T>(acc * v); break;
        case ncclMax: acc = v > acc ? v : acc; break;
        case ncclMin: acc = v < acc ? v : acc; break;
        default: break;
      }
    }
    if (op == ncclAvg) acc = static_cast<T>(acc / static_cast<T>(n));
    dst[i] = acc;
  }
}

void Reduce(void* dst, const std::vector<const unsigned char*>& srcs, size_t count,
            ncclDataType_t t, ncclRedOp_t op, int n) {
  switch (t) {
    case ncclInt8: ReduceT(static_cast<int8_t*>(dst), srcs, count, op, n); break;
    case ncclUint8: ReduceT(static_cast<uint8_t*>(dst), srcs, count, op, n); break;
    case ncclInt32: ReduceT(static_cast<int32_t*>(dst), srcs, count, op, n); break;
    case ncclUint32: ReduceT(static_cast<uint32_t*>(dst), srcs, count, op, n); break;
    case ncclInt64: ReduceT(static_cast<int64_t*>(dst), srcs, count, op, n); break;
    case ncclUint64: ReduceT(static_cast<uint64_t*>(dst), srcs, count, op, n); break;
    case ncclFloat32: ReduceT(static_cast<float*>(dst), srcs, count, op, n); break;
    case ncclFloat64: ReduceT(static_cast<double*>(dst), srcs, count, op, n); break;
    default: break;
  }
}

}  // namespace

bool Exchange(CommState& c, const Op& op) {
  CommShm& s = *c.shm;
  const int n = c.nranks, me = c.rank;
  const size_t e = TypeSize(op.type);
  std::vector<const unsigned char*> srcs(static_cast<size_t>(n));
  switch (op.kind) {
    case Kind::kAllReduce:
    case Kind::kAllGather:
    case Kind::kBroadcast: {
      const size_t per = kStage / e;
      for (size_t off = 0; off < op.count; off += per) {
        const size_t cnt = std::min(per, op.count - off);
        if (op.kind != Kind::kBroadcast || me == op.root)
          std::memcpy(s.stage[me], op.send + off * e, cnt * e);
        if (!c.Barrier()) return false;
        if (op.kind == Kind::kAllReduce) {
          for (int r = 0; r < n; ++r) srcs[static_cast<size_t>(r)] = s.stage[r];
          Reduce(op.recv + off * e, srcs, cnt, op.type, op.red, n);
        } else if (op.kind == Kind::kAllGather) {
          for (int r = 0; r < n; ++r)
            std::memcpy(op.recv + (static_cast<size_t>(r) * op.count + off) * e, s.stage[r],
                        cnt * e);
        } else {
          std::memmove(op.recv + off * e, s.stage[op.root], cnt * e);
        }
        if (!c.Barrier()) return false;
      }
      return true;
    }
    case Kind::kReduceScatter: {
      const size_t per = kStage / static_cast<size_t>(n) / e;
      for (size_t off = 0; off < op.count; off += per) {
        const size_t cnt = std::min(per, op.count - off);
        for (int r = 0; r < n; ++r)
          std::memcpy(s.stage[me] + static_cast<size_t>(r) * per * e,
                      op.send + (static_cast<size_t>(r) * op.count + off) * e, cnt * e);
        if (!c.Barrier()) return false;
        for (int r = 0; r < n; ++r)
          srcs[static_cast<size_t>(r)] = s.stage[r] + static_cast<size_t>(me) * per * e;
        Reduce(op.recv + off * e, srcs, cnt, op.type, op.red, n);
        if (!c.Barrier()) return false;
      }
      return true;
    }
    case Kind::kPointToPoint: {
      const size_t slot = kStage / static_cast<size_t>(n);
      size_t most = 0;
      for (const P2p& p : op.p2p) most = std::max(most, p.bytes);
      for (size_t off = 0; off < most; off += slot) {
        for (const P2p& p : op.p2p) {
          if (p.send != nullptr && off < p.bytes)
            std::memcpy(s.stage[me] + static_cast<size_t>(p.peer) * slot, p.send + off,
                        std::min(slot, p.bytes - off));
        }
        if (!c.Barrier()) return false;
        for (const P2p& p : op.p2p) {
          if (p.recv != nullptr && off < p.bytes)
            std::memcpy(p.recv + off, s.stage[p.peer] + static_cast<size_t>(me) * slot,
                        std::min(slot, p.bytes - off));
        }
        if (!c.Barrier()) return false;
      }
      return true;
    }
  }
  return false;
}

// Bytes one rank sends over its links for `op` (NCCL's ring algorithms).
double LinkBytes(const Op& op, int n) {
  const double e = static_cast<double>(TypeSize(op.type)), k = static_cast<double>(op.count);
  switch (op.kind) {
    case Kind::kAllReduce: return 2.0 * (n - 1) / n * k * e;
    case Kind::kAllGather:
    case Kind::kReduceScatter: return (n - 1) * k * e;
    case Kind::kBroadcast: return k * e;
    case Kind::kPointToPoint: {
      double b = 0;
      for (const P2p& p : op.p2p) b += p.send != nullptr ? static_cast<double>(p.bytes) : 0;
      return b;
    }
  }
  return 0;
}

}  // namespace codl::gpusim::nccl
