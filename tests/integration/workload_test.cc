// A real job as the neighbour (workload antagonists), through the real controller and agent
// (embedded `codlctl run`): codl-truth-victim in pair mode slows each job by a known gain while
// the other runs (truth_victim.cc), so both directions have a known true value: the victim's
// slowdown beside the neighbour (1 + victim gain) and the neighbour's beside the victim
// (1 + neighbour gain), and the pair's combined throughput (their inverses' sum).
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

constexpr double kVictimGain = 0.3;     // victim beside the neighbour: 1.3x
constexpr double kNeighbourGain = 0.2;  // neighbour beside the victim: 1.2x
constexpr double kTolerance = 0.03;     // the bound: within +-3% both ways

// `--trials -o json`: one JSON object per line.
std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> rows;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) rows.push_back(nlohmann::json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  return rows;
}

class WorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-workload"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }

  std::string Yaml(const std::string& neighbour_flags) const {
    return "name: two-way\n"
           "victim:\n"
           "  command: [codl-truth-victim, --pair, " +
           dir_ + ", --role, victim, --steps, '40', --warmup, '2', --base, '0.02', --gain, '" +
           std::to_string(kVictimGain) +
           "']\n"
           "  warmup_steps: 2\n"
           "  timeout: 60s\n"
           "antagonists:\n"
           "  - name: job2\n"
           "    workload:\n"
           "      command: [codl-truth-victim, --pair, " +
           dir_ + ", --role, neighbour, --steps, '0', --base, '0.02', --gain, '" +
           std::to_string(kNeighbourGain) + "'" + neighbour_flags +
           "]\n"
           "      warmup_steps: 3\n"
           "      settle: 30s\n"
           "repetitions: 3\nsettle: 0.5s\nwarmup_trials: 1\n";
  }

  CommandResult Run(const std::string& yaml) {
    WriteFile(dir_ + "/exp.yaml", yaml);
    return RunCommand({Bin("codlctl"), "run", dir_ + "/exp.yaml", "--scratch-root", dir_}, 300,
                      dir_);
  }

  nlohmann::json Results() {
    auto r = RunCommand(
        {Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }

  std::string dir_;
};

TEST_F(WorkloadTest, BothDirectionsMatchTheKnownSlowdowns) {
  auto r = Run(Yaml(""));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = Results();
  nlohmann::json pair;
  for (const auto& p : j["pairings"]) {
    if (p["pairing"] == "job2@run") pair = p;
    EXPECT_NE(p["pairing"], "job2@solo") << "a solo run is no victim pairing";
  }
  ASSERT_TRUE(pair.is_object()) << j.dump();
  const double victim_truth = 1 + kVictimGain, neighbour_truth = 1 + kNeighbourGain;
  EXPECT_NEAR(pair["slowdown"].get<double>(), victim_truth, kTolerance * victim_truth);
  ASSERT_EQ(pair["neighbours"].size(), 1u) << pair.dump();
  const auto& n = pair["neighbours"][0];
  EXPECT_EQ(n["name"], "job2");
  EXPECT_EQ(n["unit"], "s/step");
  EXPECT_EQ(n["n"], 3);
  EXPECT_EQ(n["n_solo"], 3);
  EXPECT_NEAR(n["slowdown"].get<double>(), neighbour_truth, kTolerance * neighbour_truth)
      << n.dump();
  EXPECT_NEAR(n["solo_value"].get<double>(), 0.02, 0.02 * kTolerance) << n.dump();
  EXPECT_TRUE(n["ci_low"].is_number() && n["ci_high"].is_number()) << n.dump();
  EXPECT_LE(n["ci_low"].get<double>(), n["slowdown"].get<double>());
  EXPECT_GE(n["ci_high"].get<double>(), n["slowdown"].get<double>());
  EXPECT_TRUE(n["p_value"].is_number()) << n.dump();
  const double combined = 1 / victim_truth + 1 / neighbour_truth;
  EXPECT_NEAR(n["combined_throughput"].get<double>(), combined, kTolerance * combined);
  // The run's own table shows both directions.
  EXPECT_NE(r.out.find("job2 beside the victim"), std::string::npos) << r.out;

  // The report's two-way section.
  auto report = RunCommand({Bin("codlctl"), "report", "latest", "--db", dir_ + "/codl-results.db",
                            "--output", dir_ + "/report.html"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string html = ReadFile(dir_ + "/report.html");
  EXPECT_NE(html.find("Two-way: real jobs as the neighbour"), std::string::npos);
  EXPECT_NE(html.find("<td><code>job2@run</code></td><td>job2</td>"), std::string::npos);

  // --trials: one victim row per trial with a victim, one neighbour row per workload figure.
  auto t = RunCommand({Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db",
                       "--trials", "-o", "json"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  int victim_rows = 0, neighbour_rows = 0, solo_rows = 0;
  for (const auto& row : JsonLines(t.out)) {
    if (row["role"] != "neighbour") ++victim_rows;
    if (row["role"] == "neighbour") {
      ++neighbour_rows;
      if (row["pairing"] == "job2@solo") ++solo_rows;
    }
  }
  EXPECT_EQ(solo_rows, 3) << t.out;
  EXPECT_EQ(neighbour_rows, 6) << t.out;  // 3 beside the victim, 3 alone
  EXPECT_GE(victim_rows, 6) << t.out;     // 3 paired, 3+ baselines
}

TEST_F(WorkloadTest, ANeighbourThatEndsBeforeTheVictimFlagsTheTrial) {
  // The neighbour exits 0.3 s after it first sees the victim (whose run takes ~1 s).
  std::string yaml = Yaml(", --exit-after-peer, '0.3'");
  yaml += "min_antagonist_samples: 0\n";
  auto r = Run(yaml);
  // Every paired trial is flagged: nothing beside the victim was measured, so codlctl says so.
  const nlohmann::json j = Results();
  bool found = false;
  for (const auto& p : j["pairings"]) {
    if (p["pairing"] != "job2@run") continue;
    found = true;
    EXPECT_EQ(p["n"], 0) << p.dump();
    EXPECT_EQ(p["n_flagged"], 3) << p.dump();
  }
  EXPECT_TRUE(found) << j.dump();
  auto t = RunCommand({Bin("codlctl"), "results", "latest", "--db", dir_ + "/codl-results.db",
                       "--trials", "-o", "json"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  int ended = 0;
  for (const auto& row : JsonLines(t.out)) {
    if (row["pairing"] == "job2@run" && row["role"] == "interfered") {
      EXPECT_EQ(row["state"], "flagged") << row.dump();
      EXPECT_NE(row["flag_reasons"].get<std::string>().find("neighbour_ended"), std::string::npos)
          << row.dump();
      EXPECT_NE(row["exclude_reason"].get<std::string>().find("neighbour job2 on"),
                std::string::npos)
          << row.dump();
      ++ended;
    }
  }
  EXPECT_EQ(ended, 3) << t.out;
  (void)r;
}

TEST_F(WorkloadTest, LevelsOnAWorkloadAreRejectedWithTheirLocation) {
  WriteFile(dir_ + "/exp.yaml",
            "name: bad\n"
            "victim: {command: [codl-truth-victim]}\n"
            "antagonists:\n"
            "  - name: job2\n"
            "    workload: {command: [sleep, '100']}\n"
            "    levels: [0.5]\n");
  auto r = RunCommand({Bin("codlctl"), "validate", dir_ + "/exp.yaml"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("exp.yaml:6:5: antagonists[0].levels: levels does not apply to a "
                       "workload"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace codl::testing
