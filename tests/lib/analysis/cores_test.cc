// Cores used (CPU seconds / wall seconds) of the victim and each antagonist, beside the achieved
// rate in the table, CSV and JSON; records without CPU accounting show nothing rather than 0.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

TrialRecord Trial(int index, const std::string& pairing, double victim_cpu_s,
                  const std::string& cpus, double antagonist_cpu_s) {
  TrialRecord t;
  t.experiment_id = "e1";
  t.index = index;
  t.pairing = pairing;
  t.baseline = pairing == "baseline";
  t.state = TrialState::kDone;
  t.value_s = 1;
  t.wall_s = 10;
  t.victim_cpu_s = victim_cpu_s;
  t.victim_effective_cpus = cpus;
  if (!t.baseline) {
    AntagonistResult a;
    a.name = "membw";
    a.injector = "memcpy";
    a.level = 0.25;
    a.cpu_s = antagonist_cpu_s;
    a.run_s = antagonist_cpu_s > 0 ? 12 : 0;
    a.effective_cpus = antagonist_cpu_s > 0 ? "2-3" : "";
    t.antagonists.push_back(a);
  }
  return t;
}

ExperimentRecord CoresRecord() {
  ExperimentRecord e;
  e.id = "e1";
  e.name = "cores";
  return e;
}

TEST(CoresTest, MeanCoresAndCpusPerPairing) {
  auto r = Summarize(CoresRecord(),
                     {Trial(0, "baseline", 10, "0-1", 0), Trial(1, "membw@0.25", 10, "0-1", 6),
                      Trial(2, "membw@0.25", 20, "0", 3)});
  ASSERT_EQ(r.pairings.size(), 2u);
  const PairingSummary& p = r.pairings[1];
  EXPECT_DOUBLE_EQ(p.victim_cores, 1.5);  // (1.0 + 2.0) / 2
  EXPECT_EQ(p.victim_cpus, "0-1 | 0");
  ASSERT_EQ(p.antagonists.size(), 1u);
  EXPECT_DOUBLE_EQ(p.antagonists[0].cores, 0.375);  // (0.5 + 0.25) / 2
  EXPECT_EQ(p.antagonists[0].cpus, "2-3");

  EXPECT_NE(FormatTable(r, true).find("victim 1.50, membw 0.38"), std::string::npos)
      << FormatTable(r, true);
  const std::string csv = FormatCsv(r);
  EXPECT_NE(csv.find(",membw,memcpy,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.375,2-3,1.5,0-1 | 0,"), std::string::npos) << csv;
  auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_DOUBLE_EQ(j["pairings"][1]["victim_cores"].get<double>(), 1.5);
  EXPECT_EQ(j["pairings"][1]["victim_cpus"], "0-1 | 0");
  EXPECT_DOUBLE_EQ(j["pairings"][1]["antagonists"][0]["cores"].get<double>(), 0.375);
  EXPECT_EQ(j["pairings"][1]["antagonists"][0]["cpus"], "2-3");
}

TEST(CoresTest, RecordsWithoutCpuAccountingShowNothing) {
  auto r =
      Summarize(CoresRecord(), {Trial(0, "baseline", 0, "", 0), Trial(1, "membw@0.25", 0, "", 0)});
  EXPECT_TRUE(std::isnan(r.pairings[1].victim_cores));
  EXPECT_TRUE(std::isnan(r.pairings[1].antagonists[0].cores));
  auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_TRUE(j["pairings"][1]["victim_cores"].is_null());
}

}  // namespace
}  // namespace codl::experiment
