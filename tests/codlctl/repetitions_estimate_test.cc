// validate --plan for adaptive repetitions: the blocks estimate comes from the newest finished
// experiment with the same victim on the same nodes, and says which one; otherwise "no
// estimate".
#include "codlctl/repetitions_estimate.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "lib/store/store.h"

namespace codl::cli {
namespace {

const char* kOldYaml =
    "name: old\nvictim: {command: [train, --fast]}\n"
    "antagonists: [{name: membw, injector: memcpy, levels: [0.5]}]\nrepetitions: 5\n";

experiment::ExperimentSpec Spec(const std::string& command, const std::string& repetitions) {
  auto s = experiment::ParseExperiment("name: new\nvictim: {command: " + command +
                                           "}\nantagonists: [{name: membw, injector: memcpy, "
                                           "levels: [0.5]}]\nrepetitions: " +
                                           repetitions + "\n",
                                       "new.yaml");
  EXPECT_TRUE(s.ok()) << s.error();
  return *s;
}

class RepetitionsEstimateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (std::filesystem::temp_directory_path() /
           ("codl-estimate-" + std::to_string(getpid()) + ".db"))
              .string();
    auto store = store::Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    ExperimentRecord e;
    e.id = "old-1";
    e.name = "old";
    e.yaml = kOldYaml;
    e.state = ExperimentState::kDone;
    ASSERT_TRUE((*store)->CreateExperiment(e).ok());
    // Baselines 1.0 +- 2 %, membw@0.5 twice as slow with the same spread: a CI a few % wide.
    const double noise[] = {0.98, 1.02, 1.0, 0.99, 1.01};
    for (int i = 0; i < 10; ++i) {
      TrialRecord t;
      t.experiment_id = e.id;
      t.index = i;
      t.baseline = i % 2 == 0;
      t.pairing = t.baseline ? "baseline" : "membw@0.5";
      t.state = TrialState::kDone;
      t.value_s = t.wall_s = (t.baseline ? 1.0 : 2.0) * noise[i / 2];
      ASSERT_TRUE((*store)->SaveTrial(t).ok());
    }
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_ + suffix);
  }
  std::string db_;
};

TEST_F(RepetitionsEstimateTest, SameVictimOnSameNodesGivesAnEstimateNamingTheExperiment) {
  const std::string line = AdaptiveRepetitionsEstimate(
      Spec("[train, --fast]", "{min: 3, max: 40, ci_halfwidth: 0.5%}"), db_);
  EXPECT_EQ(line.rfind("adaptive repetitions: min 3, max 40 blocks, target CI half-width 0.5%: "
                       "about ",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("estimated from experiment old-1 in " + db_), std::string::npos) << line;
  EXPECT_NE(line.find("its widest pairing membw@0.5"), std::string::npos) << line;
}

TEST_F(RepetitionsEstimateTest, AnotherVictimOrFixedRepetitionsGiveNoEstimate) {
  const std::string other = AdaptiveRepetitionsEstimate(
      Spec("[train, --slow]", "{min: 3, max: 40, ci_halfwidth: 1%}"), db_);
  EXPECT_NE(other.find("no estimate of the blocks needed"), std::string::npos) << other;
  EXPECT_EQ(AdaptiveRepetitionsEstimate(Spec("[train, --fast]", "5"), db_), "");
  EXPECT_NE(AdaptiveRepetitionsEstimate(Spec("[train, --fast]",
                                             "{min: 3, max: 4, "
                                             "ci_halfwidth: 1%}"),
                                        "/nonexistent/codl-results.db")
                .find("no estimate"),
            std::string::npos);
}

TEST(SameVictimOnSameNodes, ComparesTheCommandAndTheVictimsNodeSelection) {
  auto a = Spec("[train]", "5");
  auto b = Spec("[train]", "7");
  EXPECT_TRUE(SameVictimOnSameNodes(a, b));
  b.nodes.kind = experiment::NodeSelector::Kind::kHosts;
  b.nodes.hosts = {"gpu-2"};
  EXPECT_FALSE(SameVictimOnSameNodes(a, b));
}

}  // namespace
}  // namespace codl::cli
