// Confounds (lib/analysis/confound.h): an antagonist that used over a quarter of the CPU the
// victim used is named, in the summary, the table and JSON; a cpu antagonist never is.
#include "lib/analysis/confound.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

PairingSummary Pairing(const std::string& injector, double cores, double victim_cores) {
  PairingSummary p;
  p.pairing = "x@0.5";
  p.victim_cores = victim_cores;
  AntagonistSummary a;
  a.name = "hog";
  a.injector = injector;
  a.cores = cores;
  p.antagonists.push_back(a);
  return p;
}

TEST(ConfoundTest, ACpuShareOverAQuarterOfTheVictimsIsNamed) {
  const auto c = CpuConfounds(Pairing("memcpy", 0.40, 0.84));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0],
            "hog (memcpy) used 0.40 CPU cores beside the victim's 0.84 (48%, over 25%): part of "
            "this slowdown may be CPU contention, not memory bandwidth; give it its own cores "
            "(cpus:) to separate them");
  EXPECT_TRUE(CpuConfounds(Pairing("memcpy", 0.20, 0.84)).empty());    // 24 %
  EXPECT_TRUE(CpuConfounds(Pairing("cpu", 1.0, 0.84)).empty());        // CPU is its resource
  EXPECT_TRUE(CpuConfounds(Pairing("io_uring", kNaN, 0.84)).empty());  // not measured
  EXPECT_TRUE(CpuConfounds(Pairing("io_uring", 0.5, kNaN)).empty());
  PairingSummary base = Pairing("memcpy", 0.4, 0.84);
  base.baseline = true;
  EXPECT_TRUE(CpuConfounds(base).empty());
}

TEST(ConfoundTest, SummaryTableAndJsonCarryIt) {
  ExperimentRecord e;
  e.id = "e1";
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 6; ++i) {
    TrialRecord t;
    t.index = i;
    t.baseline = i % 2 == 0;
    t.pairing = t.baseline ? "baseline" : "membw@0.5";
    t.state = TrialState::kDone;
    t.value_s = t.baseline ? 1.0 : 1.2;
    t.wall_s = 10;
    t.victim_cpu_s = 10;  // one core
    t.victim_effective_cpus = "0-1";
    if (!t.baseline) {
      AntagonistResult a;
      a.name = "membw";
      a.injector = "memcpy";
      a.level = 0.5;
      a.cpu_s = 5;  // half a core
      a.run_s = 10;
      t.antagonists.push_back(a);
    }
    trials.push_back(t);
  }
  const ExperimentResults r = Summarize(e, trials);
  ASSERT_EQ(r.pairings.size(), 2u);
  ASSERT_EQ(r.pairings[1].confounds.size(), 1u);
  EXPECT_NE(FormatTable(r).find("warning: confound: membw (memcpy) used 0.50 CPU cores beside "
                                "the victim's 1.00 (50%, over 25%)"),
            std::string::npos)
      << FormatTable(r);
  const auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_EQ(j["pairings"][1]["confounds"].size(), 1u);
  EXPECT_TRUE(j["pairings"][0]["confounds"].empty());
}

}  // namespace
}  // namespace codl::experiment
