// repetitions: the plain integer (fixed blocks) and the map form (adaptive repetitions).
#include <gtest/gtest.h>

#include <string>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

const std::string kHead = "name: x\nvictim: {command: [a]}\n";

std::string ErrorOf(const std::string& yaml) {
  auto spec = ParseExperiment(yaml, "e.yaml");
  return spec.ok() ? "(parsed)" : spec.error();
}

TEST(AdaptiveRepetitionsSpec, PlainIntegerStaysFixed) {
  auto spec = ParseExperiment(kHead + "repetitions: 7\n", "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->repetitions, 7);
  EXPECT_FALSE(spec->adaptive.enabled);
}

TEST(AdaptiveRepetitionsSpec, MapFormPlansMaxBlocks) {
  auto spec = ParseExperiment(kHead +
                                  "antagonists: [{name: m, injector: membw, levels: [0.5]}]\n"
                                  "repetitions: {min: 5, max: 40, ci_halfwidth: 2%}\n",
                              "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_TRUE(spec->adaptive.enabled);
  EXPECT_EQ(spec->adaptive.min, 5);
  EXPECT_EQ(spec->adaptive.max, 40);
  EXPECT_DOUBLE_EQ(spec->adaptive.ci_halfwidth, 0.02);
  EXPECT_EQ(spec->repetitions, 40);
  // The plan is the max-block plan; its first min blocks are those of `repetitions: 5`.
  auto fixed = ParseExperiment(kHead +
                                   "antagonists: [{name: m, injector: membw, levels: [0.5]}]\n"
                                   "repetitions: 5\norder: {seed: 9}\n",
                               "e.yaml");
  ASSERT_TRUE(fixed.ok());
  spec->seed = fixed->seed;
  const auto adaptive_plan = ExpandPlan(*spec);
  const auto fixed_plan = ExpandPlan(*fixed);
  ASSERT_EQ(adaptive_plan.size(), 40u * 2);
  for (size_t i = 0; i < fixed_plan.size(); ++i) {
    EXPECT_EQ(adaptive_plan[i].pairing, fixed_plan[i].pairing) << i;
    EXPECT_EQ(adaptive_plan[i].repetition, fixed_plan[i].repetition) << i;
  }
}

TEST(AdaptiveRepetitionsSpec, HalfWidthAsFraction) {
  auto spec =
      ParseExperiment(kHead + "repetitions: {min: 3, max: 3, ci_halfwidth: 0.05}\n", "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_DOUBLE_EQ(spec->adaptive.ci_halfwidth, 0.05);
}

TEST(AdaptiveRepetitionsSpec, ErrorsNameTheValue) {
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 0, max: 4, ci_halfwidth: 2%}\n"),
            "e.yaml:3:20: repetitions.min: 0 is out of range [1, 1000]");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: many, ci_halfwidth: 2%}\n"),
            "e.yaml:3:28: repetitions.max: expected an integer, got 'many'");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 9, max: 4, ci_halfwidth: 2%}\n"),
            "e.yaml:3:28: repetitions.max: 4 is less than min 9");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: 4, ci_halfwidth: 0%}\n"),
            "e.yaml:3:45: repetitions.ci_halfwidth: '0%' is out of range (0, 100%)");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: 4, ci_halfwidth: 100%}\n"),
            "e.yaml:3:45: repetitions.ci_halfwidth: '100%' is out of range (0, 100%)");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: 4, ci_halfwidth: 2}\n"),
            "e.yaml:3:45: repetitions.ci_halfwidth: '2' is out of range (0, 100%); a bare "
            "number is a fraction: write 2% or 0.02 for two percent");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: 4, ci_halfwidth: tight}\n"),
            "e.yaml:3:45: repetitions.ci_halfwidth: expected a percentage such as 2%, got "
            "'tight'");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: 4}\n"),
            "e.yaml:3:14: repetitions: missing required key 'ci_halfwidth'");
  EXPECT_EQ(ErrorOf(kHead + "repetitions: {min: 2, max: 4, ci_halfwidth: 2%, step: 1}\n"),
            "e.yaml:3:49: repetitions: unknown key 'step' (expected one of: min, max, "
            "ci_halfwidth)");
}

}  // namespace
}  // namespace codl::experiment
