// The GPU injectors on a real device: short runs of cuda_memcpy, a 1-rank NCCL allreduce, a
// 2-rank NCCL rendezvous when two GPUs are present, and mps_cotenant when MPS is available.
// Without a device every test skips with the reason (what --list would say).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "injectors/core/protocol.h"
#include "injectors/core/registry.h"
#include "injectors/gpu/gpu_host.h"
#include "injectors/gpu/gpu_probe.h"

namespace codl::injectors {
namespace {

class CollectingReporter final : public Reporter {
 public:
  void Report(const Sample& s) override {
    std::lock_guard<std::mutex> lock(mu_);
    samples_.push_back(s);
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_.size();
  }
  Sample last() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_.back();
  }

 private:
  std::mutex mu_;
  std::vector<Sample> samples_;
};

#define SKIP_WITHOUT_DEVICE()                                \
  do {                                                       \
    const std::string reason_ = gpu::CudaUsable().message(); \
    if (!reason_.empty()) GTEST_SKIP() << reason_;           \
  } while (0)

// Hands rank 0's published unique id to the test thread (HostServices::PublishRendezvous).
class RendezvousServices final : public HostServices {
 public:
  Status PublishRendezvous(std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu_);
    published_ = std::string(value);
    cv_.notify_all();
    return Status::Ok();
  }
  Status ExportVictimEnv(const std::map<std::string, std::string>&) override {
    return Status::Ok();
  }
  void Note(std::string_view) override {}
  void ReportMps(const protocol::MpsStatus&) override {}
  // The published value, or "" after `seconds`.
  std::string Wait(double seconds) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                 [this] { return !published_.empty(); });
    return published_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string published_;
};

std::unique_ptr<Injector> SetUpInjector(const std::string& name,
                                        const std::map<std::string, std::string>& options,
                                        HostServices* with = nullptr) {
  auto inj = CreateInjector(name);
  EXPECT_NE(inj, nullptr);
  const HostInfo host = DetectHost({"/tmp"});
  const std::string why = inj->Unsupported(host).message();
  if (!why.empty()) {
    ADD_FAILURE() << name << " unsupported: " << why;
    return nullptr;
  }
  auto values = ParseInjectorOptions(*inj, options);
  EXPECT_TRUE(values.ok()) << values.error();
  if (!values.ok()) return nullptr;
  CollectingHostServices services;
  Status s = inj->Setup(*values, host, with != nullptr ? *with : services, StopToken());
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(inj) : nullptr;
}

// Calibrates, then holds half the peak: the closed loop must land within 5% over ~1.5 s.
void CalibrateAndHoldHalf(Injector& inj, double calibrate_s = 1.0) {
  CollectingReporter cal;
  auto peak = inj.Calibrate(calibrate_s, StopToken(), cal);
  ASSERT_TRUE(peak.ok()) << peak.error();
  EXPECT_GT(peak->achieved_rate, 0);
  EXPECT_GE(cal.count(), 3u) << "fewer than 4 reports per second";
  CollectingReporter run;
  StopSource stop;
  std::thread stopper([&] {
    stop.token().SleepFor(2.0);
    stop.RequestStop();
  });
  const double target = 0.5 * peak->achieved_rate;
  auto held = inj.Run(Target::Rate(target), stop.token(), run);
  stopper.join();
  ASSERT_TRUE(held.ok()) << held.error();
  EXPECT_NEAR(held->achieved_rate / target, 1.0, 0.05)
      << "peak " << peak->achieved_rate << " achieved " << held->achieved_rate;
}

TEST(CudaMemcpyDeviceTest, EveryDirectionCopiesAndHoldsARate) {
  SKIP_WITHOUT_DEVICE();
  for (const char* dir : {"h2d", "d2h", "d2d", "bidir"}) {
    SCOPED_TRACE(dir);
    auto inj = SetUpInjector("cuda_memcpy", {{"direction", dir}, {"size", "16MiB"}});
    ASSERT_NE(inj, nullptr);
    CalibrateAndHoldHalf(*inj, 0.8);
  }
}

TEST(CudaMemcpyDeviceTest, StopsWithin100ms) {
  SKIP_WITHOUT_DEVICE();
  auto inj = SetUpInjector("cuda_memcpy", {{"direction", "h2d"}, {"size", "256MiB"}});
  ASSERT_NE(inj, nullptr);
  StopSource stop;
  CollectingReporter r;
  double stopped_at = 0;
  std::thread stopper([&] {
    stop.token().SleepFor(0.5);
    stopped_at = MonotonicSeconds();
    stop.RequestStop();
  });
  auto s = inj->Run(Target::Max(), stop.token(), r);
  const double returned = MonotonicSeconds();
  stopper.join();
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_LT(returned - stopped_at, 0.1);
}

TEST(NcclDeviceTest, OneRankAllReduceReportsAlgbw) {
  SKIP_WITHOUT_DEVICE();
  const Descriptor* d = FindDescriptor("nccl");
  ASSERT_NE(d, nullptr);
  auto inj = CreateInjector("nccl");
  if (std::string why = inj->Unsupported(DetectHost({})).message(); !why.empty())
    GTEST_SKIP() << why;
  inj = SetUpInjector("nccl", {{"op", "allreduce"}, {"size", "32MiB"}});
  ASSERT_NE(inj, nullptr);
  CollectingReporter r;
  auto peak = inj->Calibrate(1.0, StopToken(), r);
  ASSERT_TRUE(peak.ok()) << peak.error();
  EXPECT_GT(peak->achieved_rate, 0);
  ASSERT_TRUE(peak->extra.count("algbw"));
  // One rank: busbw is defined as algbw (factor 1).
  EXPECT_NEAR(peak->extra.at("algbw") / peak->achieved_rate, 1.0, 1e-9);
  CalibrateAndHoldHalf(*inj);
}

// Two ranks in this process, one per GPU, meeting exactly as the agent relays them: rank 0's
// stdout line is read from a pipe, its value_hex is passed to rank 1 as unique_id. Then both run
// and stop together twice, which exercises the stop vote (ranks must stay in step across phases).
TEST(NcclDeviceTest, TwoRanksMeetThroughTheRendezvousLine) {
  SKIP_WITHOUT_DEVICE();
  if (gpu::ProbeGpus().devices.size() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  if (std::string why = CreateInjector("nccl")->Unsupported(DetectHost({})).message();
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  // Rank 0 publishes its unique id (the agent relays it); rank 1 starts with it.
  RendezvousServices services;
  std::unique_ptr<Injector> rank0;
  std::thread t0([&] {
    rank0 = SetUpInjector("nccl",
                          {{"op", "allgather"},
                           {"size", "16MiB"},
                           {"ranks", "2"},
                           {"rank", "0"},
                           {"device", "0"},
                           {"rendezvous_key", "test/k"},
                           {"init_timeout", "60s"}},
                          &services);
  });
  const std::string id = services.Wait(30);
  if (id.empty()) t0.join();
  ASSERT_EQ(id.size(), 128u) << "rank 0 published no unique id";
  const std::string hex = protocol::HexEncode(id);
  auto rank1 = SetUpInjector("nccl", {{"op", "allgather"},
                                      {"size", "16MiB"},
                                      {"ranks", "2"},
                                      {"rank", "1"},
                                      {"device", "1"},
                                      {"unique_id", hex}});
  t0.join();
  ASSERT_NE(rank0, nullptr);
  ASSERT_NE(rank1, nullptr);
  for (int phase = 0; phase < 2; ++phase) {
    SCOPED_TRACE(phase);
    StopSource stop0, stop1;
    CollectingReporter r0, r1;
    Result<RunSummary> s0 = Err("not run"), s1 = Err("not run");
    std::thread a([&] { s0 = rank0->Run(Target::Max(), stop0.token(), r0); });
    std::atomic<bool> b_done{false};
    std::thread b([&] {
      s1 = rank1->Run(Target::Max(), stop1.token(), r1);
      b_done = true;
    });
    StopToken().SleepFor(1.0);
    stop0.RequestStop();  // only rank 0 is told: the vote must stop rank 1 too
    a.join();
    const double deadline = MonotonicSeconds() + 3;
    while (!b_done && MonotonicSeconds() < deadline) StopToken().SleepFor(0.01);
    EXPECT_TRUE(b_done) << "rank 1 did not follow rank 0's stop vote";
    stop1.RequestStop();
    b.join();
    ASSERT_TRUE(s0.ok()) << s0.error();
    ASSERT_TRUE(s1.ok()) << s1.error();
    EXPECT_GT(s0->achieved_rate, 0);
    // allgather over 2 ranks: busbw = algbw x 1/2.
    EXPECT_NEAR(s0->extra.at("algbw") / s0->achieved_rate, 2.0, 1e-6);
  }
}

TEST(MpsCotenantDeviceTest, RunsUnderMps) {
  SKIP_WITHOUT_DEVICE();
  auto inj = CreateInjector("mps_cotenant");
  if (std::string why = inj->Unsupported(DetectHost({})).message(); !why.empty())
    GTEST_SKIP() << why;
  if (gpu::CudaUsedHere()) {
    GTEST_SKIP() << "CUDA already used in this process by an earlier test; MPS must be the "
                    "first CUDA user (ctest runs each test in its own process)";
  }
  inj = SetUpInjector("mps_cotenant", {{"sm_percent", "50"}, {"kernel", "fma"}});
  ASSERT_NE(inj, nullptr);
  CollectingReporter r;
  auto peak = inj->Calibrate(1.0, StopToken(), r);
  ASSERT_TRUE(peak.ok()) << peak.error();
  EXPECT_GT(peak->achieved_rate, 0);  // (gpusim's modeled FP32 rate is far below a GPU's)
  ASSERT_TRUE(peak->extra.count("sm_share"));
  EXPECT_GT(peak->extra.at("sm_share"), 25);  // 50% of the SMs, kernels back to back
  EXPECT_LE(peak->extra.at("sm_share"), 50.5);
}

}  // namespace
}  // namespace codl::injectors
