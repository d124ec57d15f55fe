// The real codl-inject binary (found via $CODL_BIN_DIR) on the GPU injectors: what --list and
// --help tell the agent and a person, and the exit path of a rejected option set.
#include <gtest/gtest.h>
#include <unistd.h>

#include "injectors/core/registry.h"
#include "injectors/gpu/gpu_probe.h"
#include "lib/common/json_line.h"
#include "tests/injectors/test_util.h"

namespace codl::testing {
namespace {

std::string InjectBinary() {
  const std::string path = CodlInjectPath();
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

#define REQUIRE_BINARY(var)               \
  const std::string var = InjectBinary(); \
  if (var.empty()) GTEST_SKIP() << "codl-inject not built at " << CodlInjectPath()

TEST(GpuCliTest, ListJsonShowsEachGpuInjectorsAvailability) {
  REQUIRE_BINARY(bin);
  ProcessResult r = RunProcess({bin, "--list", "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string reason = injectors::gpu::CudaUsable().message();
  int gpu_injectors = 0;
  for (const std::string& name : injectors::InjectorNames()) {  // every needs_gpu injector
    if (!injectors::FindDescriptor(name)->capabilities.needs_gpu) continue;
    ++gpu_injectors;
    SCOPED_TRACE(name);
    std::string found;
    for (const auto& line : Lines(r.out)) {
      if (line.find("\"name\":\"" + name + "\"") != std::string::npos) found = line;
    }
    ASSERT_FALSE(found.empty()) << r.out;
    if (!reason.empty()) {  // CI: no device, and the exact reason
      EXPECT_NE(found.find("\"available\":false"), std::string::npos) << found;
      std::string expected = reason;
#if defined(CODL_TEST_HAVE_CUDA) && !defined(CODL_TEST_HAVE_NCCL)
      if (name == "nccl") expected = "built without NCCL";
#endif
      EXPECT_NE(found.find("\"reason\":" + JsonEscape(expected)), std::string::npos) << found;
    }
  }
  EXPECT_GE(gpu_injectors, 3) << "cuda_memcpy, nccl, mps_cotenant declare needs_gpu";
}

TEST(GpuCliTest, NcclHelpStatesTheBusBwFactors) {
  REQUIRE_BINARY(bin);
  ProcessResult r = RunProcess({bin, "nccl", "--help"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("allreduce 2(n-1)/n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unique_id"), std::string::npos);
}

TEST(GpuCliTest, RankWithoutUniqueIdIsRefusedWithTheMessage) {
  REQUIRE_BINARY(bin);
  ProcessResult r = RunProcess(
      {bin, "nccl", "--set", "ranks=2", "--set", "rank=1", "--max", "--duration", "1s"}, 60);
  EXPECT_EQ(r.exit_code, 2);  // a usage error, before any device is touched
  EXPECT_NE(r.err.find("nccl: rank 1 of 2 needs unique_id"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace codl::testing
