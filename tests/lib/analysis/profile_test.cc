// BuildProfile and its formats on results built by hand (end to end: tests/integration/
// profile_test.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "lib/analysis/profile.h"

namespace codl::experiment {
namespace {

PairingSummary Single(const std::string& name, const std::string& injector, double level, double lo,
                      double hi, bool max = false) {
  PairingSummary p;
  char key[64];
  std::snprintf(key, sizeof key, "%s@%g", name.c_str(), level);
  p.pairing = max ? name + "@max" : key;
  p.n = 3;
  p.slowdown = (lo + hi) / 2;
  p.ci_low = lo;
  p.ci_high = hi;
  AntagonistSummary s;
  s.name = name;
  s.injector = injector;
  s.level = max ? 0 : level;
  s.max = max;
  p.antagonists.push_back(s);
  return p;
}

ExperimentResults Results() {
  ExperimentResults r;
  r.experiment_id = "e1";
  r.name = "victim-profile";
  PairingSummary base;
  base.pairing = "baseline";
  base.baseline = true;
  r.pairings.push_back(base);
  r.pairings.push_back(Single("membw", "memcpy", 1, 1.4, 1.6));
  r.pairings.push_back(Single("membw", "memcpy", 0.25, 0.98, 1.04));
  r.pairings.push_back(Single("membw", "memcpy", 0.5, 1.12, 1.2));
  r.pairings.push_back(Single("cpu", "cpu", 0.5, 1.0, 1.02));
  r.pairings.push_back(Single("cpu", "cpu", 1, 1.0, 1.03, /*max=*/true));
  PairingSummary pair = Single("membw", "memcpy", 0.5, 2, 3);
  pair.antagonists.push_back(r.pairings.back().antagonists[0]);
  pair.pairing = "cpu@max+membw@0.5";
  r.pairings.push_back(pair);  // a combination: no point of either curve
  ToleranceResult t;
  t.name = "membw";
  t.threshold = 1.1;
  t.tolerated_level = 0.25;
  t.breaks_level = 0.5;
  t.trials = 9;
  t.max_trials = 20;
  t.stop_reason = "max_trials";
  r.tolerance.push_back(t);
  return r;
}

TEST(ProfileTest, OneRowPerAntagonistWithItsCurveToleranceAndPeak) {
  const InterferenceProfile p = BuildProfile(Results(), {"membw", "cpu"},
                                             {{"memcpy", "memory bandwidth"}, {"cpu", "CPU time"}});
  ASSERT_EQ(p.rows.size(), 2u);
  const ProfileRow& m = p.rows[0];
  EXPECT_EQ(m.resource, "memory bandwidth");
  ASSERT_EQ(m.curve.size(), 3u);  // ascending, the combination left out
  EXPECT_DOUBLE_EQ(m.curve[0].level, 0.25);
  EXPECT_DOUBLE_EQ(m.curve[2].level, 1);
  EXPECT_TRUE(m.searched);
  EXPECT_DOUBLE_EQ(m.at_level, 1);
  EXPECT_FALSE(m.at_max);
  EXPECT_DOUBLE_EQ(m.strongest.slowdown, 1.5);
  EXPECT_EQ(ProfileCurveText(m), "0.25: 1.01x  0.5: 1.16x*  1: 1.50x*");
  EXPECT_EQ(ProfileToleratesText(m), "0.25");
  EXPECT_EQ(ProfileBreaksText(m), "0.5");
  const ProfileRow& c = p.rows[1];
  EXPECT_FALSE(c.searched);
  EXPECT_TRUE(c.at_max);  // max sorts last: the strongest
  EXPECT_EQ(ProfileToleratesText(c), "-");
  const std::string table = FormatProfileTable(p);
  EXPECT_NE(table.find("memory bandwidth"), std::string::npos) << table;
  EXPECT_NE(table.find("max_trials, 9 trials"), std::string::npos) << table;
  EXPECT_NE(table.find("1.500x"), std::string::npos) << table;
  const auto j = nlohmann::json::parse(FormatProfileJson(p));
  EXPECT_EQ(j["rows"][0]["tolerance"]["breaks_level"], 0.5);
  EXPECT_TRUE(j["rows"][1]["tolerance"].is_null());
  EXPECT_TRUE(j["rows"][1]["at_peak"]["max"].get<bool>());
  EXPECT_TRUE(j["rows"][1]["at_peak"]["level"].is_null());
  const std::string csv = FormatProfileCsv(p);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 3 + 2) << csv;  // header + points
}

TEST(ProfileTest, AnAntagonistThatNeverRanAloneHasAnEmptyRow) {
  const InterferenceProfile p = BuildProfile(Results(), {"absent"}, {});
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_TRUE(p.rows[0].curve.empty());
  EXPECT_EQ(ProfileCurveText(p.rows[0]), "-");
  const std::string csv = FormatProfileCsv(p);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2) << csv;
  EXPECT_NE(FormatProfileTable(p).find("absent"), std::string::npos);
}

TEST(ProfileTest, HostileNamesAreEscapedForTheTerminal) {
  ExperimentResults r = Results();
  r.name = "x\x1b]0;owned\x07y";
  const std::string table = FormatProfileTable(BuildProfile(r, {"membw"}, {}));
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_EQ(table.find('\x07'), std::string::npos) << table;
}

}  // namespace
}  // namespace codl::experiment
