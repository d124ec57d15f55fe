// The no-GPU device: "device memory" is a host staging buffer and compute is the blocked sgemm.
// A host memcpy of the batch is what a CPU training job pays to move data into its tensors, and
// it contends for the same DRAM bandwidth a memcpy antagonist takes.
#include <cstdlib>
#include <cstring>

#include "victim/device.h"
#include "victim/rng.h"
#include "victim/sgemm.h"

namespace codl::victim {
namespace {

class HostDevice : public Device {
 public:
  explicit HostDevice(const DeviceConfig& c) : config_(c) {
    staging_.assign(c.h2d_bytes, 0);
    const size_t nn = static_cast<size_t>(c.gemm_dim) * c.gemm_dim;
    SplitMix64 rng(MixSeed(c.seed, 0x6e6d));
    a_.resize(nn);
    b_.resize(nn);
    c_.assign(nn, 0.0f);
    for (float& x : a_) x = rng.Symmetric();
    for (float& x : b_) x = rng.Symmetric();
    grads_.resize(c.grad_bytes / sizeof(float));
    for (float& x : grads_) x = rng.Symmetric();
  }

  std::string Name() const override { return "cpu"; }
  std::string GemmEngine() const override {
    return "cpu-sgemm x" + std::to_string(config_.compute_threads) + " thread" +
           (config_.compute_threads == 1 ? "" : "s");
  }

  void* AllocHost(size_t bytes) override {
    const size_t rounded = (bytes + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded);
    // Touch every page now, so first-touch page faults do not land in the first steps.
    if (p != nullptr) std::memset(p, 0, rounded);
    return p;
  }
  void FreeHost(void* p) override { std::free(p); }

  Status CopyToDevice(const void* src, size_t bytes) override {
    std::memcpy(staging_.data(), src, std::min(bytes, staging_.size()));
    return Status::Ok();
  }

  Status Gemm(int count) override {
    const int n = config_.gemm_dim;
    for (int i = 0; i < count; ++i) {
      Sgemm(n, n, n, a_.data(), n, b_.data(), n, c_.data(), n, config_.compute_threads);
    }
    return Status::Ok();
  }

  float* HostGradients() override { return grads_.data(); }
  Status GradientsToHost() override { return Status::Ok(); }
  Status GradientsFromHost() override { return Status::Ok(); }

 private:
  DeviceConfig config_;
  std::vector<uint8_t> staging_;
  std::vector<float> a_, b_, c_, grads_;
};

}  // namespace

Result<std::unique_ptr<Device>> MakeHostDevice(const DeviceConfig& config) {
  return std::unique_ptr<Device>(new HostDevice(config));
}

}  // namespace codl::victim
