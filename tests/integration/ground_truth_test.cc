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

// Additive attribution (issue: where the extra time went): the truth victim's antagonist adds
// exactly base x gain x intensity per step, all of it to data_wait_s; compute_s and the
// near-zero h2d_s add nothing, nor does the time it leaves untimed; read_s overlaps the step.
TEST_F(GroundTruthTest, PhaseAttributionAddsUpToTheKnownAddedTime) {
  Run(", --phases", "[0.5, max]", "");
  auto pairings = Results("");
  for (const char* key : {"tick@0.5", "tick@max"}) {
    ASSERT_TRUE(pairings.count(key)) << table_;
    const auto& p = pairings[key];
    const double x = p["antagonists"][0]["max"].get<bool>()
                         ? 1.0
                         : p["antagonists"][0]["target_rate"].get<double>() / kCapacity;
    const double truth = 0.01 * kGain * x;  // seconds per step
    const auto& a = p["attribution"];
    EXPECT_NEAR(a["added_s"].get<double>(), truth, 0.05 * truth) << key << ": " << a.dump();
    EXPECT_NEAR(a["unexplained_s"].get<double>(), 0, 0.05 * truth) << key << ": " << a.dump();
    ASSERT_FALSE(a["ci_low"].is_null()) << a.dump();  // 3 trials a side
    EXPECT_LE(a["ci_low"].get<double>(), a["added_s"].get<double>() + 1e-12);
    std::map<std::string, nlohmann::json> phases;
    for (const auto& ph : p["phases"]) phases[ph["phase"].get<std::string>()] = ph;
    ASSERT_TRUE(phases.count("data_wait_s") && phases.count("compute_s") && phases.count("h2d_s") &&
                phases.count("read_s"))
        << p["phases"].dump();
    EXPECT_NEAR(phases["data_wait_s"]["added_s"].get<double>(), truth, 0.05 * truth);
    EXPECT_TRUE(phases["data_wait_s"]["significant"].get<bool>());
    EXPECT_NEAR(phases["compute_s"]["added_s"].get<double>(), 0, 0.05 * truth);
    // data_wait is 0 at baseline and h2d 0.2 % of the step: deltas, never ratios.
    EXPECT_TRUE(phases["data_wait_s"]["near_zero"].get<bool>());
    EXPECT_TRUE(phases["data_wait_s"]["slowdown"].is_null());
    EXPECT_TRUE(phases["h2d_s"]["near_zero"].get<bool>());
    EXPECT_NEAR(phases["h2d_s"]["added_s"].get<double>(), 0, 1e-9);
    // read_s: off the step's path, feeding data_wait; its own slowdown is 1 + 3x.
    EXPECT_FALSE(phases["read_s"]["on_path"].get<bool>());
    EXPECT_EQ(phases["read_s"]["feeds"], "data_wait_s");
    EXPECT_NEAR(phases["read_s"]["slowdown"].get<double>(), 1 + 3 * x, 0.02 * (1 + 3 * x));
  }
  // The table says it in milliseconds per step, not as a ratio of a near-zero phase.
  EXPECT_NE(table_.find("phases: +5.00 ms/step"), std::string::npos) << table_;
  EXPECT_NE(table_.find("data_wait +5.00 ms*"), std::string::npos) << table_;
  EXPECT_NE(table_.find("read 4.00x (feeds data_wait)"), std::string::npos) << table_;
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
