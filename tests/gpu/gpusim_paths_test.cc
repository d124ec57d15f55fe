// The GPU code's less travelled paths, on gpusim: what a user sees when a rate is in the wrong
// unit, when a node has no device, when NCCL_DEBUG is set, what the agent's telemetry says of
// a device that was lost, and a distributed codl-victim whose gradients cross the host (TCP
// ring between two processes, each with a CUDA device).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "agent/gpu_telemetry.h"
#include "agent/nvml_api.h"
#include "tests/injectors/test_util.h"

namespace codl::gpusim {
namespace {

// A config of its own for one test, on a node of its own.
class GpusimPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "gpusim-paths-" + std::to_string(getpid());
    mkdir(dir_.c_str(), 0700);
    setenv("CODL_GPUSIM_NODE", ("paths-" + std::to_string(getpid())).c_str(), 1);
  }
  void TearDown() override { unsetenv("CODL_GPUSIM_NODE"); }
  void UseConfig(const std::string& yaml) {
    std::ofstream(dir_ + "/node.yaml") << yaml;
    setenv("CODL_GPUSIM_CONFIG", (dir_ + "/node.yaml").c_str(), 1);
  }
  std::string dir_;
};

TEST_F(GpusimPaths, ARateInTheWrongUnitIsRefusedNamingTheInjectorsUnit) {
  auto mps = testing::RunProcess(
      testing::CodlInjectCmd({"mps_cotenant", "--rate", "1GiB/s", "--duration", "1s"}), 30);
  EXPECT_NE(mps.exit_code, 0);
  EXPECT_NE(mps.err.find("injector 'mps_cotenant' measures FLOP/s"), std::string::npos) << mps.err;
  auto nccl = testing::RunProcess(
      testing::CodlInjectCmd({"nccl", "--rate", "100Kops/s", "--duration", "1s"}), 30);
  EXPECT_NE(nccl.exit_code, 0);
  EXPECT_NE(nccl.err.find("injector 'nccl' measures busbw bytes/s"), std::string::npos) << nccl.err;
}

TEST_F(GpusimPaths, ANodeWithoutADeviceSaysSoWithCudasWords) {
  UseConfig("count: 0\n");
  auto run =
      testing::RunProcess(testing::CodlInjectCmd({"cuda_memcpy", "--max", "--duration", "1s"}), 30);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("no CUDA device: cudaGetDeviceCount returned 100"), std::string::npos)
      << run.err;
}

// An MPS pipe directory that cannot be made (a file in its path) is named with the system's
// reason before any daemon starts.
TEST_F(GpusimPaths, AnMpsPipeDirectoryThatCannotBeMadeIsNamed) {
  std::ofstream(dir_ + "/file") << "x";
  auto run = testing::RunProcess(
      testing::CodlInjectCmd({"mps_cotenant", "--set", "pipe_dir=" + dir_ + "/file/pipe", "--max",
                              "--duration", "1s"}),
      60);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("MPS directory '" + dir_ + "/file/pipe'"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Not a directory"), std::string::npos) << run.err;
}

// NCCL_DEBUG without NCCL_DEBUG_FILE would put NCCL's log on stdout, the agent's JSON lines:
// the injector sends it to stderr, and its records stay parseable.
TEST_F(GpusimPaths, NcclDebugKeepsStdoutForTheRecords) {
  setenv("NCCL_DEBUG", "INFO", 1);
  auto run = testing::RunProcess(
      testing::CodlInjectCmd({"nccl", "--set", "size=1MiB", "--max", "--duration", "1s", "--json"}),
      60);
  unsetenv("NCCL_DEBUG");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const auto& line : testing::Lines(run.out)) {
    EXPECT_EQ(line.front(), '{') << "not a record: " << line;
  }
}

// A device lost (gpusim's `lost` fault, NVML_ERROR_GPU_IS_LOST from then on): the agent's
// telemetry keeps the other device's figures and says why this one has none.
TEST_F(GpusimPaths, TelemetryOfALostDeviceSaysWhy) {
  UseConfig("count: 2\ndevice: {sms: 4}\nfaults: [{device: 1, after_ops: 0, error: lost}]\n");
  (void)cudaSetDevice(1);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 1 << 20), cudaErrorLaunchFailure) << "the fault: device 1 is lost";
  static const agent::NvmlApi api = agent::LoadNvmlApi();
  agent::GpuTelemetrySampler sampler(agent::InitNvml(&api));
  sampler.Start(0);
  sampler.Tick(0.2);
  sampler.Tick(0.4);
  NodeTelemetry t;
  sampler.Finish(0.5, &t);
  ASSERT_EQ(t.gpus.size(), 2u) << t.gpu_note;
  EXPECT_GT(t.gpus[0].samples, 0);
  EXPECT_TRUE(t.gpus[0].notes.empty()) << t.gpus[0].notes;
  EXPECT_NE(t.gpus[1].notes.find("GPU is lost"), std::string::npos) << t.gpus[1].notes;
  EXPECT_TRUE(std::isnan(t.gpus[1].util_mean)) << "no utilization read from a lost device";
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Two codl-victim processes (--comm tcp), each on its own simulated device: a step's gradients
// go device -> host, round the TCP ring, host -> device.
TEST_F(GpusimPaths, ADistributedVictimReducesItsDeviceGradientsOverTcp) {
  UseConfig("count: 2\ndevice: {sms: 4}\n");
  const std::string master = "127.0.0.1:" + std::to_string(FreePort());
  auto rank = [&](int r) {
    return std::vector<std::string>{std::string(std::getenv("CODL_BIN_DIR")) + "/codl-victim",
                                    "run",
                                    "--dir",
                                    dir_ + "/data",
                                    "--device",
                                    "cuda",
                                    "--comm",
                                    "tcp",
                                    "--rank",
                                    std::to_string(r),
                                    "--world-size",
                                    "2",
                                    "--master",
                                    master,
                                    "--steps",
                                    "3",
                                    "--warmup-steps",
                                    "0",
                                    "--decode-work",
                                    "0",
                                    "--samples",
                                    "8",
                                    "--sample-size",
                                    "4KiB",
                                    "--gemm-count",
                                    "0",
                                    "--allreduce-size",
                                    "64KiB"};
  };
  testing::Child rank1(rank(1));
  auto rank0 = testing::RunProcess(rank(0), 120);
  EXPECT_EQ(rank1.Wait(60), 0);
  ASSERT_EQ(rank0.exit_code, 0) << rank0.err;
  EXPECT_NE(rank0.out.find("\"device\":\"cuda:0 (H100-like (gpusim))\""), std::string::npos)
      << rank0.out;
  EXPECT_NE(rank0.out.find("tcp ring"), std::string::npos) << rank0.out;
  EXPECT_NE(rank0.out.find("comm_s"), std::string::npos) << rank0.out;
}

}  // namespace
}  // namespace codl::gpusim
