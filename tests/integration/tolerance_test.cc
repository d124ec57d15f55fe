// The tolerance search against ground truth, through the real controller and agent (embedded
// `codlctl run`): codl-truth-victim's steady slowdown is 1 + k * x at antagonist intensity x
// (truth_victim.cc), so the threshold 1.10 is crossed at x = 0.1 / k exactly. For k in
// {0.5, 1, 2} the reported interval [tolerated, breaks] must hold it and be at most
// `resolution` wide, within max_trials.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

constexpr double kCapacity = 100000;  // the noop antagonist's pretend peak, units/s
constexpr double kThreshold = 1.10;
constexpr double kResolution = 0.05;
constexpr int kMaxTrials = 40;

class ToleranceTest : public ::testing::TestWithParam<double> {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-tolerance"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string dir_;
};

TEST_P(ToleranceTest, TheIntervalHoldsTheKnownThreshold) {
  const double k = GetParam();
  WriteFile(dir_ + "/exp.yaml",
            "name: tolerance\n"
            "victim:\n"
            "  command: [codl-truth-victim, --tag, " +
                dir_ + ", --capacity, '" + std::to_string(kCapacity) +
                "', --steps, '12', --warmup, '1', --base, '0.01', --gain, '" + std::to_string(k) +
                "']\n"
                "  warmup_steps: 1\n"
                "  timeout: 30s\n"
                "antagonists:\n"
                "  - {name: tick, injector: noop, options: {capacity: " +
                std::to_string(kCapacity) +
                "}}\n"
                "tolerance: {slowdown: 1.10, resolution: 0.05, max_trials: " +
                std::to_string(kMaxTrials) +
                "}\n"
                "repetitions: 3\nsettle: 0.3s\ncalibration: {duration: 1s}\n"
                "min_antagonist_samples: 0\nwarmup_trials: 0\n");
  auto r =
      RunCommand({Bin("codlctl"), "run", dir_ + "/exp.yaml", "--scratch-root", dir_}, 400, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto res = RunCommand(
      {Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db", "-o", "json"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  ASSERT_EQ(j["tolerance"].size(), 1u) << res.out;
  const auto& t = j["tolerance"][0];
  EXPECT_EQ(t["name"], "tick");
  EXPECT_EQ(t["stop_reason"], "resolved") << t.dump();
  // The truth in level terms: x = level * peak / capacity, and peak = target / level.
  double peak = 0;
  for (const auto& p : j["pairings"]) {
    if (p["baseline"].get<bool>() || p["antagonists"].empty()) continue;
    const auto& a = p["antagonists"][0];
    peak = a["target_rate"].get<double>() / a["level"].get<double>();
    break;
  }
  ASSERT_GT(peak, 0) << res.out;
  const double truth = (kThreshold - 1) / k * kCapacity / peak;
  const double lo = t["tolerated_level"].get<double>(), hi = t["breaks_level"].get<double>();
  EXPECT_LE(lo, truth + 1e-6) << t.dump();
  EXPECT_GE(hi, truth - 1e-6) << t.dump();
  EXPECT_LE(hi - lo, kResolution + 1e-9) << t.dump();
  // The figure (docs/validity.md, "Tolerance search against ground truth").
  printf("tolerance k=%g: true threshold %.4f, reported [%.4f, %.4f], %d search trials of %d\n", k,
         truth, lo, hi, t["trials"].get<int>(), kMaxTrials);
  EXPECT_GT(t["trials"].get<int>(), 0);
  EXPECT_LE(t["trials"].get<int>(), kMaxTrials);
  // The report draws it on the sensitivity curve.
  auto report = RunCommand({Bin("codlctl"), "report", "latest", "--db", dir_ + "/codl-results.db",
                            "--output", dir_ + "/report.html"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string html = ReadFile(dir_ + "/report.html");
  EXPECT_NE(html.find("class=\"tolerance\""), std::string::npos);
  EXPECT_NE(html.find("tolerance: tick tolerates up to level"), std::string::npos);
  // The run and the table say it in words.
  EXPECT_NE(r.out.find("tolerance: tick tolerates up to level"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Gains, ToleranceTest, ::testing::Values(0.5, 1.0, 2.0),
                         [](const ::testing::TestParamInfo<double>& info) {
                           return "k" + std::to_string(static_cast<int>(info.param * 10));
                         });

}  // namespace
}  // namespace codl::testing
