#include "gpusim/node.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "gpusim/config.h"

namespace codl::gpusim {
namespace {

constexpr uint64_t kMagic = 0x636f646c6770736dull;  // "codlgpsm"
constexpr uint32_t kVersion = 1;
constexpr double kQuantumS = 1e-3;  // shares are re-read this often
constexpr double kMaxLagS = 2e-3;   // a late user catches up at most this much
constexpr double kCarryS = 2e-4;    // a thread's wake-up latency, at most

double NowS() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void SleepUntil(double t) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t);
  ts.tv_nsec = static_cast<long>((t - static_cast<double>(ts.tv_sec)) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::atomic<double> g_last_reap{0};

}  // namespace

const char* ResourceName(int r) {
  static const char* const kNames[] = {"pcie_h2d", "pcie_d2h", "hbm", "nvlink", "sm"};
  return r >= 0 && r < kResourceCount ? kNames[r] : "?";
}

bool ProcessAlive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

namespace {
std::atomic<Node*> g_joined{nullptr};
}  // namespace

Node& Node::Get() {
  // Never destroyed: stream threads may still use it while the process exits.
  static Node* node = [] {
    auto* n = new Node();
    std::atexit([] { Node::Get().Leave(); });
    g_joined.store(n);
    return n;
  }();
  return *node;
}

Node* Node::IfJoined() { return g_joined.load(); }

Node::Node() {
  pid_ = getpid();
  const char* env = std::getenv("CODL_GPUSIM_NODE");
  const std::string name = env != nullptr && *env != '\0' ? env : "default";
  if (!ValidName(name)) {
    error_ = "CODL_GPUSIM_NODE='" + name + "': use 1-64 letters, digits, '-', '_' or '.'";
    return;
  }
  path_ = "/dev/shm/codl-gpusim-" + std::to_string(getuid()) + "-" + name;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      error_ = path_ + ": " + std::strerror(errno);
      return;
    }
    flock(fd, LOCK_EX);
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_nlink == 0) {  // the last user removed it meanwhile
      close(fd);
      continue;
    }
    const bool fresh = st.st_size == 0;
    if (fresh && ftruncate(fd, sizeof(NodeShm)) != 0) {
      error_ = path_ + ": " + std::strerror(errno);
      close(fd);
      return;
    }
    if (!fresh && static_cast<size_t>(st.st_size) != sizeof(NodeShm)) {
      error_ =
          path_ + ": not a gpusim node of this version (size " + std::to_string(st.st_size) + ")";
      close(fd);
      return;
    }
    void* p = mmap(nullptr, sizeof(NodeShm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      error_ = path_ + ": mmap: " + std::strerror(errno);
      close(fd);
      return;
    }
    shm_ = static_cast<NodeShm*>(p);
    if (fresh) {
      shm_->magic = kMagic;
      shm_->version = kVersion;
      shm_->device_count = static_cast<uint32_t>(Config().devices.size());
    } else if (shm_->magic != kMagic || shm_->version != kVersion) {
      error_ = path_ + ": not a gpusim node of this version";
      munmap(p, sizeof(NodeShm));
      shm_ = nullptr;
      close(fd);
      return;
    }
    Reap();
    for (int i = 0; i < kMaxProcs; ++i) {
      int32_t expected = 0;
      if (shm_->procs[i].compare_exchange_strong(expected, pid_)) {
        proc_index_ = i;
        for (auto& m : shm_->memory[i]) m.store(0);
        break;
      }
    }
    flock(fd, LOCK_UN);
    close(fd);
    if (proc_index_ < 0) {
      error_ = path_ + ": more than " + std::to_string(kMaxProcs) + " processes on the node";
      shm_ = nullptr;
    }
    return;
  }
  error_ = path_ + ": kept disappearing";
}

void Node::Reap() {
  if (shm_ == nullptr) return;
  for (int i = 0; i < kMaxProcs; ++i) {
    const int32_t p = shm_->procs[i].load();
    if (p > 0 && !ProcessAlive(p)) {
      for (auto& m : shm_->memory[i]) m.store(0);
      int32_t expected = p;
      shm_->procs[i].compare_exchange_strong(expected, 0);
    }
  }
  for (Slot& s : shm_->slots) {
    int32_t p = s.pid.load();
    if (p > 0 && !ProcessAlive(p)) s.pid.compare_exchange_strong(p, 0);
  }
}

void Node::Leave() {
  if (shm_ == nullptr || proc_index_ < 0 || getpid() != pid_) return;  // a forked child: not ours
  const int fd = open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) flock(fd, LOCK_EX);
  for (Slot& s : shm_->slots) {
    int32_t p = pid_;
    s.pid.compare_exchange_strong(p, 0);
  }
  for (auto& m : shm_->memory[proc_index_]) m.store(0);
  shm_->procs[proc_index_].store(0);
  proc_index_ = -1;
  Reap();
  bool anyone = false;
  for (const auto& p : shm_->procs) anyone = anyone || p.load() > 0;
  if (!anyone) unlink(path_.c_str());
  if (fd >= 0) close(fd);  // releases the lock
}

int Node::Claim(int device, int resource, float weight) {
  for (int i = 0; i < kMaxSlots; ++i) {
    Slot& s = shm_->slots[i];
    int32_t expected = 0;
    if (s.pid.compare_exchange_strong(expected, -1)) {
      s.device = device;
      s.resource = resource;
      s.weight = weight;
      s.pid.store(pid_, std::memory_order_release);
      return i;
    }
  }
  return -1;  // a full table: this user runs uncounted (at full rate)
}

double Node::WeightSum(int device, int resource) {
  double sum = 0;
  for (const Slot& s : shm_->slots) {
    if (s.pid.load(std::memory_order_acquire) > 0 && s.device == device && s.resource == resource)
      sum += s.weight;
  }
  return sum;
}

double Node::Consume(int device, int resource, double units, double capacity, float weight,
                     const std::function<void(double, double)>& step) {
  if (shm_ == nullptr || units <= 0 || capacity <= 0) {
    if (step) step(0, 1);
    return 0;
  }
  if (const double now = NowS(); now - g_last_reap.load() > 1.0) {
    g_last_reap.store(now);
    Reap();
  }
  DeviceCounters& c = shm_->dev[device];
  const int slot = Claim(device, resource, weight);
  const double start = NowS();
  // The modeled clock of this user. Work queued back to back on one stream (one thread) starts
  // where the previous piece ended in the model, not when its thread woke up: a wake-up's
  // latency would otherwise be lost once per operation (~90 us, 6 % of a 1.4 ms copy).
  thread_local double t_previous_end = 0;
  // Only a wake-up's worth (kCarryS): a real idle gap between two operations stays idle.
  double t = start - t_previous_end < kCarryS ? t_previous_end : start;
  double done = 0;
  while (done < units) {
    const double sum = slot >= 0 ? WeightSum(device, resource) : weight;
    const double share = weight / std::max(1.0, sum);
    const double rate = capacity * share;
    const double slice = std::min(units - done, rate * kQuantumS);
    if (step) step(done / units, (done + slice) / units);
    const double dt = slice / rate;
    t = std::max(t, NowS() - kMaxLagS) + dt;
    c.busy_ns[resource].fetch_add(static_cast<uint64_t>(dt * share * 1e9));
    c.bytes[resource].fetch_add(static_cast<uint64_t>(slice));
    done += slice;
    SleepUntil(t);
  }
  if (slot >= 0) shm_->slots[slot].pid.store(0, std::memory_order_release);
  t_previous_end = t;
  return NowS() - start;
}

bool Node::Allocate(int device, uint64_t bytes, uint64_t limit) {
  if (shm_ == nullptr || proc_index_ < 0) return true;
  if (MemoryUsed(device) + bytes > limit) return false;
  shm_->memory[proc_index_][device].fetch_add(bytes);
  return true;
}

void Node::Release(int device, uint64_t bytes) {
  if (shm_ == nullptr || proc_index_ < 0) return;
  auto& m = shm_->memory[proc_index_][device];
  uint64_t cur = m.load();
  while (!m.compare_exchange_weak(cur, cur >= bytes ? cur - bytes : 0)) {
  }
}

uint64_t Node::MemoryUsed(int device) {
  if (shm_ == nullptr) return 0;
  uint64_t sum = 0;
  for (int i = 0; i < kMaxProcs; ++i) {
    if (shm_->procs[i].load() > 0) sum += shm_->memory[i][device].load();
  }
  return sum;
}

}  // namespace codl::gpusim
