#include "gpusim/runtime.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpusim/mps_wire.h"

namespace codl::gpusim {
namespace {

thread_local int t_device = 0;

void Worker(CUstream_st* s) {
  std::unique_lock<std::mutex> lock(s->mu);
  while (true) {
    s->cv.wait(lock, [s] { return s->quit || !s->queue.empty(); });
    if (s->queue.empty()) return;  // quit, and nothing left
    std::function<void()> work = std::move(s->queue.front());
    s->queue.pop_front();
    s->running = true;
    lock.unlock();
    work();
    lock.lock();
    s->running = false;
    if (s->queue.empty()) s->idle.notify_all();
  }
}

void StartWorker(CUstream_st* s) { s->worker = std::thread(Worker, s); }

}  // namespace

void Trace(const char* format, ...) {
  static const bool on = [] {
    const char* v = std::getenv("CODL_GPUSIM_TRACE");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  if (!on) return;
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  std::fprintf(stderr, "gpusim[%d]: %s\n", static_cast<int>(getpid()), line);
}

Runtime& Runtime::Get() {
  // Never destroyed: worker threads outlive main().
  static Runtime* runtime = [] {
    auto* r = new Runtime();
    r->JoinMps();
    return r;
  }();
  return *runtime;
}

// As the driver does when it starts: an MPS control daemon in CUDA_MPS_PIPE_DIRECTORY makes
// this process its client, with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE or the daemon's default.
void Runtime::JoinMps() {
  const int fd = MpsConnect(MpsPipeDir());
  if (fd < 0) return;
  const std::string hello = "client " + std::to_string(getpid()) + "\n";
  std::string reply;
  if (write(fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size())) {
    char buf[64];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (reply.rfind("ok ", 0) != 0) return;
  int percent = std::atoi(reply.c_str() + 3);
  if (const char* env = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"); env != nullptr) {
    const int v = std::atoi(env);
    if (v > 0 && v <= 100) percent = v;
  }
  mps_percent_ = percent > 0 && percent <= 100 ? percent : 100;
  Trace("joined the MPS daemon in %s at %d%% of the SMs", MpsPipeDir().c_str(), mps_percent_);
}

int Runtime::current() const { return t_device; }
void Runtime::set_current(int device) { t_device = device; }

cudaError_t Runtime::DeviceError(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (device < static_cast<int>(sticky_.size()) &&
      sticky_[static_cast<size_t>(device)] != cudaSuccess)
    return sticky_[static_cast<size_t>(device)];
  // A device lost in another process shows once this one has joined the node (its first copy,
  // kernel or allocation); asking about devices alone joins nothing.
  const Node* node = Node::IfJoined();
  if (node != nullptr && node->ok() && node->shm()->dev[device].lost.load() != 0)
    return cudaErrorLaunchFailure;
  return cudaSuccess;
}

cudaError_t Runtime::Operate(int device) {
  if (!valid(device)) return cudaErrorInvalidDevice;
  if (cudaError_t e = DeviceError(device); e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(mu_);
  if (ops_.size() < static_cast<size_t>(device_count())) {
    ops_.resize(static_cast<size_t>(device_count()), 0);
    sticky_.resize(static_cast<size_t>(device_count()), cudaSuccess);
  }
  const uint64_t n = ++ops_[static_cast<size_t>(device)];
  for (const FaultSpec& f : Config().faults) {
    if (f.device != device || n <= f.after_ops) continue;
    if (f.error == "sticky") {
      sticky_[static_cast<size_t>(device)] = cudaErrorIllegalAddress;
      return cudaErrorIllegalAddress;
    }
    if (Node::Get().ok()) Node::Get().shm()->dev[device].lost.store(1);
    sticky_[static_cast<size_t>(device)] = cudaErrorLaunchFailure;
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

void* Runtime::Allocate(int device, size_t bytes, cudaError_t* error) {
  *error = cudaSuccess;
  if (bytes == 0) bytes = 1;
  if (device >= 0) {
    if (cudaError_t e = Operate(device); e != cudaSuccess) {
      *error = e;
      return nullptr;
    }
    if (!Node::Get().Allocate(device, bytes, spec(device).memory_bytes)) {
      *error = cudaErrorMemoryAllocation;
      return nullptr;
    }
  }
  // Pinned host memory is resident, as cudaHostAlloc's is; device memory too up to 1 GiB (a
  // first touch inside a modeled copy would make it slower than the model). Larger device
  // blocks stay lazy, so an 80 GiB "device" fits on a small host until written.
  const bool populate = device < 0 || bytes <= (1ull << 30);
  void* p =
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (populate ? MAP_POPULATE : 0), -1, 0);
  if (p == MAP_FAILED) {
    if (device >= 0) Node::Get().Release(device, bytes);
    *error = cudaErrorMemoryAllocation;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  allocations_.push_back(Allocation{reinterpret_cast<uintptr_t>(p), bytes, device});
  return p;
}

cudaError_t Runtime::Free(void* p, bool host) {
  if (p == nullptr) return cudaSuccess;
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(allocations_.begin(), allocations_.end(), [p](const Allocation& x) {
      return x.base == reinterpret_cast<uintptr_t>(p);
    });
    if (it == allocations_.end() || (it->device < 0) != host) return cudaErrorInvalidValue;
    a = *it;
    allocations_.erase(it);
  }
  // cudaFree waits for the device's work (it may still read the block).
  if (a.device >= 0) {
    SynchronizeDevice(a.device);
    Node::Get().Release(a.device, a.size);
  }
  munmap(p, a.size);
  return cudaSuccess;
}

bool Runtime::Find(const void* p, size_t bytes, Allocation* out) const {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Allocation& a : allocations_) {
    if (addr >= a.base && addr < a.base + a.size) {
      if (addr + bytes > a.base + a.size) return false;
      *out = a;
      return true;
    }
  }
  return false;
}

CUstream_st* Runtime::DefaultStream(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (defaults_.size() < static_cast<size_t>(device_count()))
    defaults_.resize(static_cast<size_t>(device_count()), nullptr);
  CUstream_st*& s = defaults_[static_cast<size_t>(device)];
  if (s == nullptr) {
    s = new CUstream_st();
    s->device = device;
    s->legacy_default = true;
    StartWorker(s);
  }
  return s;
}

CUstream_st* Runtime::Resolve(cudaStream_t s) {
  const auto v = reinterpret_cast<uintptr_t>(s);
  if (v == 0 || v == reinterpret_cast<uintptr_t>(cudaStreamLegacy) ||
      v == reinterpret_cast<uintptr_t>(cudaStreamPerThread))
    return valid(current()) ? DefaultStream(current()) : nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return std::find(streams_.begin(), streams_.end(), s) != streams_.end() ? s : nullptr;
}

CUstream_st* Runtime::CreateStream(int device, unsigned flags) {
  auto* s = new CUstream_st();
  s->device = device;
  s->flags = flags;
  StartWorker(s);
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(s);
  return s;
}

void Runtime::DestroyStream(CUstream_st* s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.erase(std::remove(streams_.begin(), streams_.end(), s), streams_.end());
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->quit = true;  // the worker finishes what is queued, then ends
  }
  s->cv.notify_all();
  s->worker.join();
  delete s;
}

std::vector<CUstream_st*> Runtime::StreamsOf(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CUstream_st*> out;
  for (CUstream_st* s : streams_) {
    if (s->device == device) out.push_back(s);
  }
  return out;
}

void Runtime::Enqueue(CUstream_st* s, std::function<void()> work) {
  // The legacy default stream waits for every blocking stream of its device, and they for it
  // (here the host waits before queueing: stricter than CUDA, never out of order).
  if (s->legacy_default) {
    for (CUstream_st* other : StreamsOf(s->device)) {
      if ((other->flags & cudaStreamNonBlocking) == 0) Synchronize(other);
    }
  } else if ((s->flags & cudaStreamNonBlocking) == 0) {
    Synchronize(DefaultStream(s->device));
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->queue.push_back(std::move(work));
  }
  s->cv.notify_one();
}

bool Runtime::Idle(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(s->mu);
  return s->queue.empty() && !s->running;
}

void Runtime::Synchronize(CUstream_st* s) {
  std::unique_lock<std::mutex> lock(s->mu);
  s->idle.wait(lock, [s] { return s->queue.empty() && !s->running; });
}

void Runtime::SynchronizeDevice(int device) {
  Synchronize(DefaultStream(device));
  for (CUstream_st* s : StreamsOf(device)) Synchronize(s);
}

float Runtime::SmWeight() const {
  return mps_percent_ > 0 ? static_cast<float>(mps_percent_) / 100.0f : 1.0f;
}

}  // namespace codl::gpusim
