// trial_phase_medians.seq (migration 7): the order in which the victim first reported its phases
// survives the store, and phases stored before the column existed read back in name order.
#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

TEST(PhaseOrderStoreTest, TheVictimsOrderRoundTrips) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e", 1)).ok());
  TrialRecord t = MakeTrial("e", 0);
  t.phase_medians = {{"zeta_s", 0.1}, {"alpha_s", 0.2}, {"mid_s", 0.3}, {"unlisted_s", 0.4}};
  t.phase_order = {"zeta_s", "alpha_s", "gone_s", "mid_s"};  // gone_s: no median, dropped
  ASSERT_TRUE((*store)->SaveTrial(t).ok());
  auto got = (*store)->GetTrials("e");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 1u);
  // Phases the order does not list follow it in name order.
  EXPECT_EQ((*got)[0].phase_order,
            (std::vector<std::string>{"zeta_s", "alpha_s", "mid_s", "unlisted_s"}));
  EXPECT_EQ((*got)[0].phase_medians, t.phase_medians);
}

TEST(PhaseOrderStoreTest, PhasesStoredBeforeVersion7ReadBackInNameOrder) {
  testing::TempDir dir;
  const std::string path = dir.File("v6.db");
  {
    auto v6 = Store::OpenAtSchemaVersionForTesting(path, 6);
    ASSERT_TRUE(v6.ok()) << v6.error();
    ASSERT_TRUE((*v6)->CreateExperiment(MakeExperiment("old", 3, ExperimentState::kDone)).ok());
  }
  testing::ExecRaw(path,
                   "INSERT INTO trials (id, experiment_id, idx, state) VALUES (1, 'old', 0, "
                   "'done'); INSERT INTO trial_phase_medians (trial_id, phase, median_s) VALUES "
                   "(1, 'zeta_s', 1), (1, 'alpha_s', 2)");
  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ((*latest)->SchemaVersion(), Store::LatestSchemaVersion());
  auto got = (*latest)->GetTrials("old");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].phase_order, (std::vector<std::string>{"alpha_s", "zeta_s"}));
}

}  // namespace
}  // namespace codl::store
