// trial_node_telemetry (migration 15): a trial's node telemetry round-trips, one row per node in
// order, NaN shares and missing memory figures included; a damaged disks/nics text loses the
// detail, not the trial; a store at version 14 saves and reads the trial without it.
#include <cmath>

#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

TrialRecord TelemetryTrial() {
  TrialRecord t = MakeTrial("e1", 0, 0, 0, 0);
  NodeTelemetry a;
  a.node = "a";
  a.window_s = 3.5;
  a.psi_cpu_some = 0.25;
  a.psi_cpu_full = 0;
  a.psi_io_some = 0.125;  // psi_io_full, psi_memory_*: NaN (not available)
  a.disks = {{"vda", 4096, 1 << 20, 1, 16}, {"nvme0n1", 0, 512, 0, 1}};
  a.nics = {{"lo", 10, 10}, {"eth0", 1000, 20}};
  a.mem_available_start_bytes = 8ll << 30;
  a.mem_available_min_bytes = 7ll << 30;
  a.cached_start_bytes = 1ll << 30;  // the others: -1 (not read)
  a.membw_note = "memory bandwidth: unavailable (no uncore PMU in this VM)";
  a.notes = "PSI memory: unreadable";
  NodeTelemetry b;
  b.node = "b";
  b.window_s = 3.4;
  b.membw_bytes = 5e9;
  b.membw_note = "resctrl mbm_total_bytes";
  t.node_telemetry = {a, b};
  return t;
}

TEST(NodeTelemetryStore, RoundTripsEveryNodeInOrder) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("t.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  const TrialRecord t = TelemetryTrial();
  ASSERT_TRUE((*store)->SaveTrial(t).ok());
  auto got = (*store)->GetTrials("e1", /*with_series=*/false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->at(0).node_telemetry.size(), 2u);
  const NodeTelemetry& a = got->at(0).node_telemetry[0];
  EXPECT_EQ(a.node, "a");
  EXPECT_DOUBLE_EQ(a.window_s, 3.5);
  EXPECT_DOUBLE_EQ(a.psi_cpu_some, 0.25);
  EXPECT_DOUBLE_EQ(a.psi_cpu_full, 0);
  EXPECT_DOUBLE_EQ(a.psi_io_some, 0.125);
  EXPECT_TRUE(std::isnan(a.psi_io_full));
  EXPECT_TRUE(std::isnan(a.psi_memory_some));
  ASSERT_EQ(a.disks.size(), 2u);
  EXPECT_EQ(a.disks[0].device, "vda");
  EXPECT_EQ(a.disks[0].read_bytes, 4096);
  EXPECT_EQ(a.disks[0].write_bytes, 1 << 20);
  EXPECT_EQ(a.disks[0].reads, 1);
  EXPECT_EQ(a.disks[0].writes, 16);
  EXPECT_EQ(a.disks[1].device, "nvme0n1");
  ASSERT_EQ(a.nics.size(), 2u);
  EXPECT_EQ(a.nics[1].interface, "eth0");
  EXPECT_EQ(a.nics[1].rx_bytes, 1000);
  EXPECT_EQ(a.nics[1].tx_bytes, 20);
  EXPECT_EQ(a.mem_available_start_bytes, 8ll << 30);
  EXPECT_EQ(a.mem_available_end_bytes, -1);
  EXPECT_EQ(a.mem_available_min_bytes, 7ll << 30);
  EXPECT_EQ(a.cached_start_bytes, 1ll << 30);
  EXPECT_TRUE(std::isnan(a.membw_bytes));
  EXPECT_EQ(a.membw_note, t.node_telemetry[0].membw_note);
  EXPECT_EQ(a.notes, "PSI memory: unreadable");
  const NodeTelemetry& b = got->at(0).node_telemetry[1];
  EXPECT_EQ(b.node, "b");
  EXPECT_DOUBLE_EQ(b.membw_bytes, 5e9);
  EXPECT_TRUE(b.disks.empty());

  // Re-saved without telemetry: the old rows go with the old trial.
  TrialRecord none = t;
  none.node_telemetry.clear();
  ASSERT_TRUE((*store)->SaveTrial(none).ok());
  auto again = (*store)->GetTrials("e1", false);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->at(0).node_telemetry.empty());
}

TEST(NodeTelemetryStore, DamagedDeviceTextLosesTheDetailNotTheTrial) {
  testing::TempDir dir;
  const std::string path = dir.File("d.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
    ASSERT_TRUE((*store)->SaveTrial(TelemetryTrial()).ok());
  }
  testing::ExecRaw(path,
                   "UPDATE trial_node_telemetry SET disks = '{not json', "
                   "nics = '[1, {\"interface\": 5, \"rx_bytes\": -3}, \"x\"]'");
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto got = (*store)->GetTrials("e1", false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->at(0).node_telemetry.size(), 2u);
  EXPECT_TRUE(got->at(0).node_telemetry[0].disks.empty());
  ASSERT_EQ(got->at(0).node_telemetry[0].nics.size(), 1u);
  EXPECT_EQ(got->at(0).node_telemetry[0].nics[0].interface, "");
  EXPECT_EQ(got->at(0).node_telemetry[0].nics[0].rx_bytes, 0);
  EXPECT_DOUBLE_EQ(got->at(0).node_telemetry[0].psi_cpu_some, 0.25);
}

TEST(NodeTelemetryStore, AVersion14StoreHasNone) {
  testing::TempDir dir;
  auto v14 = Store::OpenAtSchemaVersionForTesting(dir.File("v14.db"), 14);
  ASSERT_TRUE(v14.ok()) << v14.error();
  ASSERT_TRUE((*v14)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  ASSERT_TRUE((*v14)->SaveTrial(TelemetryTrial()).ok());
  auto got = (*v14)->GetTrials("e1", false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_TRUE(got->at(0).node_telemetry.empty());
}

}  // namespace
}  // namespace codl::store
