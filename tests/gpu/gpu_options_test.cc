// Option tables, cross-option rules and availability of the GPU injectors, through the same
// registry calls codl-inject and the experiment validator use. Runs without a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>

#include "injectors/core/registry.h"
#include "injectors/gpu/gpu_info.h"
#include "injectors/gpu/gpu_probe.h"

namespace codl::injectors {
namespace {

std::string Validate(const std::string& injector, std::map<std::string, std::string> options) {
  return ValidateOptions(injector, options).message();
}

const std::string kHex(256, 'a');

TEST(GpuOptionsTest, AllThreeAreRegisteredWithTheirUnits) {
  const Descriptor* memcpy = FindDescriptor("cuda_memcpy");
  const Descriptor* nccl = FindDescriptor("nccl");
  const Descriptor* mps = FindDescriptor("mps_cotenant");
  ASSERT_NE(memcpy, nullptr);
  ASSERT_NE(nccl, nullptr);
  ASSERT_NE(mps, nullptr);
  EXPECT_EQ(memcpy->unit, "bytes/s");
  EXPECT_EQ(nccl->unit, "busbw bytes/s");
  EXPECT_EQ(mps->unit, "FLOP/s");
  // --help shows unit_help: the busbw factors must be there.
  EXPECT_NE(nccl->unit_help.find("allreduce 2(n-1)/n"), std::string::npos) << nccl->unit_help;
  EXPECT_NE(nccl->unit_help.find("with 1 rank the factor is 1 (algbw)"), std::string::npos);
}

TEST(GpuOptionsTest, DefaultsAreValid) {
  EXPECT_EQ(Validate("cuda_memcpy", {}), "");
  EXPECT_EQ(Validate("nccl", {}), "");
  EXPECT_EQ(Validate("mps_cotenant", {}), "");
}

TEST(GpuOptionsTest, CudaMemcpyMessages) {
  EXPECT_EQ(Validate("cuda_memcpy", {{"direction", "sideways"}}),
            "option 'direction': 'sideways' is not one of: h2d, d2h, d2d, bidir");
  EXPECT_EQ(Validate("cuda_memcpy", {{"streams", "0"}}),
            "option 'streams': 0 is out of range [1, 16]");
  EXPECT_EQ(Validate("cuda_memcpy", {{"size", "0"}}),
            "option 'size': 0 is out of range [4KiB, 16GiB]");
  EXPECT_EQ(Validate("cuda_memcpy", {{"direction", "bidir"}, {"streams", "4"}, {"size", "1GiB"}}),
            "");
  EXPECT_EQ(Validate("cuda_memcpy", {{"direction", "d2d"}, {"peer_device", "1"}}), "");
  EXPECT_EQ(Validate("cuda_memcpy", {{"direction", "h2d"}, {"peer_device", "1"}}),
            "option 'peer_device' applies to direction=d2d only (got direction=h2d)");
  EXPECT_EQ(Validate("cuda_memcpy", {{"direction", "d2d"}, {"peer_device", "0"}}),
            "option 'peer_device': 0 is `device` itself; use -1 for copies within one GPU");
  EXPECT_EQ(Validate("cuda_memcpy", {{"direction", "bidir"}, {"h2d_share", "0.99"}}),
            "option 'h2d_share': 0.99 is out of range [0.05, 0.95]");
}

TEST(GpuOptionsTest, NcclCtaLimits) {
  EXPECT_EQ(Validate("nccl", {{"max_ctas", "4"}}), "");
  EXPECT_EQ(Validate("nccl", {{"max_ctas", "65"}}),
            "option 'max_ctas': 65 is out of range [0, 64]");
  EXPECT_EQ(Validate("nccl", {{"min_ctas", "8"}, {"max_ctas", "2"}}),
            "option 'min_ctas': 8 exceeds max_ctas (2)");
}

TEST(GpuOptionsTest, MpsCotenantMessages) {
  EXPECT_EQ(Validate("mps_cotenant", {{"sm_percent", "101"}}),
            "option 'sm_percent': 101 is out of range [1, 100]");
  EXPECT_EQ(Validate("mps_cotenant", {{"duty", "1.5"}}),
            "option 'duty': 1.5 is out of range [0.01, 1]");
  EXPECT_EQ(Validate("mps_cotenant", {{"kernel", "conv"}}),
            "option 'kernel': 'conv' is not one of: fma, gemm");
  EXPECT_EQ(Validate("mps_cotenant", {{"pipe_dir", "relative/pipe"}}),
            "option 'pipe_dir': 'relative/pipe' must be an absolute path");
  const std::string long_dir = "/" + std::string(90, 'x');
  EXPECT_EQ(Validate("mps_cotenant", {{"pipe_dir", long_dir}}),
            "option 'pipe_dir': '" + long_dir +
                "' is 91 characters; MPS creates Unix sockets in it, keep it at most 80");
}

TEST(GpuOptionsTest, NcclMessages) {
  EXPECT_EQ(Validate("nccl", {{"op", "allsum"}}),
            "option 'op': 'allsum' is not one of: allreduce, allgather, reducescatter, "
            "alltoall, broadcast");
  EXPECT_EQ(Validate("nccl", {{"duty", "1.5"}}), "option 'duty': 1.5 is out of range [0.01, 1]");
  EXPECT_EQ(Validate("nccl", {{"ranks", "2"}, {"rank", "2"}, {"unique_id", kHex}}),
            "option 'rank': 2 must be less than ranks (2)");
  EXPECT_EQ(Validate("nccl", {{"ranks", "2"}, {"rank", "1"}}),
            "nccl: rank 1 of 2 needs unique_id: the value_hex of rank 0's rendezvous_publish "
            "line (the agent relays it as --set unique_id=<hex>)");
  EXPECT_EQ(Validate("nccl", {{"ranks", "2"}, {"rank", "0"}}),
            "nccl: rank 0 of 2 publishes the ncclUniqueId for the other ranks: set "
            "rendezvous_key (the name the agent relays it under) or pass unique_id");
  EXPECT_EQ(Validate("nccl", {{"ranks", "2"}, {"rank", "1"}, {"unique_id", "abc"}}),
            "option 'unique_id': expected 256 hex characters (128 bytes), got 3");
  std::string bad = kHex;
  bad[7] = 'z';
  EXPECT_EQ(Validate("nccl", {{"ranks", "2"}, {"rank", "1"}, {"unique_id", bad}}),
            "option 'unique_id': invalid hex character 'z' at offset 7");
  EXPECT_EQ(Validate("nccl",
                     {{"op", "alltoall"}, {"size", "4"}, {"ranks", "2"}, {"rendezvous_key", "k"}}),
            "option 'size': 4 bytes is too small for alltoall over 2 rank(s) (needs at least 8 "
            "bytes)");
  EXPECT_EQ(Validate("nccl", {{"ranks", "2"}, {"rank", "0"}, {"rendezvous_key", "exp/nccl"}}), "");
  EXPECT_EQ(Validate("nccl", {{"ranks", "8"}, {"rank", "5"}, {"unique_id", kHex}}), "");
}

TEST(GpuOptionsTest, RatesConvertToEachUnit) {
  auto nccl = CreateInjector("nccl");
  auto mps = CreateInjector("mps_cotenant");
  auto memcpy = CreateInjector("cuda_memcpy");
  EXPECT_EQ(*nccl->ToInjectorUnit(Rate{5e9, RateUnit::kBytesPerSecond}), 5e9);
  EXPECT_FALSE(nccl->ToInjectorUnit(Rate{5e9, RateUnit::kOpsPerSecond}).ok());
  EXPECT_EQ(*mps->ToInjectorUnit(Rate{2e13, RateUnit::kOpsPerSecond}), 2e13);
  EXPECT_FALSE(mps->ToInjectorUnit(Rate{2e13, RateUnit::kBytesPerSecond}).ok());
  EXPECT_EQ(*memcpy->ToInjectorUnit(Rate{1e9, RateUnit::kBytesPerSecond}), 1e9);
}

// The reason --list shows. With a device this host is not the CI case: nothing to compare.
TEST(GpuAvailabilityTest, UnsupportedSaysWhy) {
  const std::string cuda = gpu::CudaUsable().message();
  if (cuda.empty()) GTEST_SKIP() << "this host has a CUDA device; see gpu_device_test";
#ifdef CODL_TEST_HAVE_CUDA
  EXPECT_EQ(cuda.rfind("no CUDA device: ", 0), 0u) << cuda;
#else
  EXPECT_EQ(cuda, "built without CUDA");
#endif
  const HostInfo host = DetectHost({});
  EXPECT_EQ(CreateInjector("cuda_memcpy")->Unsupported(host).message(), cuda);
  EXPECT_EQ(CreateInjector("mps_cotenant")->Unsupported(host).message(), cuda);
#if defined(CODL_TEST_HAVE_NCCL) || !defined(CODL_TEST_HAVE_CUDA)
  EXPECT_EQ(CreateInjector("nccl")->Unsupported(host).message(), cuda);
#else
  EXPECT_EQ(CreateInjector("nccl")->Unsupported(host).message(), "built without NCCL");
#endif
}

TEST(GpuAvailabilityTest, SetupWithoutADeviceFailsCleanly) {
  if (gpu::CudaUsable().message().empty()) GTEST_SKIP() << "this host has a CUDA device";
  auto inj = CreateInjector("cuda_memcpy");
  auto values = ParseInjectorOptions(*inj, {{"size", "1MiB"}});
  ASSERT_TRUE(values.ok());
  CollectingHostServices services;
  Status s = inj->Setup(*values, DetectHost({}), services, StopToken());
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s.error().empty());
}

TEST(GpuLabelsTest, DescribeThisHost) {
  auto labels = DetectGpuLabels();
  ASSERT_TRUE(labels.count("gpu_count"));
  ASSERT_TRUE(labels.count("mps_available"));
  const std::string reason = gpu::CudaUsable().message();
  if (reason.empty()) {
    EXPECT_NE(labels["gpu_count"], "0");
    EXPECT_TRUE(labels.count("gpu_names"));
    EXPECT_TRUE(labels.count("gpu_memory_bytes"));
    EXPECT_TRUE(labels["gpu_device"] == "hardware" || labels["gpu_device"] == "simulated (gpusim)")
        << labels["gpu_device"];
    EXPECT_FALSE(labels.count("gpu_unavailable_reason"));
  } else {
    EXPECT_EQ(labels["gpu_count"], "0");
    EXPECT_EQ(labels["gpu_unavailable_reason"], reason);
    EXPECT_EQ(labels["mps_available"], "false");
    EXPECT_FALSE(labels.count("gpu_names"));
    EXPECT_FALSE(labels.count("gpu_device"));
  }
#ifdef CODL_TEST_HAVE_NCCL
  ASSERT_TRUE(labels.count("nccl_version"));
  EXPECT_TRUE(std::regex_match(labels["nccl_version"], std::regex(R"(\d+\.\d+\.\d+)")))
      << labels["nccl_version"];
#endif
#ifdef CODL_TEST_HAVE_CUDA
  ASSERT_TRUE(labels.count("cuda_runtime_version"));
  EXPECT_TRUE(std::regex_match(labels["cuda_runtime_version"], std::regex(R"(\d+\.\d+)")));
#endif
}

TEST(GpuLabelsTest, ProbeIsCachedAndLeavesNoCudaInThisProcess) {
  DetectGpuLabels();
  const auto& a = gpu::ProbeGpus();
  const auto& b = gpu::ProbeGpus();
  EXPECT_EQ(&a, &b);
  // The probe ran in a child: unless an injector's Setup used CUDA here, the driver library
  // (dlopen'ed by cudart on first use) is not even mapped into this process.
  if (!gpu::CudaUsedHere()) {
    std::ifstream maps("/proc/self/maps");
    std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("libcuda.so"), std::string::npos);
  }
}

}  // namespace
}  // namespace codl::injectors
