// The report's interaction section: one matrix per antagonist pair, cells with the figures.
#include <gtest/gtest.h>

#include <string>

#include "lib/report/interaction_section.h"

namespace codl::report {
namespace {

experiment::InteractionSummary Combination(const std::string& key, double ratio,
                                           experiment::InteractionVerdict v) {
  experiment::InteractionSummary s;
  s.pairing = key;
  s.n = 5;
  s.slowdown = 1.8 * ratio;
  s.multiplicative = 1.8;
  s.additive = 1.7;
  s.ratio = ratio;
  s.ci_low = ratio - 0.05;
  s.ci_high = ratio + 0.05;
  s.verdict = v;
  return s;
}

TEST(InteractionSectionTest, OneMatrixPerPairWithFlaggedCells) {
  experiment::ExperimentResults r;
  r.interactions = {
      Combination("cpu@0.5+membw@0.25", 1.0, experiment::InteractionVerdict::kNone),
      Combination("cpu@0.5+membw@0.5", 1.3, experiment::InteractionVerdict::kSuperAdditive),
      Combination("cpu@1+membw@0.25", 0.8, experiment::InteractionVerdict::kSubAdditive)};
  experiment::InteractionSummary missing;
  missing.pairing = "cpu@0.5+io@1";
  missing.missing_singles = {"io@1"};
  r.interactions.push_back(missing);
  const std::string html = RenderInteractions(r);
  EXPECT_NE(html.find("<code>cpu</code> &times; <code>membw</code>"), std::string::npos) << html;
  EXPECT_NE(html.find("<code>cpu</code> &times; <code>io</code>"), std::string::npos);
  EXPECT_NE(html.find("<strong>super-additive</strong>"), std::string::npos);
  EXPECT_NE(html.find("<strong>sub-additive</strong>"), std::string::npos);
  EXPECT_NE(html.find("no measured trials of its singles <code>io@1</code>"), std::string::npos);
  EXPECT_NE(html.find("ratio 1.300 <span class=\"sub\">[1.25, 1.35]</span>"), std::string::npos)
      << html;
  // cpu@1 x membw@0.5 was not run: an empty cell, not a missing row or column.
  EXPECT_NE(html.find("<td>\u2013</td></tr>"), std::string::npos) << html;
  EXPECT_EQ(RenderInteractions(experiment::ExperimentResults{}), "");
}

}  // namespace
}  // namespace codl::report
