// The simulated node's contention model, shared by every process that uses it (a file in
// /dev/shm, one per node name). docs/gpu.md#gpusim states the rule:
//
//   Each device has five resources: the PCIe link per direction, HBM, NVLink and the SMs. A user
//   of a resource (one copy, one kernel, one collective step) has a weight w (1, or its MPS
//   active-thread fraction on the SMs) and gets the share  w / max(1, sum of the weights of
//   every user of that resource now)  of its capacity. Bandwidth users all have w = 1, so n
//   concurrent copies each get 1/n of the link: max-min fair for users that all want the whole
//   link. The shares are re-read every millisecond, so a user that arrives or leaves mid-copy
//   changes the others' rate from then on.
//
// Counters (bytes per resource, busy time, memory in use) feed the NVML stand-in. A process
// that dies is dropped from the node by the next one that looks (its slots, its memory); the
// last process to leave removes the file.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace codl::gpusim {

enum Resource : int { kPcieH2d = 0, kPcieD2h, kHbm, kNvlink, kSm, kResourceCount };
const char* ResourceName(int r);

constexpr int kMaxDevices = 16;
constexpr int kMaxProcs = 128;
constexpr int kMaxSlots = 512;

struct Slot {
  std::atomic<int32_t> pid;  // 0 free, -1 being filled, else the user's process
  int32_t device;
  int32_t resource;
  float weight;
};

struct DeviceCounters {
  std::atomic<uint64_t> bytes[kResourceCount];    // bytes moved (kSm: FLOP)
  std::atomic<uint64_t> busy_ns[kResourceCount];  // integral of the users' shares over time
  std::atomic<uint64_t> ops;                      // runtime operations (faults count these)
  std::atomic<uint64_t> nvlink_rx_bytes;          // peer copies and collectives into this device
  std::atomic<int32_t> lost;                      // a "lost" fault fired
};

struct NodeShm {
  uint64_t magic;
  uint32_t version;
  uint32_t device_count;
  std::atomic<int32_t> procs[kMaxProcs];
  std::atomic<uint64_t> memory[kMaxProcs][kMaxDevices];  // bytes allocated, per process slot
  DeviceCounters dev[kMaxDevices];
  Slot slots[kMaxSlots];
};

class Node {
 public:
  // The node of this process: CODL_GPUSIM_NODE (a name: letters, digits, '-', '_', '.'), else
  // "default"; the file is /dev/shm/codl-gpusim-<uid>-<name>. Attaches at first use and leaves
  // at exit.
  static Node& Get();
  // The node if this process has joined it already, else nullptr (joins nothing: a process
  // that only asks about devices, like the forked probe of codl-inject --list, never joins).
  static Node* IfJoined();
  // For the NVML stand-in and the MPS control: the same node, without joining it as a user
  // when `join` is false (nothing to leave at exit).
  const std::string& path() const { return path_; }
  NodeShm* shm() const { return shm_; }
  bool ok() const { return shm_ != nullptr; }
  const std::string& error() const { return error_; }

  // Runs `units` of work on (device, resource) at `capacity` units/s, at this user's share,
  // calling step(from, to) (fractions of the whole, 0..1) for the real work of each slice
  // (a copy's bytes, a GEMM's rows). Returns the modeled seconds it took.
  double Consume(int device, int resource, double units, double capacity, float weight,
                 const std::function<void(double, double)>& step);

  // Memory accounting for this process; false when `bytes` do not fit in `limit`.
  bool Allocate(int device, uint64_t bytes, uint64_t limit);
  void Release(int device, uint64_t bytes);
  uint64_t MemoryUsed(int device);  // every live process's

  // Drops dead processes' slots and memory.
  void Reap();
  void Leave();

 private:
  Node();
  int Claim(int device, int resource, float weight);
  double WeightSum(int device, int resource);
  std::string path_, error_;
  NodeShm* shm_ = nullptr;
  int proc_index_ = -1;
  pid_t pid_ = 0;
};

bool ProcessAlive(pid_t pid);

// A Consume step over `bytes`: the slice [from, to) of them, each byte in exactly one slice.
inline std::pair<size_t, size_t> SliceOf(double from, double to, size_t bytes) {
  const auto b = static_cast<double>(bytes);
  return {static_cast<size_t>(from * b), to >= 1.0 ? bytes : static_cast<size_t>(to * b)};
}

}  // namespace codl::gpusim
