// gpusim, the CPU stand-in for a CUDA node (gpusim/, docs/gpu.md#gpusim): its config, the CUDA
// runtime's semantics CoDL relies on (copies move the bytes in the modeled time, stream order,
// cudaErrorNotReady, errors), the contention model's fair share, injected faults as CoDL's
// binaries meet them, NCCL collectives with real data, NVML counters and the MPS control.
// Runs on the CI config (tests/gpu/gpusim_ci.yaml: 2 devices, defaults otherwise).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "gpusim/config.h"
#include "gpusim/node.h"
#include "lib/gpu/nccl_loader.h"
#include "tests/injectors/test_util.h"

namespace codl::gpusim {
namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(GpusimConfig, DefaultIsTwoH100LikeDevices) {
  const NodeConfig c = DefaultConfig();
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].name, "H100-like (gpusim)");
  EXPECT_EQ(c.devices[0].sms, 132);
  EXPECT_DOUBLE_EQ(c.devices[0].pcie_h2d_bps, 2e9);
}

TEST(GpusimConfig, ParsesDevicesAndFaults) {
  NodeConfig c;
  std::string error;
  ASSERT_TRUE(
      ParseConfig("count: 3\ndevice: {sms: 8, hbm_gbps: 10, compute_capability: '8.0'}\n"
                  "faults: [{device: 1, after_ops: 5, error: lost}]\n",
                  "t.yaml", &c, &error))
      << error;
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.devices[2].sms, 8);
  EXPECT_EQ(c.devices[2].cc_major, 8);
  EXPECT_DOUBLE_EQ(c.devices[1].hbm_bps, 10e9);
  ASSERT_EQ(c.faults.size(), 1u);
  EXPECT_EQ(c.faults[0].error, "lost");
  ASSERT_TRUE(ParseConfig("{\"devices\": [{\"name\": \"a\"}, {\"name\": \"b\", \"sms\": 4}]}",
                          "t.json", &c, &error))
      << error;
  EXPECT_EQ(c.devices[1].name, "b");
  EXPECT_EQ(c.devices[1].sms, 4);
}

TEST(GpusimConfig, BadInputNamesTheKeyAndTheLine) {
  NodeConfig c;
  std::string error;
  EXPECT_FALSE(ParseConfig("count: 2\ndevice:\n  pcie_gbps: 3\n", "n.yaml", &c, &error));
  EXPECT_NE(error.find("n.yaml"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown device key 'pcie_gbps'"), std::string::npos) << error;
  EXPECT_NE(error.find("line 3"), std::string::npos) << error;
  EXPECT_FALSE(ParseConfig("device: {sms: 0}\n", "n.yaml", &c, &error));
  EXPECT_NE(error.find("'sms': 0 is out of range"), std::string::npos) << error;
  EXPECT_FALSE(ParseConfig("faults: [{device: 0, error: melted}]\n", "n.yaml", &c, &error));
  EXPECT_NE(error.find("not sticky or lost"), std::string::npos) << error;
  EXPECT_FALSE(ParseConfig("count: 1\ndevices: [{}, {}]\n", "n.yaml", &c, &error));
  EXPECT_FALSE(ParseConfig("[1, 2]", "n.yaml", &c, &error));
}

TEST(GpusimRuntime, DevicesPropertiesAndErrors) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2);
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
  EXPECT_NE(std::string(p.name).find("gpusim"), std::string::npos) << "the stand-in names itself";
  EXPECT_EQ(cudaSetDevice(7), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "reading the error clears it";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  void* big = nullptr;
  EXPECT_EQ(cudaMalloc(&big, p.totalGlobalMem + 1), cudaErrorMemoryAllocation);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  std::vector<char> host(1 << 20);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data(), host.size(), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue)
      << "a host destination is no device memory";
  EXPECT_EQ(cudaMemcpy(d, host.data(), 2u << 20, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "past the end of the allocation";
  size_t free_b = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
  EXPECT_EQ(total, p.totalGlobalMem);
  EXPECT_LE(free_b, total - (1 << 20));
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue) << "freed twice";
}

// 64 MiB host-to-device: the bytes arrive, in the modeled time (2 GB/s: 33.6 ms); the stream
// reports cudaErrorNotReady until then, and the events time it.
TEST(GpusimRuntime, CopiesMoveTheBytesInTheModeledTimeInStreamOrder) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const size_t bytes = 64u << 20;
  void *host = nullptr, *dev = nullptr, *back = nullptr;
  ASSERT_EQ(cudaHostAlloc(&host, bytes, cudaHostAllocPortable), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&back, bytes, cudaHostAllocPortable), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
  for (size_t i = 0; i < bytes; ++i)
    static_cast<unsigned char*>(host)[i] = static_cast<unsigned char>(i * 7);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  const double t0 = Seconds();
  ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(back, dev, bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaEventQuery(b), cudaErrorNotReady);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not ready is no error";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const double took = Seconds() - t0;
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  const double model = 2.0 * static_cast<double>(bytes) / 2e9;  // h2d then d2h, 2 GB/s each
  EXPECT_GE(took, 0.97 * model);
  EXPECT_NEAR(ms * 1e-3, model, 0.25 * model);
  EXPECT_EQ(std::memcmp(host, back, bytes), 0) << "the bytes went there and back";
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
  cudaFree(dev);
  cudaFreeHost(host);
  cudaFreeHost(back);
}

// Two copies on one link at once each get half of it (w / sum w); a copy on the other direction
// is not slowed.
TEST(GpusimModel, ConcurrentCopiesShareTheLinkEqually) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  const size_t bytes = 32u << 20;
  std::vector<void*> host(3), dev(3);
  std::vector<cudaStream_t> s(3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cudaHostAlloc(&host[i], bytes, 0), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dev[i], bytes), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking), cudaSuccess);
  }
  // The model is exact; a copy's CPU time (a loaded 2-core box) can only add to it.
  const double model = static_cast<double>(bytes) / 2e9;
  double t0 = Seconds();
  ASSERT_EQ(cudaMemcpyAsync(dev[0], host[0], bytes, cudaMemcpyHostToDevice, s[0]), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s[0]), cudaSuccess);
  const double alone = Seconds() - t0;
  t0 = Seconds();
  ASSERT_EQ(cudaMemcpyAsync(dev[0], host[0], bytes, cudaMemcpyHostToDevice, s[0]), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev[1], host[1], bytes, cudaMemcpyHostToDevice, s[1]), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host[2], dev[2], bytes, cudaMemcpyDeviceToHost, s[2]), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s[2]), cudaSuccess);
  const double other_direction = Seconds() - t0;
  ASSERT_EQ(cudaStreamSynchronize(s[0]), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s[1]), cudaSuccess);
  const double shared = Seconds() - t0;
  EXPECT_GE(alone, 0.97 * model);
  EXPECT_LT(alone, 1.5 * model);
  EXPECT_GE(shared, 0.97 * 2 * model) << "two copies on one link: half each";
  EXPECT_LT(shared, 1.5 * 2 * model);
  EXPECT_GE(other_direction, 0.97 * model);
  EXPECT_LT(other_direction, 1.5 * model) << "D2H has its own link";
  for (int i = 0; i < 3; ++i) {
    cudaStreamDestroy(s[i]);
    cudaFree(dev[i]);
    cudaFreeHost(host[i]);
  }
}

// NVML sees what the model moved: PCIe RX bytes and the memory in use.
TEST(GpusimNvml, CountsTheModelsBytesAndMemory) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  using Init = int (*)();
  using Handle = int (*)(unsigned, void**);
  struct Memory {
    unsigned long long total, free, used;
  };
  using Mem = int (*)(void*, Memory*);
  struct Field {
    unsigned id, scope;
    long long ts, lat;
    int type, ret;
    unsigned long long v;
  };
  using Fields = int (*)(void*, int, Field*);
  auto init = reinterpret_cast<Init>(dlsym(h, "nvmlInit_v2"));
  auto handle = reinterpret_cast<Handle>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
  auto mem = reinterpret_cast<Mem>(dlsym(h, "nvmlDeviceGetMemoryInfo"));
  auto fields = reinterpret_cast<Fields>(dlsym(h, "nvmlDeviceGetFieldValues"));
  ASSERT_TRUE(init && handle && mem && fields);
  ASSERT_EQ(init(), 0);
  void* d0 = nullptr;
  ASSERT_EQ(handle(0, &d0), 0);
  Field f{198, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(fields(d0, 1, &f), 0);
  const unsigned long long before = f.v;
  Memory m0{};
  ASSERT_EQ(mem(d0, &m0), 0);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const size_t bytes = 8u << 20;
  void *host = nullptr, *dev = nullptr;
  ASSERT_EQ(cudaHostAlloc(&host, bytes, 0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  Memory m1{};
  ASSERT_EQ(mem(d0, &m1), 0);
  ASSERT_EQ(fields(d0, 1, &f), 0);
  EXPECT_EQ(f.ret, 0);
  EXPECT_EQ(f.v - before, bytes) << "PCIe RX counts the H2D bytes";
  EXPECT_EQ(m1.used - m0.used, bytes);
  cudaFree(dev);
  cudaFreeHost(host);
}

// NCCL on two ranks of this process (ncclCommInitAll, as codl-victim uses it): the data is
// reduced, gathered and scattered for real.
TEST(GpusimNccl, CollectivesMoveRealData) {
  const auto& nccl = gpu_loaders::Nccl();
  ASSERT_TRUE(nccl.error.empty()) << nccl.error;
  ncclComm_t comms[2] = {nullptr, nullptr};
  const int devs[2] = {0, 1};
  ASSERT_EQ(nccl.CommInitAll(comms, 2, devs), ncclSuccess);
  const size_t count = 3u << 20;  // more than one 4 MiB round
  std::vector<std::vector<float>> results(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      cudaSetDevice(r);
      float *send = nullptr, *recv = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&send), count * sizeof(float) * 2);
      cudaMalloc(reinterpret_cast<void**>(&recv), count * sizeof(float) * 2);
      std::vector<float> mine(count);
      for (size_t i = 0; i < count; ++i) mine[i] = static_cast<float>((r + 1) * (i % 1000));
      cudaMemcpy(send, mine.data(), count * sizeof(float), cudaMemcpyHostToDevice);
      cudaStream_t s = nullptr;
      cudaStreamCreate(&s);
      EXPECT_EQ(nccl.AllReduce(send, recv, count, ncclFloat, ncclSum, comms[r], s), ncclSuccess);
      EXPECT_EQ(nccl.AllGather(send, recv + count, count / 2, ncclFloat, comms[r], s), ncclSuccess);
      cudaStreamSynchronize(s);
      results[static_cast<size_t>(r)].resize(count * 2);
      cudaMemcpy(results[static_cast<size_t>(r)].data(), recv, count * 2 * sizeof(float),
                 cudaMemcpyDeviceToHost);
      ncclResult_t state = ncclInProgress;
      EXPECT_EQ(nccl.CommGetAsyncError(comms[r], &state), ncclSuccess);
      EXPECT_EQ(state, ncclSuccess);
      cudaStreamDestroy(s);
      cudaFree(send);
      cudaFree(recv);
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    const auto& got = results[static_cast<size_t>(r)];
    for (size_t i : {size_t{0}, size_t{999}, count / 2, count - 1})
      EXPECT_FLOAT_EQ(got[i], 3.0f * static_cast<float>(i % 1000)) << "allreduce sum at " << i;
    // allgather of the first half of each rank's buffer: rank 0's, then rank 1's
    EXPECT_FLOAT_EQ(got[count + 999], 999.0f);
    EXPECT_FLOAT_EQ(got[count + count / 2 + 999], 2.0f * 999.0f);
  }
  for (ncclComm_t c : comms) nccl.CommDestroy(c);
}

// A rank that never comes leaves a non-blocking init in progress; an abort by a peer turns a
// pending collective into an asynchronous remote error.
TEST(GpusimNccl, InitWaitsForPeersAndAnAbortReachesThem) {
  const auto& nccl = gpu_loaders::Nccl();
  ASSERT_TRUE(nccl.error.empty()) << nccl.error;
  ncclUniqueId id;
  ASSERT_EQ(nccl.GetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t c0 = nullptr, c1 = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(nccl.CommInitRankConfig(&c0, 2, id, 0, &config), ncclInProgress);
  ncclResult_t state = ncclSuccess;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(nccl.CommGetAsyncError(c0, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress) << "rank 1 has not joined";
  std::thread r1([&] {
    cudaSetDevice(1);
    EXPECT_EQ(nccl.CommInitRankConfig(&c1, 2, id, 1, nullptr), ncclSuccess);
  });
  r1.join();
  for (int i = 0; i < 1000 && state == ncclInProgress; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    nccl.CommGetAsyncError(c0, &state);
  }
  ASSERT_EQ(state, ncclSuccess);
  float* buf = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buf), 4096), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(nccl.AllReduce(buf, buf, 1024, ncclFloat, ncclSum, c0, s), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "rank 1 has not issued its part";
  nccl.CommAbort(c1);  // rank 1 gives up
  for (int i = 0; i < 1000 && cudaStreamQuery(s) == cudaErrorNotReady; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  ASSERT_EQ(nccl.CommGetAsyncError(c0, &state), ncclSuccess);
  EXPECT_EQ(state, ncclRemoteError);
  EXPECT_NE(std::string(nccl.GetLastError(c0)).find("rank 1 aborted"), std::string::npos);
  nccl.CommAbort(c0);
  cudaStreamDestroy(s);
  cudaFree(buf);
}

// Faults from the config, as codl-inject meets them: a sticky error fails the run with CUDA's
// words for it; nothing of the node is left behind.
TEST(GpusimFaults, AStickyErrorFailsTheInjectorWithItsReason) {
  const std::string dir = ::testing::TempDir() + "gpusim-fault-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  const std::string config = dir + "/sticky.yaml";
  std::ofstream(config)
      << "count: 1\ndevice: {sms: 4}\nfaults: [{device: 0, after_ops: 40, error: sticky}]\n";
  setenv("CODL_GPUSIM_CONFIG", config.c_str(), 1);
  setenv("CODL_GPUSIM_NODE", "gpusim_test_fault", 1);
  const auto run = testing::RunProcess(
      testing::CodlInjectCmd({"cuda_memcpy", "--set", "size=1MiB", "--max", "--duration", "5s"}),
      60);
  unsetenv("CODL_GPUSIM_NODE");
  EXPECT_NE(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("an illegal memory access was encountered (700)"), std::string::npos)
      << run.err;
  const std::string node =
      "/dev/shm/codl-gpusim-" + std::to_string(getuid()) + "-gpusim_test_fault";
  struct stat st {};
  EXPECT_NE(stat(node.c_str(), &st), 0) << "the node's shared memory was left behind";
}

// Honest labels: codl-inject's GPU labels (what the agent registers, so every provenance)
// say the devices are simulated.
TEST(GpusimLabels, TheGpuLabelsSayTheDevicesAreSimulated) {
  const auto run = testing::RunProcess(testing::CodlInjectCmd({"--list", "--json"}), 60);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"gpu_device\":\"simulated (gpusim)\""), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"gpu_count\":\"2\""), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"mps_available\":\"true\""), std::string::npos) << run.out;
}

// cuda_memcpy d2d into another GPU (peer_device) goes over NVLink: its calibrated peak is the
// config's NVLink rate (3 GB/s on the CI node).
TEST(GpusimPeer, PeerCopiesRunAtTheNvlinkRate) {
  const auto run = testing::RunProcess(
      testing::CodlInjectCmd({"cuda_memcpy", "--set", "direction=d2d", "--set", "peer_device=1",
                              "--set", "size=4MiB", "--calibrate", "--duration", "2s", "--json"}),
      60);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lines = testing::Lines(run.out);
  ASSERT_FALSE(lines.empty());
  // The model's rate, less what the host's memmove of 4 MiB copies adds (~0.5 % when idle).
  const double rate = testing::JsonNumber(lines.back(), "achieved_rate");
  EXPECT_GE(rate, 0.9 * 3e9) << lines.back();
  EXPECT_LE(rate, 1.01 * 3e9) << lines.back();
  EXPECT_NE(lines.back().find("through peer access"), std::string::npos) << lines.back();
}

// The MPS control stand-in: start, commands, quit (the socket goes).
TEST(GpusimMps, ControlDaemonLifecycle) {
  const std::string dir = ::testing::TempDir() + "gpusim-mps-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  setenv("CUDA_MPS_PIPE_DIRECTORY", (dir + "/pipe").c_str(), 1);
  setenv("CUDA_MPS_LOG_DIRECTORY", (dir + "/log").c_str(), 1);
  auto control = [](const std::string& input) {
    return testing::RunProcess({"/bin/sh", "-c", "echo '" + input + "' | nvidia-cuda-mps-control"},
                               20);
  };
  ASSERT_EQ(testing::RunProcess({"/bin/sh", "-c", "nvidia-cuda-mps-control -d"}, 20).exit_code, 0);
  struct stat st {};
  EXPECT_EQ(stat((dir + "/pipe/control").c_str(), &st), 0);
  EXPECT_EQ(control("get_server_list").out, "") << "no client yet, no server";
  auto set = control("set_default_active_thread_percentage 30");
  EXPECT_EQ(set.exit_code, 0);
  EXPECT_EQ(control("get_default_active_thread_percentage").out, "30.0\n");
  EXPECT_NE(control("frobnicate").exit_code, 0);
  EXPECT_EQ(control("quit").exit_code, 0);
  for (int i = 0; i < 100 && stat((dir + "/pipe/control").c_str(), &st) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(stat((dir + "/pipe/control").c_str(), &st), 0) << "the socket outlived quit";
  EXPECT_NE(control("get_server_list").exit_code, 0) << "no daemon: the client says so";
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
  unsetenv("CUDA_MPS_LOG_DIRECTORY");
}

}  // namespace
}  // namespace codl::gpusim

namespace codl::gpusim {
namespace {

// Ground truth: codl-victim --device cuda beside a GPU antagonist, each in its own process on
// one gpusim node, against what the model says from the config alone (node.h's rule). The
// victim's step is made of the one GPU resource under test, large enough that its fixed costs
// (a sync, an event) stay near 1 %. The node is slower than CI's (PCIe 1 GB/s, 1 GFLOP/s, NVLink
// 0.02 GB/s, where a 4 MiB allreduce's exchange through shared memory costs a few ms) so the
// host work behind the model (memcpy, the SGEMM's real result) stays well inside modeled time
// even on a busy 2-core box, and it is a node of its own.
class GpusimGroundTruth : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "gpusim-truth-" + std::to_string(getpid());
    mkdir(dir_.c_str(), 0700);
    std::ofstream(dir_ + "/node.yaml")
        << "count: 2\ndevice: {sms: 16, pcie_h2d_gbps: 1, pcie_d2h_gbps: 1, fp32_gflops: 1, "
           "nvlink_gbps: 0.02}\n";
    setenv("CODL_GPUSIM_CONFIG", (dir_ + "/node.yaml").c_str(), 1);
    setenv("CODL_GPUSIM_NODE", ("truth-" + std::to_string(getpid())).c_str(), 1);
  }
  void TearDown() override {
    unsetenv("CODL_GPUSIM_CONFIG");
    unsetenv("CODL_GPUSIM_NODE");
  }

  // The victim's median `phase` over its steps (its summary line).
  double VictimPhase(const std::vector<std::string>& flags, const std::string& phase) {
    std::vector<std::string> argv = {std::string(std::getenv("CODL_BIN_DIR")) + "/codl-victim",
                                     "run",
                                     "--dir",
                                     dir_ + "/data",
                                     "--device",
                                     "cuda",
                                     "--steps",
                                     "12",
                                     "--warmup-steps",
                                     "2",
                                     "--decode-work",
                                     "0",
                                     "--samples",
                                     "64",
                                     "--sample-size",
                                     "64KiB"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto run = testing::RunProcess(argv, 120);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const auto lines = testing::Lines(run.out);
    return lines.empty() ? 0 : testing::JsonNumber(lines.back(), phase);
  }

  // The victim's slowdown in `phase` beside `antagonist` (codl-inject arguments, run at --max).
  double Slowdown(const std::vector<std::string>& victim, const std::string& phase,
                  std::vector<std::string> antagonist) {
    const double alone = VictimPhase(victim, phase);
    antagonist.insert(antagonist.end(), {"--max", "--duration", "120s"});
    testing::Child load(testing::CodlInjectCmd(antagonist));
    EXPECT_NE(load.ReadLine(60), "") << "the antagonist never reported";
    const double beside = VictimPhase(victim, phase);
    kill(load.pid(), SIGTERM);
    EXPECT_EQ(load.Wait(30), 0) << "the antagonist did not stop cleanly on SIGTERM";
    EXPECT_GT(alone, 0);
    const double slowdown = alone > 0 ? beside / alone : 0;
    // The figure for the record (docs/gpu.md quotes them): ctest --output-on-failure -V shows it.
    std::printf("gpusim truth: %s %s: alone %.4f s, beside %.4f s, slowdown %.4f\n",
                antagonist[0].c_str(), phase.c_str(), alone, beside, slowdown);
    return slowdown;
  }

  std::string dir_;
};

TEST_F(GpusimGroundTruth, H2dCopiesBesideAnH2dFloodTakeTwiceAsLong) {
  // Two copies on one PCIe direction: 1/2 each, so the victim's H2D phase takes 2x.
  const double s = Slowdown({"--gemm-count", "0", "--h2d-size", "48MiB"}, "h2d_s",
                            {"cuda_memcpy", "--set", "direction=h2d"});
  EXPECT_NEAR(s, 2.0, 0.06) << "model: w / (w + w) of the link";  // +-3 %
}

// A level the model cannot give (90 % of the link while a flood takes half of it) is reported as
// saturated, at the half the model leaves it.
TEST_F(GpusimGroundTruth, ALevelTheModelCannotGiveIsFlaggedSaturated) {
  testing::Child flood(
      testing::CodlInjectCmd({"cuda_memcpy", "--set", "size=4MiB", "--max", "--duration", "120s"}));
  ASSERT_NE(flood.ReadLine(60), "");
  const auto run = testing::RunProcess(
      testing::CodlInjectCmd({"cuda_memcpy", "--set", "size=4MiB", "--level", "0.9", "--peak",
                              "1e9", "--duration", "4s", "--json"}),
      60);
  kill(flood.pid(), SIGTERM);
  EXPECT_EQ(flood.Wait(30), 0);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lines = testing::Lines(run.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(testing::JsonNumber(lines.back(), "saturated"), 1) << lines.back();
  // PCIe 1 GB/s here, half of it left: 0.5e9 of the 0.9e9 asked.
  EXPECT_NEAR(testing::JsonNumber(lines.back(), "achieved_rate"), 0.5e9, 0.03 * 0.5e9);
}

TEST_F(GpusimGroundTruth, AllreduceBesideABackgroundAllreduceTakesTwiceAsLong) {
  // codl-victim's 2 ranks (NCCL on cuda:0 and cuda:1) beside the nccl antagonist's 2 ranks on
  // the same GPUs: each collective gets half of each device's NVLink, so comm takes 2x.
  const std::vector<std::string> nccl = {"nccl",      "--set", "op=allreduce", "--set",
                                         "size=4MiB", "--set", "ranks=2"};
  const std::vector<std::string> victim = {"--ranks",    "2",    "--gemm-count",     "0",
                                           "--h2d-size", "4KiB", "--allreduce-size", "4MiB"};
  const double alone = VictimPhase(victim, "comm_s");
  auto rank = [&](int r, const std::string& more) {
    std::vector<std::string> args = nccl;
    args.insert(args.end(),
                {"--set", "rank=" + std::to_string(r), "--set", "device=" + std::to_string(r),
                 "--set", more, "--max", "--duration", "120s", "--json"});
    return testing::CodlInjectCmd(args);
  };
  testing::Child rank0(rank(0, "rendezvous_key=truth/k"));
  const std::string publish = rank0.ReadLine(60);
  const std::string key = "\"value_hex\":\"";
  const size_t at = publish.find(key);
  ASSERT_NE(at, std::string::npos) << publish;
  testing::Child rank1(rank(1, "unique_id=" + publish.substr(at + key.size(), 256)));
  EXPECT_NE(rank1.ReadLine(60), "") << "rank 1 never reported";
  const double beside = VictimPhase(victim, "comm_s");
  kill(rank0.pid(), SIGTERM);  // the stop vote takes rank 1 along
  EXPECT_EQ(rank0.Wait(30), 0);
  EXPECT_EQ(rank1.Wait(30), 0);
  ASSERT_GT(alone, 0);
  std::printf("gpusim truth: nccl comm_s: alone %.4f s, beside %.4f s, slowdown %.4f\n", alone,
              beside, beside / alone);
  EXPECT_NEAR(beside / alone, 2.0, 0.06);
}

TEST_F(GpusimGroundTruth, GemmBesideAD2dFloodIsNotSlowed) {
  // HBM copies and SM time are separate resources in the model: truth 1.0.
  const double s = Slowdown({"--gemm-count", "2", "--gemm-dim", "256", "--h2d-size", "4KiB"},
                            "compute_s", {"cuda_memcpy", "--set", "direction=d2d"});
  EXPECT_NEAR(s, 1.0, 0.03);
}

TEST_F(GpusimGroundTruth, GemmBesideAnMpsCotenantLosesItsShare) {
  // The victim is an MPS client at 100 %, the co-tenant at p: the victim keeps 1 / (1 + p) of
  // the SMs, so its compute takes (1 + p)x.
  setenv("CUDA_MPS_PIPE_DIRECTORY", (dir_ + "/mps-pipe").c_str(), 1);
  setenv("CUDA_MPS_LOG_DIRECTORY", (dir_ + "/mps-log").c_str(), 1);
  for (int percent : {25, 50, 100}) {
    SCOPED_TRACE(percent);
    const double s =
        Slowdown({"--gemm-count", "2", "--gemm-dim", "256", "--h2d-size", "4KiB"}, "compute_s",
                 {"mps_cotenant", "--set", "sm_percent=" + std::to_string(percent), "--set",
                  "pipe_dir=" + dir_ + "/mps-pipe", "--set", "log_dir=" + dir_ + "/mps-log"});
    EXPECT_NEAR(s, 1.0 + percent / 100.0, 0.03 * (1.0 + percent / 100.0));
  }
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
  unsetenv("CUDA_MPS_LOG_DIRECTORY");
}

}  // namespace
}  // namespace codl::gpusim
