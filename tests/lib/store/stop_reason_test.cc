// experiments.stop_reason (migration 6, adaptive repetitions): set, read back, and empty for
// experiments stored before the column existed.
#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;

TEST(StopReasonTest, SetAndReadBackAndUnknownExperimentIsAnError) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  EXPECT_EQ((*store)->GetExperiment("e1")->stop_reason, "");
  ASSERT_TRUE((*store)->SetStopReason("e1", "target reached after 6 blocks").ok());
  EXPECT_EQ((*store)->GetExperiment("e1")->stop_reason, "target reached after 6 blocks");
  EXPECT_EQ((*store)->ListExperiments()->front().stop_reason, "target reached after 6 blocks");
  EXPECT_FALSE((*store)->SetStopReason("nope", "cancelled").ok());
}

TEST(StopReasonTest, Version5DatabaseGainsAnEmptyStopReason) {
  testing::TempDir dir;
  const std::string path = dir.File("v5.db");
  {
    auto v5 = Store::OpenAtSchemaVersionForTesting(path, 5);
    ASSERT_TRUE(v5.ok()) << v5.error();
    ASSERT_TRUE((*v5)->CreateExperiment(MakeExperiment("old", 3, ExperimentState::kDone)).ok());
  }
  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  auto e = (*latest)->GetExperiment("old");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->stop_reason, "");
  ASSERT_TRUE((*latest)->SetStopReason("old", "cancelled").ok());
  EXPECT_EQ((*latest)->GetExperiment("old")->stop_reason, "cancelled");
}

}  // namespace
}  // namespace codl::store
