// trial_traces (migration 12): a trial's profiler trace (victim.trace) is kept with the trial in
// SaveTrial's transaction, read back byte for byte, replaced with the trial, and absent for a
// trial without one.
#include <gtest/gtest.h>

#include "lib/common/compress.h"
#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::MakeExperiment;
using testing::MakeTrial;

TEST(TraceStoreTest, ATraceRoundTripsWithItsTrialAndGoesWithIt) {
  testing::TempDir dir;
  auto store = Store::Open(dir.File("t.db"));
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->CreateExperiment(MakeExperiment("e1", 1)).ok());
  const std::string json = R"({"traceEvents":[{"name":"codl.step#3","ph":"X","ts":10,"dur":5}]})";
  auto z = ZlibCompress(json);
  ASSERT_TRUE(z.ok());
  TrialRecord traced = MakeTrial("e1", 0, 0, 0, 0);
  traced.trace_zlib = *z;
  traced.trace_raw_bytes = static_cast<int64_t>(json.size());
  ASSERT_TRUE((*store)->SaveTrial(traced).ok());
  ASSERT_TRUE((*store)->SaveTrial(MakeTrial("e1", 1, 0, 0, 0)).ok());

  auto got = (*store)->GetTrialTrace("latest", 0);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->raw_bytes, static_cast<int64_t>(json.size()));
  EXPECT_EQ((*got)->zlib, *z) << "bytes, not text: NULs and all";
  auto back = ZlibDecompress((*got)->zlib, 1 << 20);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, json);

  auto none = (*store)->GetTrialTrace("e1", 1);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto trials = (*store)->GetTrials("e1");
  ASSERT_TRUE(trials.ok());
  EXPECT_TRUE(trials->at(0).trace_zlib.empty()) << "not loaded with the trials";

  // A trial saved again (a resume reruns a cut-off trial) replaces its trace too.
  ASSERT_TRUE((*store)->SaveTrial(MakeTrial("e1", 0, 0, 0, 0)).ok());
  auto replaced = (*store)->GetTrialTrace("e1", 0);
  ASSERT_TRUE(replaced.ok());
  EXPECT_FALSE(replaced->has_value());
  EXPECT_FALSE((*store)->GetTrialTrace("nope", 0).ok());
}

TEST(CompressTest, RoundTripAndRefusals) {
  std::string data(300000, 'x');
  data[12345] = '\0';
  auto z = ZlibCompress(data);
  ASSERT_TRUE(z.ok());
  EXPECT_LT(z->size(), data.size() / 50);
  auto back = ZlibDecompress(*z, data.size());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, data);
  auto capped = ZlibDecompress(*z, 1000);
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.error().find("exceeds 1000 bytes"), std::string::npos) << capped.error();
  EXPECT_FALSE(ZlibDecompress(z->substr(0, z->size() / 2), 1 << 20).ok()) << "truncated";
  EXPECT_FALSE(ZlibDecompress("not zlib at all", 1 << 20).ok());
  EXPECT_FALSE(ZlibDecompress("", 1 << 20).ok());
}

}  // namespace
}  // namespace codl::store
