// trial_gpu_telemetry (migration 16): a node's GPUs round-trip per trial, node and GPU index,
// NaN figures and unread reasons included, with the node's gpu_note (the reason where there
// are no rows); a store at version 15 saves and reads the node without them, and migrating it
// keeps its node rows.
#include <cmath>

#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

TrialRecord GpuTrial() {
  TrialRecord t = MakeTrial("e1", 0, 0, 0, 0);
  NodeTelemetry a;
  a.node = "gpu-node";
  a.window_s = 2;
  a.gpu_note = "NVML, driver 550.54.15";
  GpuTelemetry g0;
  g0.index = 0;
  g0.name = "NVIDIA H100 80GB HBM3";
  g0.samples = 11;
  g0.util_mean = 87.5;
  g0.util_max = 100;
  g0.mem_util_mean = 40;
  g0.mem_used_max_bytes = 3ll << 30;
  g0.mem_total_bytes = 80ll << 30;
  g0.pcie_tx_bytes = 4e9;
  g0.pcie_rx_bytes = 5e9;  // NVLink: NaN
  g0.sm_clock_min_mhz = 1755;
  g0.sm_clock_mean_mhz = 1950;
  g0.mem_clock_min_mhz = 2619;
  g0.mem_clock_mean_mhz = 2619;
  g0.clock_reasons = 0x5;
  g0.notes = "NVLink bytes: Not Supported (no NVLink)";
  GpuTelemetry g1;
  g1.index = 1;  // every figure missing
  a.gpus = {g0, g1};
  NodeTelemetry b;
  b.node = "cpu-node";
  b.gpu_note = "gpu: unavailable (libnvidia-ml.so.1 not found: no NVIDIA driver on this node)";
  t.node_telemetry = {a, b};
  return t;
}

TEST(GpuTelemetryStore, RoundTripsEveryGpuOfEveryNode) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("g.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  const TrialRecord t = GpuTrial();
  ASSERT_TRUE((*store)->SaveTrial(t).ok());
  auto got = (*store)->GetTrials("e1", /*with_series=*/false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->at(0).node_telemetry.size(), 2u);
  const NodeTelemetry& a = got->at(0).node_telemetry[0];
  EXPECT_EQ(a.gpu_note, "NVML, driver 550.54.15");
  ASSERT_EQ(a.gpus.size(), 2u);
  const GpuTelemetry& g = a.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.samples, 11);
  EXPECT_DOUBLE_EQ(g.util_mean, 87.5);
  EXPECT_DOUBLE_EQ(g.util_max, 100);
  EXPECT_DOUBLE_EQ(g.mem_util_mean, 40);
  EXPECT_EQ(g.mem_used_max_bytes, 3ll << 30);
  EXPECT_EQ(g.mem_total_bytes, 80ll << 30);
  EXPECT_DOUBLE_EQ(g.pcie_tx_bytes, 4e9);
  EXPECT_DOUBLE_EQ(g.pcie_rx_bytes, 5e9);
  EXPECT_TRUE(std::isnan(g.nvlink_tx_bytes));
  EXPECT_TRUE(std::isnan(g.nvlink_rx_bytes));
  EXPECT_DOUBLE_EQ(g.sm_clock_min_mhz, 1755);
  EXPECT_DOUBLE_EQ(g.sm_clock_mean_mhz, 1950);
  EXPECT_DOUBLE_EQ(g.mem_clock_min_mhz, 2619);
  EXPECT_EQ(g.clock_reasons, 0x5);
  EXPECT_EQ(g.notes, t.node_telemetry[0].gpus[0].notes);
  const GpuTelemetry& h = a.gpus[1];
  EXPECT_EQ(h.index, 1);
  EXPECT_TRUE(std::isnan(h.util_mean));
  EXPECT_TRUE(std::isnan(h.pcie_tx_bytes));
  EXPECT_EQ(h.mem_used_max_bytes, -1);
  EXPECT_EQ(h.clock_reasons, -1);
  const NodeTelemetry& b = got->at(0).node_telemetry[1];
  EXPECT_TRUE(b.gpus.empty());
  EXPECT_EQ(b.gpu_note, t.node_telemetry[1].gpu_note);

  // Re-saved without GPUs: the old rows go with the old trial.
  TrialRecord none = t;
  for (NodeTelemetry& n : none.node_telemetry) n.gpus.clear();
  ASSERT_TRUE((*store)->SaveTrial(none).ok());
  auto again = (*store)->GetTrials("e1", false);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->at(0).node_telemetry[0].gpus.empty());
  EXPECT_EQ(again->at(0).node_telemetry[0].gpu_note, "NVML, driver 550.54.15");
}

TEST(GpuTelemetryStore, AVersion15StoreKeepsTheNodeWithoutGpusAndMigrates) {
  testing::TempDir dir;
  const std::string path = dir.File("v15.db");
  {
    auto v15 = Store::OpenAtSchemaVersionForTesting(path, 15);
    ASSERT_TRUE(v15.ok()) << v15.error();
    ASSERT_TRUE((*v15)->CreateExperiment(MakeExperiment("e1", 1)).ok());
    ASSERT_TRUE((*v15)->SaveTrial(GpuTrial()).ok());
    auto got = (*v15)->GetTrials("e1", false);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(got->at(0).node_telemetry.size(), 2u);
    EXPECT_EQ(got->at(0).node_telemetry[0].node, "gpu-node");
    EXPECT_TRUE(got->at(0).node_telemetry[0].gpus.empty());
    EXPECT_EQ(got->at(0).node_telemetry[0].gpu_note, "");
  }
  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ((*latest)->SchemaVersion(), Store::LatestSchemaVersion());
  auto got = (*latest)->GetTrials("e1", false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->at(0).node_telemetry.size(), 2u);
  EXPECT_EQ(got->at(0).node_telemetry[1].node, "cpu-node");
  EXPECT_EQ(got->at(0).node_telemetry[1].gpu_note, "");  // not measured then
  EXPECT_TRUE(got->at(0).node_telemetry[0].gpus.empty());
}

}  // namespace
}  // namespace codl::store
