// Ground truth through the real controller and agent (embedded `codlctl run`): codl-truth-victim
// reports step times built from the intensity of the antagonist running beside it (see
// truth_victim.cc), so every reported slowdown has a known true value. Checked for every
// per-trial metric (re-analysed with `codlctl results --metric`), and for a pipelined victim
// whose median disagrees with its elapsed time: the default metric must get the elapsed truth.
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

constexpr double kCapacity = 100000;  // the noop antagonist's pretend peak, units/s
constexpr double kGain = 0.5;         // steady victim: slowdown = 1 + kGain * intensity
constexpr double kTolerance = 0.02;   // the bound: within +-2% of the truth

class GroundTruthTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-truth"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }

  // Runs an experiment of the truth victim against a noop antagonist at `levels`.
  void Run(const std::string& victim_flags, const std::string& levels, const std::string& metric) {
    WriteFile(dir_ + "/exp.yaml",
              "name: truth\n"
              "victim:\n"
              "  command: [codl-truth-victim, --tag, " +
                  dir_ + ", --capacity, '" + std::to_string(kCapacity) +
                  "', --steps, '20', --warmup, '2', --base, '0.01', --gain, '" +
                  std::to_string(kGain) + "'" + victim_flags +
                  "]\n"
                  "  warmup_steps: 2\n"
                  "  timeout: 30s\n" +
                  (metric.empty() ? "" : "  metric: " + metric + "\n") +
                  "antagonists:\n"
                  "  - {name: tick, injector: noop, options: {capacity: " +
                  std::to_string(kCapacity) + "}, levels: " + levels +
                  "}\n"
                  "repetitions: 3\nsettle: 1s\ncalibration: {duration: 1s}\n"
                  // The truth victim runs ~0.3 s, fewer antagonist samples (one per 0.2 s) than the
                  // "too short to judge" check needs; this test is about the metric.
                  "min_antagonist_samples: 0\n");
    auto r =
        RunCommand({Bin("codlctl"), "run", dir_ + "/exp.yaml", "--scratch-root", dir_}, 240, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    table_ = r.out;
  }

  // pairing -> its JSON object, analysed under `metric` ("" = the experiment's own).
  std::map<std::string, nlohmann::json> Results(const std::string& metric) {
    std::vector<std::string> argv = {
        Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db", "-o", "json"};
    if (!metric.empty()) argv.insert(argv.end(), {"--metric", metric});
    auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, nlohmann::json> out;
    if (r.exit_code != 0) return out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["metric"], metric.empty() ? "elapsed" : metric);
    for (const auto& p : j["pairings"]) out[p["pairing"].get<std::string>()] = p;
    return out;
  }

  std::string dir_;
  std::string table_;
};

TEST_F(GroundTruthTest, EveryMetricReportsTheKnownSlowdown) {
  Run("", "[0.5, max]", "");
  for (const char* metric : {"elapsed", "throughput", "mean", "median", "p90"}) {
    auto pairings = Results(metric);
    ASSERT_TRUE(pairings.count("tick@0.5") && pairings.count("tick@max")) << metric;
    // Truth at a level: the rate the antagonist was asked for, over the victim's capacity.
    const auto& half = pairings["tick@0.5"];
    ASSERT_GT(half["n"].get<int>(), 0) << half.dump();
    const double rate = half["antagonists"][0]["target_rate"].get<double>();
    const double truth_half = 1 + kGain * rate / kCapacity;
    EXPECT_NEAR(half["slowdown"].get<double>(), truth_half, kTolerance * truth_half)
        << metric << ": " << half.dump();
    // max: open loop, its own intensity, never flagged.
    const auto& max = pairings["tick@max"];
    EXPECT_EQ(max["n_flagged"].get<int>(), 0) << max.dump();
    EXPECT_TRUE(max["antagonists"][0]["max"].get<bool>());
    EXPECT_NEAR(max["slowdown"].get<double>(), 1 + kGain, kTolerance * (1 + kGain))
        << metric << ": " << max.dump();
    EXPECT_NEAR(max["slowdown_all"].get<double>(), 1 + kGain, kTolerance * (1 + kGain));
  }
}

TEST_F(GroundTruthTest, PipelinedVictimDefaultMetricGetsElapsedTruth) {
  Run(", --pipelined", "[max]", "");
  // 20 measured steps, 8 of them slow alone and 12 beside the antagonist (see truth_victim.cc).
  const double truth = (12 * 0.03 + 8 * 0.01) / (8 * 0.03 + 12 * 0.01);
  auto by_default = Results("");
  ASSERT_TRUE(by_default.count("tick@max")) << table_;
  EXPECT_NEAR(by_default["tick@max"]["slowdown"].get<double>(), truth, kTolerance * truth);
  EXPECT_NE(table_.find("metric: elapsed"), std::string::npos) << table_;
  // The median jumps between the two clusters: 3x, far from the time-to-train truth.
  auto by_median = Results("median");
  EXPECT_NEAR(by_median["tick@max"]["slowdown"].get<double>(), 3.0, 0.06);
}

TEST_F(GroundTruthTest, InvalidMetricIsRejectedWithItsLocation) {
  WriteFile(dir_ + "/bad.yaml",
            "name: bad\nvictim:\n  command: [true]\n  metric: fastest\nantagonists: []\n");
  auto r = RunCommand({Bin("codlctl"), "validate", dir_ + "/bad.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.yaml:4:11"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("victim.metric"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("elapsed, throughput, mean, median, pNN"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace codl::testing
