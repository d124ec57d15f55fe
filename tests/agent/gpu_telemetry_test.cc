// GPU telemetry over a fake NVML: the sampler is given the same table of function pointers that
// LoadNvmlApi fills from libnvidia-ml.so.1, pointing at fakes. Averages, maxima, minima, OR'ed
// clock reasons, counter differences (32-bit wraps included), and reasons instead of zeros;
// LoadNvmlApi on a library that is missing or is not NVML; the clock reason names.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/gpu_telemetry.h"
#include "agent/node_telemetry.h"
#include "lib/common/gpu_clock_reasons.h"

namespace codl::agent {
namespace {

// One fake GPU: what its next NVML calls return.
struct FakeGpu {
  std::string name = "Fake GPU";
  nvml::Return util_ret = nvml::kSuccess;
  unsigned int util = 0, mem_util = 0;
  unsigned long long used = 0, total = 80ull << 30;
  unsigned int sm_mhz = 1980, mem_mhz = 2619;
  unsigned long long reasons = 0;
  int pcie_type = nvml::kValueUnsignedLongLong;
  unsigned long long pcie_tx = 0, pcie_rx = 0;
  nvml::Return pcie_ret = nvml::kSuccess;
  unsigned long long nvlink_tx_kib = 0, nvlink_rx_kib = 0;
  nvml::Return nvlink_ret = nvml::kSuccess;
};

struct FakeNvml {
  nvml::Return init_ret = nvml::kSuccess;
  std::vector<FakeGpu> gpus;
  int init_calls = 0;
};
FakeNvml* g_fake_nvml = nullptr;

FakeGpu& FakeOf(nvml::Device d) { return *reinterpret_cast<FakeGpu*>(d); }

nvml::Return FakeInit() {
  ++g_fake_nvml->init_calls;
  return g_fake_nvml->init_ret;
}
nvml::Return FakeShutdown() { return nvml::kSuccess; }
const char* FakeErrorString(nvml::Return r) {
  switch (r) {
    case nvml::kErrorNotSupported: return "Not Supported";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
nvml::Return FakeDriverVersion(char* out, unsigned int n) {
  std::snprintf(out, n, "%s", "999.1.2");
  return nvml::kSuccess;
}
nvml::Return FakeCount(unsigned int* n) {
  *n = static_cast<unsigned int>(g_fake_nvml->gpus.size());
  return nvml::kSuccess;
}
nvml::Return FakeHandle(unsigned int i, nvml::Device* d) {
  if (i >= g_fake_nvml->gpus.size()) return 2;
  *d = reinterpret_cast<nvml::Device>(&g_fake_nvml->gpus[i]);
  return nvml::kSuccess;
}
nvml::Return FakeName(nvml::Device d, char* out, unsigned int n) {
  std::snprintf(out, n, "%s", FakeOf(d).name.c_str());
  return nvml::kSuccess;
}
nvml::Return FakeUtil(nvml::Device d, nvml::Utilization* u) {
  const FakeGpu& g = FakeOf(d);
  if (g.util_ret != nvml::kSuccess) return g.util_ret;
  u->gpu = g.util;
  u->memory = g.mem_util;
  return nvml::kSuccess;
}
nvml::Return FakeMemory(nvml::Device d, nvml::Memory* m) {
  m->total = FakeOf(d).total;
  m->used = FakeOf(d).used;
  m->free = m->total - m->used;
  return nvml::kSuccess;
}
nvml::Return FakeClock(nvml::Device d, int type, unsigned int* mhz) {
  if (type == nvml::kClockSm) *mhz = FakeOf(d).sm_mhz;
  else if (type == nvml::kClockMem) *mhz = FakeOf(d).mem_mhz;
  else return 2;
  return nvml::kSuccess;
}
nvml::Return FakeReasons(nvml::Device d, unsigned long long* r) {
  *r = FakeOf(d).reasons;
  return nvml::kSuccess;
}
nvml::Return FakeFields(nvml::Device d, int n, nvml::FieldValue* v) {
  const FakeGpu& g = FakeOf(d);
  for (int i = 0; i < n; ++i) {
    v[i].nvml_return = nvml::kSuccess;
    v[i].value_type = nvml::kValueUnsignedLongLong;
    switch (v[i].field_id) {
      case nvml::kFieldPcieTxBytes:
      case nvml::kFieldPcieRxBytes: {
        const unsigned long long x =
            v[i].field_id == nvml::kFieldPcieTxBytes ? g.pcie_tx : g.pcie_rx;
        v[i].nvml_return = g.pcie_ret;
        v[i].value_type = g.pcie_type;
        if (g.pcie_type == nvml::kValueUnsignedInt) v[i].value.ui = static_cast<unsigned int>(x);
        else v[i].value.ull = x;
        break;
      }
      case nvml::kFieldNvlinkDataTxKib:
      case nvml::kFieldNvlinkDataRxKib:
        EXPECT_EQ(v[i].scope_id, nvml::kAllLinks);
        v[i].nvml_return = g.nvlink_ret;
        v[i].value.ull =
            v[i].field_id == nvml::kFieldNvlinkDataTxKib ? g.nvlink_tx_kib : g.nvlink_rx_kib;
        break;
      default: v[i].nvml_return = 2;
    }
  }
  return nvml::kSuccess;
}

NvmlApi FakeApi() {
  NvmlApi api;
  api.Init = FakeInit;
  api.Shutdown = FakeShutdown;
  api.ErrorString = FakeErrorString;
  api.SystemGetDriverVersion = FakeDriverVersion;
  api.DeviceGetCount = FakeCount;
  api.DeviceGetHandleByIndex = FakeHandle;
  api.DeviceGetName = FakeName;
  api.DeviceGetUtilizationRates = FakeUtil;
  api.DeviceGetMemoryInfo = FakeMemory;
  api.DeviceGetClockInfo = FakeClock;
  api.DeviceGetClockEventReasons = FakeReasons;
  api.DeviceGetFieldValues = FakeFields;
  return api;
}

class GpuTelemetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake_nvml = &fake_;
    api_ = FakeApi();
  }
  void TearDown() override { g_fake_nvml = nullptr; }
  NodeTelemetry Run(const std::function<void(GpuTelemetrySampler*)>& during) {
    GpuTelemetrySampler s(InitNvml(&api_));
    s.Start(0);
    during(&s);
    NodeTelemetry t;
    s.Finish(10, &t);
    return t;
  }

  FakeNvml fake_;
  NvmlApi api_;
};

TEST_F(GpuTelemetryTest, SummarizesEveryGpuOverTheWindow) {
  fake_.gpus.resize(2);
  fake_.gpus[1].name = "Fake GPU 1";
  FakeGpu& g = fake_.gpus[0];
  g.util = 10;
  g.used = 1 << 20;
  g.reasons = kGpuClockReasonIdle;
  g.pcie_tx = 1000;
  g.nvlink_rx_kib = 7;
  const NodeTelemetry t = Run([&](GpuTelemetrySampler* s) {
    g.util = 90;
    g.mem_util = 40;
    g.used = 5 << 20;
    g.sm_mhz = 1500;
    g.reasons = kGpuClockReasonSwPowerCap;
    g.pcie_tx = 5000;
    g.pcie_rx = 300;
    g.nvlink_tx_kib = 2;
    s->Tick(0.1);  // too soon: not sampled, so util 90 and the 1500 MHz are never seen
    g.util = 60;
    g.sm_mhz = 1800;
    s->Tick(0.3);
    g.util = 30;
    g.used = 2 << 20;
    g.sm_mhz = 1800;
    g.reasons = kGpuClockReasonSwThermal;
    g.pcie_tx = 6000;
    g.nvlink_rx_kib = 10;
  });
  EXPECT_EQ(t.gpu_note, "NVML, driver 999.1.2");
  ASSERT_EQ(t.gpus.size(), 2u);
  const GpuTelemetry& a = t.gpus[0];
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.name, "Fake GPU");
  EXPECT_EQ(a.samples, 3);  // start, the tick at 0.3, finish
  EXPECT_DOUBLE_EQ(a.util_mean, (10 + 60 + 30) / 3.0);
  EXPECT_DOUBLE_EQ(a.util_max, 60);
  EXPECT_DOUBLE_EQ(a.mem_util_mean, 80 / 3.0);
  EXPECT_EQ(a.mem_used_max_bytes, 5 << 20);
  EXPECT_EQ(a.mem_total_bytes, 80ll << 30);
  EXPECT_DOUBLE_EQ(a.sm_clock_min_mhz, 1800);
  EXPECT_DOUBLE_EQ(a.sm_clock_mean_mhz, (1980 + 1800 + 1800) / 3.0);
  EXPECT_DOUBLE_EQ(a.mem_clock_min_mhz, 2619);
  EXPECT_EQ(a.clock_reasons, static_cast<int64_t>(kGpuClockReasonIdle | kGpuClockReasonSwPowerCap |
                                                  kGpuClockReasonSwThermal));
  EXPECT_EQ(GpuClockReasonsText(a.clock_reasons), "gpu_idle|sw_power_cap|sw_thermal");
  EXPECT_DOUBLE_EQ(a.pcie_tx_bytes, 5000);
  EXPECT_DOUBLE_EQ(a.pcie_rx_bytes, 300);
  EXPECT_DOUBLE_EQ(a.nvlink_tx_bytes, 2 * 1024);
  EXPECT_DOUBLE_EQ(a.nvlink_rx_bytes, 3 * 1024);
  EXPECT_EQ(a.notes, "");
  const GpuTelemetry& b = t.gpus[1];
  EXPECT_EQ(b.index, 1);
  EXPECT_EQ(b.name, "Fake GPU 1");
  EXPECT_DOUBLE_EQ(b.util_max, 0);  // an idle GPU reads 0: measured, not missing
  EXPECT_DOUBLE_EQ(b.pcie_tx_bytes, 0);
  EXPECT_EQ(b.clock_reasons, 0);
}

TEST_F(GpuTelemetryTest, AThirtyTwoBitCounterThatWrapsIsUndone) {
  fake_.gpus.resize(1);
  FakeGpu& g = fake_.gpus[0];
  g.pcie_type = nvml::kValueUnsignedInt;
  g.pcie_tx = 0xFFFFFF00u;
  const NodeTelemetry t = Run([&](GpuTelemetrySampler* s) {
    g.pcie_tx = 0xFFFFFFF0u;
    s->Tick(0.2);
    g.pcie_tx = 0x100;  // wrapped past 2^32
  });
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(t.gpus[0].pcie_tx_bytes, 0x200);
}

TEST_F(GpuTelemetryTest, WhatAGpuCannotReportIsMissingWithItsReason) {
  fake_.gpus.resize(1);
  FakeGpu& g = fake_.gpus[0];
  g.util_ret = nvml::kErrorNotSupported;  // a MIG-enabled GPU
  g.nvlink_ret = nvml::kErrorNotSupported;
  const NodeTelemetry t = Run([&](GpuTelemetrySampler* s) { s->Tick(1); });
  ASSERT_EQ(t.gpus.size(), 1u);
  const GpuTelemetry& a = t.gpus[0];
  EXPECT_TRUE(std::isnan(a.util_mean));
  EXPECT_TRUE(std::isnan(a.util_max));
  EXPECT_TRUE(std::isnan(a.nvlink_tx_bytes));
  EXPECT_TRUE(std::isnan(a.nvlink_rx_bytes));
  EXPECT_DOUBLE_EQ(a.pcie_tx_bytes, 0);  // the PCIe counters did read
  EXPECT_NE(a.notes.find("utilization: Not Supported"), std::string::npos) << a.notes;
  EXPECT_NE(a.notes.find("NVLink bytes: Not Supported (no NVLink)"), std::string::npos) << a.notes;
}

TEST_F(GpuTelemetryTest, ACounterThatFailsMidWindowIsMissingNotShort) {
  fake_.gpus.resize(1);
  FakeGpu& g = fake_.gpus[0];
  const NodeTelemetry t = Run([&](GpuTelemetrySampler* s) {
    g.pcie_tx = 100;
    s->Tick(0.5);
    g.pcie_ret = 999;
    s->Tick(1.0);
    g.pcie_ret = nvml::kSuccess;
    g.pcie_tx = 200;
  });
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_TRUE(std::isnan(t.gpus[0].pcie_tx_bytes));
  EXPECT_NE(t.gpus[0].notes.find("PCIe bytes: Unknown Error"), std::string::npos)
      << t.gpus[0].notes;
}

TEST_F(GpuTelemetryTest, OptionalFunctionsMissingFromTheLibraryAreSaid) {
  fake_.gpus.resize(1);
  api_.DeviceGetUtilizationRates = nullptr;
  api_.DeviceGetFieldValues = nullptr;
  api_.DeviceGetClockEventReasons = nullptr;
  const NodeTelemetry t = Run([](GpuTelemetrySampler*) {});
  ASSERT_EQ(t.gpus.size(), 1u);
  const GpuTelemetry& a = t.gpus[0];
  EXPECT_TRUE(std::isnan(a.util_mean));
  EXPECT_TRUE(std::isnan(a.pcie_rx_bytes));
  EXPECT_EQ(a.clock_reasons, -1);
  EXPECT_EQ(GpuClockReasonsText(a.clock_reasons), "");
  EXPECT_GE(a.mem_used_max_bytes, 0);  // what the library has is still read
  EXPECT_NE(a.notes.find("nvmlDeviceGetUtilizationRates missing"), std::string::npos) << a.notes;
  EXPECT_NE(a.notes.find("nvmlDeviceGetFieldValues missing"), std::string::npos) << a.notes;
}

TEST_F(GpuTelemetryTest, InitFailureAndNoGpuGiveAReasonAndNoRows) {
  fake_.init_ret = 9;
  NodeTelemetry t = Run([](GpuTelemetrySampler* s) { s->Tick(1); });
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, "gpu: unavailable (nvmlInit: Driver Not Loaded)");

  fake_.init_ret = nvml::kSuccess;  // the driver is there, the node has no GPU
  t = Run([](GpuTelemetrySampler* s) { s->Tick(1); });
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, "gpu: unavailable (NVML lists no GPU on this node)");
}

TEST(NvmlLoader, AMissingLibraryIsSaidAsNoDriver) {
  const NvmlApi api = LoadNvmlApi("libcodl-no-such-nvml.so.1");
  EXPECT_EQ(
      api.error,
      "gpu: unavailable (libcodl-no-such-nvml.so.1 not found: no NVIDIA driver on this node)");
  EXPECT_EQ(api.Init, nullptr);
  const GpuSource source = InitNvml(&api);
  EXPECT_EQ(source.api, nullptr);
  GpuTelemetrySampler s(source);
  s.Start(0);
  s.Tick(1);
  NodeTelemetry t;
  s.Finish(2, &t);
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, api.error);
}

TEST(NvmlLoader, ALibraryThatIsNotNvmlIsRefused) {
  const NvmlApi api = LoadNvmlApi("libc.so.6");  // loads, has none of NVML's symbols
  EXPECT_EQ(api.error, "gpu: unavailable (libc.so.6 has no nvmlInit_v2: a driver too old)");
}

TEST(NvmlLoader, TheNodeSaysWhyWhenItHasNoNvml) {
  // On a node without the driver (this test's usual home) the node's source is the reason;
  // on a GPU node it is an initialized NVML.
  const GpuSource& node = NodeNvml();
  if (LoadNvmlApi().error.empty()) {
    EXPECT_NE(node.api, nullptr) << node.note;
    GTEST_SKIP() << "this node has libnvidia-ml.so.1: " << node.note;
  }
  EXPECT_EQ(node.api, nullptr);
  EXPECT_EQ(node.note.rfind("gpu: unavailable (libnvidia-ml.so.1 ", 0), 0u) << node.note;
  NodeTelemetrySampler s;  // the node sampler uses it when given no source
  s.Start(0);
  const NodeTelemetry t = s.Finish(1);
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, node.note);
}

TEST(GpuClockReasons, NamesEveryBitLowestFirst) {
  EXPECT_EQ(GpuClockReasonNames(0), std::vector<std::string>{});
  EXPECT_EQ(GpuClockReasonNames(kGpuClockReasonIdle | kGpuClockReasonSwPowerCap | 0x200),
            (std::vector<std::string>{"gpu_idle", "sw_power_cap", "0x200"}));
  EXPECT_EQ(GpuClockReasonNames(0x1ff).size(), 9u);
  EXPECT_EQ(GpuClockReasonNames(0x1ff).back(), "display_clocks");
  EXPECT_EQ(GpuClockReasonsText(-1), "");
  EXPECT_EQ(GpuClockReasonsText(0), "none");
  EXPECT_EQ(GpuClockReasonsText(kGpuClockReasonHwThermal | kGpuClockReasonHwSlowdown),
            "hw_slowdown|hw_thermal");
  EXPECT_FALSE(GpuClocksLimited(-1));
  EXPECT_FALSE(GpuClocksLimited(0));
  EXPECT_FALSE(GpuClocksLimited(static_cast<int64_t>(kGpuClockReasonIdle)));
  EXPECT_TRUE(
      GpuClocksLimited(static_cast<int64_t>(kGpuClockReasonIdle | kGpuClockReasonHwPowerBrake)));
}

}  // namespace
}  // namespace codl::agent
