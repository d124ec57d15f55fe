// `codlctl profile` end to end (embedded controller + agent, real processes): a victim whose
// slowdown is known by construction (codl-truth-victim: 1 + gain * x at intensity x) profiled
// against the noop injector. The profile's row must hold the sweep, the tolerance interval
// around the true threshold and the slowdown at the peak; --show prints the stored profile as
// table, JSON and CSV; the report opens with it; --plan runs nothing; bad flags are named.
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

constexpr double kCapacity = 100000;  // the noop antagonist's pretend peak, units/s
constexpr double kGain = 1.0;         // slowdown 1 + x: the threshold 1.1 is crossed at x = 0.1

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("codl-profile");
    // Its antagonist is replaced by the profile's, which keeps the options it gives noop.
    WriteFile(dir_ + "/victim.yaml",
              "name: truth\n"
              "victim:\n"
              "  command: [codl-truth-victim, --tag, " +
                  dir_ + ", --capacity, '" + std::to_string(kCapacity) +
                  "', --steps, '12', --warmup, '1', --base, '0.01', --gain, '" +
                  std::to_string(kGain) +
                  "']\n"
                  "  warmup_steps: 1\n"
                  "  timeout: 30s\n"
                  "antagonists:\n"
                  "  - {name: tick, injector: noop, levels: [0.5], options: {capacity: " +
                  std::to_string(kCapacity) +
                  "}}\n"
                  "repetitions: 3\nsettle: 0.3s\ncalibration: {duration: 1s}\n"
                  "min_antagonist_samples: 0\nwarmup_trials: 0\n");
  }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string Db() const { return dir_ + "/codl-results.db"; }
  std::string dir_;
};

TEST_F(ProfileTest, TheRowHoldsTheSweepTheToleranceAndThePeak) {
  auto r = RunCommand({Bin("codlctl"),
                       "profile",
                       dir_ + "/victim.yaml",
                       "--injectors",
                       "noop",
                       "--levels",
                       "0.25,0.5,1",
                       "--slowdown",
                       "1.1",
                       "--resolution",
                       "0.05",
                       "--max-trials",
                       "30",
                       "--scratch-root",
                       dir_,
                       "--db",
                       Db(),
                       "-o",
                       "json",
                       "--report",
                       dir_ + "/report.html"},
                      400, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], "truth-profile");
  ASSERT_EQ(j["rows"].size(), 1u) << r.out;
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["antagonist"], "noop");
  EXPECT_EQ(row["injector"], "noop");
  EXPECT_FALSE(row["resource"].get<std::string>().empty());
  // The sweep's three levels, then the search's own.
  ASSERT_GE(row["curve"].size(), 4u) << row.dump();
  // At the peak (level 1, x = 1 when the calibrated peak is the capacity): 1 + gain.
  ASSERT_TRUE(row["at_peak"].is_object()) << row.dump();
  EXPECT_EQ(row["at_peak"]["level"], 1.0);
  const double peak_slowdown = row["at_peak"]["slowdown"].get<double>();
  EXPECT_NEAR(peak_slowdown, 1 + kGain, 0.1 * (1 + kGain)) << row.dump();
  // The tolerance interval holds the true threshold, in level terms x / (peak / capacity),
  // with the peak read back from the sweep's slowdown at level 1 (x_at_1 = slowdown - 1).
  const auto& t = row["tolerance"];
  ASSERT_TRUE(t.is_object()) << row.dump();
  EXPECT_EQ(t["stop_reason"], "resolved") << t.dump();
  const double x_at_1 = (peak_slowdown - 1) / kGain;
  const double truth = (1.1 - 1) / kGain / x_at_1;
  EXPECT_LE(t["tolerated_level"].get<double>(), truth + 1e-6) << t.dump();
  EXPECT_GE(t["breaks_level"].get<double>(), truth - 1e-6) << t.dump();
  EXPECT_LE(t["breaks_level"].get<double>() - t["tolerated_level"].get<double>(), 0.05 + 1e-9);
  EXPECT_LE(t["trials"].get<int>(), 30);

  // --show: the stored profile, as table, JSON (the same rows) and CSV.
  auto table = RunCommand({Bin("codlctl"), "profile", "--show", "latest", "--db", Db()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("profile of truth-profile"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("tolerates"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("resolved"), std::string::npos) << table.out;
  auto json =
      RunCommand({Bin("codlctl"), "profile", "--show", "latest", "--db", Db(), "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["rows"], j["rows"]);
  auto csv = RunCommand({Bin("codlctl"), "profile", "--show", "latest", "--db", Db(), "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("experiment_id,resource,antagonist,injector,level,max,n,slowdown", 0), 0u)
      << csv.out;

  // The report opens with the profile.
  const std::string html = ReadFile(dir_ + "/report.html");
  const size_t profile = html.find("<section id=\"profile\">");
  ASSERT_NE(profile, std::string::npos);
  EXPECT_LT(profile, html.find("<section id=\"heatmap\">"));
  EXPECT_NE(html.find("class=\"profile\""), std::string::npos);
}

TEST_F(ProfileTest, PlanPrintsTheTrialsAndRunsNothing) {
  auto r = RunCommand({Bin("codlctl"), "profile", dir_ + "/victim.yaml", "--plan", "--db", Db(),
                       "--scratch-root", dir_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Every injector codl-inject reports available on this host (io_uring too: codlctl itself
  // links no ring), noop (a test double) left out, in codl-inject's order.
  auto list = RunCommand({Bin("codl-inject"), "--list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::string expected;
  std::istringstream lines(list.out);
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.contains("available") || !e["available"].get<bool>() ||
        e["name"] == "noop")
      continue;
    expected += (expected.empty() ? "" : ", ") + e["name"].get<std::string>();
  }
  ASSERT_FALSE(expected.empty()) << list.out;
  EXPECT_NE(r.out.find("against: " + expected + "\n"), std::string::npos)
      << r.out << "\nexpected: " << expected;
  EXPECT_NE(r.out.find("memcpy"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("noop"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("estimated duration"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tolerance search of memcpy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memcpy@0.25"), std::string::npos) << r.out;
  struct stat st;
  EXPECT_NE(stat(Db().c_str(), &st), 0) << "--plan created the database";
}

TEST_F(ProfileTest, BadFlagsAreNamed) {
  auto levels = RunCommand(
      {Bin("codlctl"), "profile", dir_ + "/victim.yaml", "--levels", "0.5,1.5", "--plan"});
  EXPECT_EQ(levels.exit_code, 2);
  EXPECT_NE(levels.err.find("--levels: '1.5' is not a level in (0, 1] or max"), std::string::npos)
      << levels.err;
  auto slowdown =
      RunCommand({Bin("codlctl"), "profile", dir_ + "/victim.yaml", "--slowdown", "0.9", "--plan"});
  EXPECT_EQ(slowdown.exit_code, 2);
  EXPECT_NE(slowdown.err.find("--slowdown"), std::string::npos) << slowdown.err;
  auto unknown = RunCommand(
      {Bin("codlctl"), "profile", dir_ + "/victim.yaml", "--injectors", "nope", "--plan"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown injector 'nope'"), std::string::npos) << unknown.err;
  auto both = RunCommand(
      {Bin("codlctl"), "profile", dir_ + "/victim.yaml", "--show", "latest", "--db", Db()});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
  auto missing = RunCommand({Bin("codlctl"), "profile", "--show", "latest", "--db", Db()});
  EXPECT_NE(missing.exit_code, 0);
  auto bad_yaml = RunCommand({Bin("codlctl"), "profile", dir_ + "/nope.yaml", "--plan"});
  EXPECT_EQ(bad_yaml.exit_code, 2);
  EXPECT_NE(bad_yaml.err.find("nope.yaml"), std::string::npos) << bad_yaml.err;
}

}  // namespace
}  // namespace codl::testing
