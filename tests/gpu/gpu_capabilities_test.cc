// needs_gpu is honest: without a usable CUDA device every injector declaring it is unavailable
// (with a reason), and none without the flag blames CUDA. On a GPU box the first test skips.
#include <gtest/gtest.h>

#include "injectors/core/registry.h"
#include "injectors/gpu/gpu_probe.h"

namespace codl::injectors {
namespace {

TEST(GpuCapabilitiesTest, NeedsGpuInjectorsAreUnavailableWithoutADevice) {
  const std::string reason = gpu::CudaUsable().message();
  if (reason.empty()) GTEST_SKIP() << "a CUDA device is usable here";
  const HostInfo host = DetectHost({"/tmp"});
  for (const auto& name : InjectorNames()) {
    auto inj = CreateInjector(name);
    const std::string why = inj->Unsupported(host).message();
    if (inj->descriptor().capabilities.needs_gpu) {
      EXPECT_NE(why, "") << name << " declares needs_gpu but runs without a device";
    } else {
      EXPECT_EQ(why.find("CUDA"), std::string::npos) << name << ": " << why;
    }
  }
}

TEST(GpuCapabilitiesTest, EveryGpuInjectorDeclaresNeedsGpu) {
  for (const std::string name : {"cuda_memcpy", "nccl", "mps_cotenant"}) {
    const Descriptor* d = FindDescriptor(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_TRUE(d->capabilities.needs_gpu) << name;
  }
  EXPECT_TRUE(FindDescriptor("nccl")->capabilities.collective);
  EXPECT_EQ(FindDescriptor("nccl")->capabilities.rendezvous_option, "unique_id");
  EXPECT_TRUE(FindDescriptor("mps_cotenant")->capabilities.exports_victim_env);
}

}  // namespace
}  // namespace codl::injectors
