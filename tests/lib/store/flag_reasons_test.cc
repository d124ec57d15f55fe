// trial_flag_reasons (migration 8): a flagged trial's reasons come back as the list it was saved
// with, its `error` text unchanged beside them; rows older than the table read as one "unknown"
// reason holding that text.
#include <gtest/gtest.h>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

TEST(FlagReasonsTest, ReasonsRoundTripInOrderWithTheirCodes) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  TrialRecord t = MakeTrial("e1", 0, 1, 1, 1);
  t.flag_reasons = {{FlagCode::kDidNotSettle, "did not settle: held 0.2 s of 1 s"},
                    {FlagCode::kMissedTarget, "membw reached 412 of target 1e+03 bytes/s"},
                    {FlagCode::kTooFewSamples, "membw: 2 samples in the victim's run"}};
  t.error = JoinFlagReasons(t.flag_reasons);
  ASSERT_TRUE((*store)->SaveTrial(t).ok());
  auto got = (*store)->GetTrials("e1", /*with_series=*/false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].flag_reasons, t.flag_reasons);
  EXPECT_EQ((*got)[0].error,
            "did not settle: held 0.2 s of 1 s; membw reached 412 of target 1e+03 bytes/s; "
            "membw: 2 samples in the victim's run");
  // A re-saved trial replaces its reasons rather than adding to them.
  t.flag_reasons.resize(1);
  t.error = JoinFlagReasons(t.flag_reasons);
  ASSERT_TRUE((*store)->SaveTrial(t).ok());
  EXPECT_EQ((*store)->GetTrials("e1", false)->at(0).flag_reasons, t.flag_reasons);
}

TEST(FlagReasonsTest, AnUnknownStoredCodeKeepsItsDetail) {
  testing::TempDir dir;
  const std::string path = dir.File("r.db");
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  ASSERT_TRUE((*store)->SaveTrial(MakeTrial("e1", 0, 0, 0, 0)).ok());
  testing::ExecRaw(path, "UPDATE trial_flag_reasons SET code = 'from_a_newer_codl' WHERE seq = 0");
  auto got = (*store)->GetTrials("e1", false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->at(0).flag_reasons.size(), 2u);
  EXPECT_EQ(got->at(0).flag_reasons[0].code, FlagCode::kUnknown);
  EXPECT_EQ(got->at(0).flag_reasons[0].detail, "did not settle: 'storage' held 0.4 s of 1 s");
  EXPECT_EQ(got->at(0).flag_reasons[1].code, FlagCode::kMissedTarget);
}

TEST(FlagReasonsTest, Version7FlaggedRowReadsItsErrorAsOneUnknownReason) {
  testing::TempDir dir;
  const std::string path = dir.File("v7.db");
  {
    auto v7 = Store::OpenAtSchemaVersionForTesting(path, 7);
    ASSERT_TRUE(v7.ok()) << v7.error();
    ASSERT_TRUE((*v7)->CreateExperiment(MakeExperiment("old", 3, ExperimentState::kDone)).ok());
  }
  // As a version-7 writer stored them: the reasons only as joined text.
  testing::ExecRaw(path,
                   "INSERT INTO trials (id, experiment_id, idx, state, error) VALUES "
                   "(1, 'old', 0, 'flagged', 'did not settle: x; membw reached 1 of target 2'), "
                   "(2, 'old', 1, 'failed', 'victim exited with status 3'), "
                   "(3, 'old', 2, 'done', '')");
  auto latest = Store::Open(path);
  ASSERT_TRUE(latest.ok()) << latest.error();
  auto got = (*latest)->GetTrials("old", false);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), 3u);
  const std::vector<FlagReason> want = {
      {FlagCode::kUnknown, "did not settle: x; membw reached 1 of target 2"}};
  EXPECT_EQ((*got)[0].flag_reasons, want);
  EXPECT_EQ((*got)[0].error, "did not settle: x; membw reached 1 of target 2");
  EXPECT_TRUE((*got)[1].flag_reasons.empty()) << "a failure is not a flag";
  EXPECT_TRUE((*got)[2].flag_reasons.empty());
}

TEST(FlagReasonsTest, CodesHaveStableNames) {
  EXPECT_STREQ(ToString(FlagCode::kMissedTarget), "missed_target");
  EXPECT_STREQ(ToString(FlagCode::kDidNotSettle), "did_not_settle");
  EXPECT_STREQ(ToString(FlagCode::kTooFewSamples), "too_few_samples");
  for (FlagCode c : {FlagCode::kUnknown, FlagCode::kMissedTarget, FlagCode::kDidNotSettle,
                     FlagCode::kTooFewSamples}) {
    EXPECT_EQ(ParseFlagCode(ToString(c)), c);
  }
  EXPECT_EQ(ParseFlagCode("missed target"), FlagCode::kUnknown);
}

}  // namespace
}  // namespace codl::store
