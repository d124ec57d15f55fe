// codl_injector_catalog: the injector sources built without CUDA, NCCL and liburing, which the
// control plane links. Every injector is there with the same descriptor and validation; the ones
// that need a missing library say so instead of running.
#include <gtest/gtest.h>

#include "injectors/registry.h"

namespace codl::injectors {
namespace {

TEST(InjectorCatalogTest, GpuInjectorsRegisterAndSayBuiltWithoutCuda) {
  const HostInfo host = DetectHost({"/tmp"});
  int gpu = 0;
  for (const auto& name : InjectorNames()) {
    auto inj = CreateInjector(name);
    ASSERT_NE(inj, nullptr) << name;
    EXPECT_EQ(CheckDescriptorContract(inj->descriptor()), "") << name;
    if (inj->descriptor().capabilities.needs_gpu) {
      ++gpu;
      EXPECT_EQ(inj->Unsupported(host), "built without CUDA") << name;
    }
  }
  EXPECT_GT(gpu, 0);
}

TEST(InjectorCatalogTest, IoUringSaysBuiltWithoutLiburing) {
  EXPECT_EQ(CreateInjector("io_uring")->Unsupported(DetectHost({"/tmp"})),
            "built without liburing (install liburing-dev and rebuild)");
}

// What the controller's YAML validator relies on: the same messages as codl-inject.
TEST(InjectorCatalogTest, ValidatesOptionsWithoutTheLibraries) {
  EXPECT_EQ(ValidateOption("io_uring", "queue_depth", "5000"),
            "option 'queue_depth': 5000 is out of range [1, 4096]");
  EXPECT_EQ(ValidateOption("nccl", "op", "allreduce"), "");
  EXPECT_EQ(ValidateOptions("nccl", {{"ranks", "2"}, {"rank", "1"}})
                .rfind("nccl: rank 1 of 2 needs unique_id", 0),
            0u);
}

}  // namespace
}  // namespace codl::injectors
