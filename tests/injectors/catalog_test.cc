// codl_injector_catalog: the injector sources built without CUDA, NCCL and liburing, which the
// control plane links. Every injector is there with the same descriptor and validation; the ones
// that need a missing library say so instead of running.
#include <gtest/gtest.h>

#include "injectors/core/registry.h"

namespace codl::injectors {
namespace {

TEST(InjectorCatalogTest, GpuInjectorsRegisterAndSayBuiltWithoutCuda) {
  const HostInfo host = DetectHost({"/tmp"});
  int gpu = 0;
  for (const auto& name : InjectorNames()) {
    auto inj = CreateInjector(name);
    ASSERT_NE(inj, nullptr) << name;
    EXPECT_TRUE(CheckDescriptorContract(inj->descriptor()).ok()) << name;
    if (inj->descriptor().capabilities.needs_gpu) {
      ++gpu;
      const Status why = inj->Unsupported(host);
      EXPECT_EQ(why.code(), StatusCode::kFailedPrecondition) << name;
      EXPECT_EQ(why.message(), "built without CUDA") << name;
    }
  }
  EXPECT_GT(gpu, 0);
}

// The control plane asks the catalog for setup estimates (the agent's EstimateSetup): io_uring's
// is the file set it writes (every mode, as fio lays out its files), near nothing with
// prefill=false; others have none.
TEST(InjectorCatalogTest, SetupEstimatesFollowWhatSetupPrepares) {
  const HostInfo host = DetectHost({"/tmp"});
  auto io = CreateInjector("io_uring");
  auto estimate = [&](const std::map<std::string, std::string>& given) {
    auto o = ParseInjectorOptions(*io, given);
    EXPECT_TRUE(o.ok()) << o.error();
    return o.ok() ? io->SetupEstimateS(*o, host) : -1;
  };
  const double read_1g = estimate({{"mode", "read"}, {"nr_files", "4"}, {"file_size", "256MiB"}});
  EXPECT_NEAR(read_1g, 4 * 0.05 + 1024.0 / 256, 1e-9) << "1 GiB to write at 256 MiB/s";
  EXPECT_NEAR(estimate({{"mode", "randwrite"}, {"nr_files", "4"}, {"file_size", "256MiB"}}),
              read_1g, 1e-9)
      << "write modes fill the file set too";
  EXPECT_NEAR(estimate({{"mode", "randwrite"},
                        {"nr_files", "4"},
                        {"file_size", "256MiB"},
                        {"prefill", "false"}}),
              4 * 0.05, 1e-9)
      << "prefill=false only preallocates";
  auto unfilled_read = ParseInjectorOptions(*io, {{"mode", "randread"}, {"prefill", "false"}});
  ASSERT_FALSE(unfilled_read.ok()) << "a read of an unwritten extent never reaches the device";
  EXPECT_NE(unfilled_read.error().find("option 'prefill'"), std::string::npos)
      << unfilled_read.error();
  EXPECT_LT(estimate({{"mode", "read"}, {"nr_files", "4"}, {"file_size", "64MiB"}}), read_1g);
  auto noop = CreateInjector("noop");
  auto o = ParseInjectorOptions(*noop, {});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(noop->SetupEstimateS(*o, host), 0);
}

TEST(InjectorCatalogTest, IoUringSaysBuiltWithoutLiburing) {
  EXPECT_EQ(CreateInjector("io_uring")->Unsupported(DetectHost({"/tmp"})).message(),
            "built without liburing (install liburing-dev and rebuild)");
}

// What the controller's YAML validator relies on: the same messages as codl-inject.
TEST(InjectorCatalogTest, ValidatesOptionsWithoutTheLibraries) {
  EXPECT_EQ(ValidateOption("io_uring", "queue_depth", "5000").message(),
            "option 'queue_depth': 5000 is out of range [1, 4096]");
  EXPECT_EQ(ValidateOption("nccl", "op", "allreduce").message(), "");
  EXPECT_EQ(ValidateOptions("nccl", {{"ranks", "2"}, {"rank", "1"}})
                .message()
                .rfind("nccl: rank 1 of 2 needs unique_id", 0),
            0u);
}

}  // namespace
}  // namespace codl::injectors
