// The host allreduce: ranks are threads sharing one address space, so the collective is a
// direct reduce-scatter + all-gather through shared memory (what NCCL's and Gloo's intra-node
// shared-memory transports do, without the copies into a bounce buffer):
//   1. every rank publishes its gradients (device ranks first copy them to the host);
//   2. rank r sums chunk r of every rank's buffer into its own chunk r and divides by N;
//   3. every rank copies the other chunks from their owners.
// Each rank moves ~2x the buffer through memory per step, so the collective slows down under
// DRAM-bandwidth pressure as the real one does.
#include <algorithm>
#include <barrier>
#include <cstring>

#include "victim/device.h"

namespace codl::victim {
namespace {

class ShmCommunicator : public Communicator {
 public:
  ShmCommunicator(std::vector<Device*> devices, size_t floats)
      : devices_(std::move(devices)),
        floats_(floats),
        barrier_(static_cast<std::ptrdiff_t>(devices_.size())) {}

  std::string Name() const override {
    return "shm reduce-scatter+all-gather, " + std::to_string(devices_.size()) + " ranks";
  }

  Status Allreduce(int rank) override {
    Device* me = devices_[static_cast<size_t>(rank)];
    if (Status s = me->GradientsToHost(); !s.ok()) return s;
    const size_t n = devices_.size();
    const auto chunk = [&](size_t r) {
      return std::pair<size_t, size_t>{floats_ * r / n, floats_ * (r + 1) / n};
    };
    barrier_.arrive_and_wait();  // all gradients published
    {
      auto [lo, hi] = chunk(static_cast<size_t>(rank));
      float* mine = me->HostGradients();
      const float scale = 1.0f / static_cast<float>(n);
      for (size_t other = 0; other < n; ++other) {
        if (other == static_cast<size_t>(rank)) continue;
        const float* theirs = devices_[other]->HostGradients();
        for (size_t i = lo; i < hi; ++i) mine[i] += theirs[i];
      }
      for (size_t i = lo; i < hi; ++i) mine[i] *= scale;
    }
    barrier_.arrive_and_wait();  // every chunk reduced
    for (size_t owner = 0; owner < n; ++owner) {
      if (owner == static_cast<size_t>(rank)) continue;
      auto [lo, hi] = chunk(owner);
      std::memcpy(me->HostGradients() + lo, devices_[owner]->HostGradients() + lo,
                  (hi - lo) * sizeof(float));
    }
    // Nobody may start the next reduction (writing its chunk) while another rank still copies it.
    barrier_.arrive_and_wait();
    return me->GradientsFromHost();
  }

 private:
  std::vector<Device*> devices_;
  size_t floats_;
  std::barrier<> barrier_;
};

}  // namespace

std::unique_ptr<Communicator> MakeShmCommunicator(const std::vector<Device*>& devices,
                                                  size_t floats) {
  return std::make_unique<ShmCommunicator>(devices, floats);
}

}  // namespace codl::victim
