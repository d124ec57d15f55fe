// The report's prediction section: combinations predicted from the singles against what was
// measured, on trials whose answer is known by construction (interference multiplies).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/report/prediction_section.h"

namespace codl::report {
namespace {

// Five trials of `pairing` around `seconds` (a +-1 % spread, so every CI exists).
void AddTrials(std::vector<TrialRecord>* trials, const std::string& pairing, double seconds) {
  for (int i = 0; i < 5; ++i) {
    TrialRecord t;
    t.pairing = pairing;
    t.baseline = pairing == "baseline";
    t.state = TrialState::kDone;
    t.value_s = seconds * (1 + 0.005 * (i - 2));
    trials->push_back(t);
  }
}

TEST(PredictionSectionTest, CombinationPredictedFromItsSinglesWithError) {
  std::vector<TrialRecord> trials;
  AddTrials(&trials, "baseline", 10);
  AddTrials(&trials, "cpu@0.5", 12);            // 1.2x
  AddTrials(&trials, "membw@0.5", 15);          // 1.5x
  AddTrials(&trials, "cpu@0.5+membw@0.5", 18);  // 1.8x = 1.2 * 1.5: the product holds
  experiment::ExperimentResults r;              // metric "elapsed"
  const std::string html = RenderPredictions(r, trials, 7);
  ASSERT_NE(html.find("data-prediction=\"cpu@0.5+membw@0.5\""), std::string::npos) << html;
  EXPECT_NE(html.find("combination, from its singles"), std::string::npos);
  EXPECT_NE(html.find("Model: multiplicative; MAPE"), std::string::npos) << html;
  // Predicted 1.80x against measured 1.80x: an error of about zero.
  const size_t row = html.find("data-prediction=\"cpu@0.5+membw@0.5\"");
  const std::string cells = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_NE(cells.find("1.80\u00d7"), std::string::npos) << cells;
  EXPECT_TRUE(cells.find("+0.0 %") != std::string::npos ||
              cells.find("-0.0 %") != std::string::npos)
      << cells;
}

TEST(PredictionSectionTest, NothingWithoutAMeasuredCombination) {
  std::vector<TrialRecord> trials;
  AddTrials(&trials, "baseline", 10);
  AddTrials(&trials, "cpu@0.5", 12);
  AddTrials(&trials, "cpu@1", 14);
  EXPECT_EQ(RenderPredictions(experiment::ExperimentResults{}, trials, 7), "");
  EXPECT_EQ(RenderPredictions(experiment::ExperimentResults{}, {}, 7), "");
}

}  // namespace
}  // namespace codl::report
