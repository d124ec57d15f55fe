// Store migrations: an old database is brought up to date with its data intact; a newer one is
// refused with both versions named; concurrent first opens agree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::ExpectSameExperiment;
using testing::ExpectSameTrial;
using ::testing::HasSubstr;
using testing::MakeExperiment;
using testing::MakeTrial;
using testing::QueryInt;

bool HasColumn(const std::string& path, const std::string& table, const std::string& column) {
  return QueryInt(path, "SELECT count(*) FROM pragma_table_info('" + table + "') WHERE name = '" +
                            column + "'") == 1;
}

TEST(StoreMigrationTest, Version1DatabaseMigratesToLatestWithDataPreserved) {
  testing::TempDir dir;
  const std::string path = dir.File("old.db");
  const ExperimentRecord e = MakeExperiment("e-v1", 1234, ExperimentState::kDone);
  {
    auto v1 = Store::OpenAtSchemaVersionForTesting(path, 1);
    ASSERT_TRUE(v1.ok()) << v1.error();
    EXPECT_EQ((*v1)->SchemaVersion(), 1);
    ASSERT_TRUE((*v1)->CreateExperiment(e).ok());
  }
  ASSERT_FALSE(HasColumn(path, "calibrations", "duration_s"));
  ASSERT_FALSE(HasColumn(path, "trials", "victim_cpu_s"));
  // A trial as a version-1 writer stored it (no CPU accounting columns yet).
  testing::ExecRaw(
      path,
      "INSERT INTO trials (id, experiment_id, idx, state, victim_node, metric, wall_s) "
      "VALUES (1, 'e-v1', 0, 'done', 'n1', 0.25, 61)");
  testing::ExecRaw(path,
                   "INSERT INTO trial_antagonists (trial_id, seq, name, injector, achieved_rate) "
                   "VALUES (1, 0, 'membw', 'memcpy', 2e9)");
  // A calibration as a version-1 writer stored it (no duration_s column yet).
  testing::ExecRaw(path,
                   "INSERT INTO calibrations (node, injector, options_key, peak_rate, unit, "
                   "measured_unix_ms) VALUES ('n1', 'memcpy', 'threads=2', 2.5e10, 'bytes/s', 77)");

  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  Store& store = **latest;
  EXPECT_EQ(store.SchemaVersion(), Store::LatestSchemaVersion());
  EXPECT_EQ(QueryInt(path, "PRAGMA user_version"), Store::LatestSchemaVersion());
  EXPECT_TRUE(HasColumn(path, "calibrations", "duration_s"));

  auto got_e = store.GetExperiment("e-v1");
  ASSERT_TRUE(got_e.ok()) << got_e.error();
  ExpectSameExperiment(*got_e, e);
  auto got_t = store.GetTrials("e-v1");
  ASSERT_TRUE(got_t.ok()) << got_t.error();
  ASSERT_EQ(got_t->size(), 1u);
  const TrialRecord& old = (*got_t)[0];
  EXPECT_EQ(old.state, TrialState::kDone);
  EXPECT_EQ(old.value_s, 0.25);
  EXPECT_EQ(old.wall_s, 61);
  EXPECT_EQ(old.victim_cpu_s, 0);  // not measured before the column existed
  EXPECT_EQ(old.victim_effective_cpus, "");
  ASSERT_EQ(old.antagonists.size(), 1u);
  EXPECT_EQ(old.antagonists[0].achieved_rate, 2e9);
  EXPECT_EQ(old.antagonists[0].cpu_s, 0);
  EXPECT_EQ(old.antagonists[0].effective_cpus, "");
  // A trial saved now keeps every field, the CPU accounting included.
  const TrialRecord t = MakeTrial("e-v1", 1, 20, 2, 30);
  ASSERT_TRUE(store.SaveTrial(t).ok());
  auto again = store.GetTrials("e-v1");
  ASSERT_TRUE(again.ok() && again->size() == 2u);
  ExpectSameTrial((*again)[1], t);

  auto cal = store.GetCalibration("n1", "memcpy", "threads=2");
  ASSERT_TRUE(cal.ok() && cal->has_value()) << cal.error();
  EXPECT_EQ((*cal)->peak_rate, 2.5e10);
  EXPECT_EQ((*cal)->duration_s, 0);  // unknown for rows older than the column
  EXPECT_EQ((*cal)->measured_unix_ms, 77);
  CalibrationRecord c = **cal;
  c.duration_s = 4.5;
  ASSERT_TRUE(store.PutCalibration(c).ok());
  EXPECT_EQ((*store.GetCalibration("n1", "memcpy", "threads=2"))->duration_s, 4.5);
}

TEST(StoreMigrationTest, Version2DatabaseGainsProvenanceAndCalibrationFingerprints) {
  testing::TempDir dir;
  const std::string path = dir.File("v2.db");
  {
    auto v2 = Store::OpenAtSchemaVersionForTesting(path, 2);
    ASSERT_TRUE(v2.ok()) << v2.error();
    ASSERT_TRUE((*v2)->CreateExperiment(MakeExperiment("e-v2", 9, ExperimentState::kDone)).ok());
  }
  ASSERT_FALSE(HasColumn(path, "experiments", "provenance"));
  testing::ExecRaw(
      path,
      "INSERT INTO calibrations (node, injector, options_key, peak_rate, unit, "
      "measured_unix_ms, duration_s) VALUES ('n1', 'memcpy', '', 1e9, 'bytes/s', 5, 2)");
  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  Store& store = **latest;
  auto e = store.GetExperiment("e-v2");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->provenance_json, "{}");  // an old run has no provenance: an empty object
  auto cal = store.GetCalibration("n1", "memcpy", "");
  ASSERT_TRUE(cal.ok() && cal->has_value()) << cal.error();
  EXPECT_EQ((*cal)->node_fingerprint, "");  // unknown: any snapshot of the node differs
  CalibrationRecord c = **cal;
  c.node_fingerprint = "0123abcd";
  ASSERT_TRUE(store.PutCalibration(c).ok());
  EXPECT_EQ((*store.GetCalibration("n1", "memcpy", ""))->node_fingerprint, "0123abcd");
  ASSERT_TRUE(store.SetProvenance("e-v2", R"({"codl_version":"x"})").ok());
  EXPECT_EQ(store.GetExperiment("e-v2")->provenance_json, R"({"codl_version":"x"})");
  EXPECT_FALSE(store.SetProvenance("nope", "{}").ok()) << "an unknown experiment is an error";
}

TEST(StoreMigrationTest, NewerDatabaseIsRefusedNamingBothVersions) {
  testing::TempDir dir;
  const std::string path = dir.File("future.db");
  { ASSERT_TRUE(Store::Open(path).ok()); }
  const int future = Store::LatestSchemaVersion() + 1;
  testing::ExecRaw(path, "PRAGMA user_version = " + std::to_string(future));
  auto s = Store::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error(), HasSubstr(path));
  EXPECT_THAT(s.error(), HasSubstr("schema version " + std::to_string(future)));
  EXPECT_THAT(s.error(), HasSubstr("latest " + std::to_string(Store::LatestSchemaVersion())));
  EXPECT_EQ(QueryInt(path, "PRAGMA user_version"), future);  // left as it was
}

TEST(StoreMigrationTest, TestHookRefusesVersionsThatDoNotExist) {
  testing::TempDir dir;
  EXPECT_FALSE(Store::OpenAtSchemaVersionForTesting(dir.File("a.db"), 0).ok());
  EXPECT_FALSE(
      Store::OpenAtSchemaVersionForTesting(dir.File("b.db"), Store::LatestSchemaVersion() + 1)
          .ok());
}

TEST(StoreMigrationTest, SimultaneousFirstOpensAllSucceed) {
  testing::TempDir dir;
  const std::string path = dir.File("race.db");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      auto s = Store::Open(path);
      if (!s.ok() || (*s)->SchemaVersion() != Store::LatestSchemaVersion()) {
        ADD_FAILURE() << (s.ok() ? "wrong version" : s.error());
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(QueryInt(path, "PRAGMA user_version"), Store::LatestSchemaVersion());
}

}  // namespace
}  // namespace codl::store
