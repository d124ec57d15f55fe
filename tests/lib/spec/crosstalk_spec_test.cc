// crosstalk: an experiment with no victim whose antagonists run alone over an idle window; what
// it accepts and what it refuses (FILE:LINE:COL).
#include <gtest/gtest.h>

#include <string>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

const std::string kXtalkAntagonists =
    "antagonists:\n  - {name: disk, injector: io_uring, levels: [0.5, max]}\n";

std::string XtalkErrorOf(const std::string& yaml) {
  auto spec = ParseExperiment(yaml, "e.yaml");
  return spec.ok() ? "(parsed)" : spec.error();
}

TEST(CrosstalkSpec, TrueGivesAFiveSecondIdleWindowAsTheVictim) {
  auto spec = ParseExperiment("name: x\ncrosstalk: true\n" + kXtalkAntagonists, "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->crosstalk_window_s, 5);
  EXPECT_EQ(spec->victim.command, (std::vector<std::string>{"sleep", "5"}));
  EXPECT_EQ(spec->victim.progress.format, ProgressSpec::Format::kWall);
  EXPECT_EQ(spec->victim.timeout_s, 65);
  // The plan is an ordinary one: baselines (idle windows) and each antagonist alone.
  const auto plan = ExpandPlan(*spec);
  EXPECT_EQ(plan.size(), 15u);  // (1 baseline + 2 levels) x 5 repetitions
}

TEST(CrosstalkSpec, AWindowMayBeGivenAndFalseIsAnOrdinaryExperiment) {
  auto spec = ParseExperiment(
      "name: x\ncrosstalk: {window: 2500ms}\nnodes: {hosts: [a]}\n" + kXtalkAntagonists, "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->crosstalk_window_s, 2.5);
  EXPECT_EQ(spec->victim.command, (std::vector<std::string>{"sleep", "2.5"}));
  EXPECT_EQ(spec->victim.nodes.hosts, (std::vector<std::string>{"a"}));
  auto plain = ParseExperiment(
      "name: x\ncrosstalk: false\nvictim: {command: [v]}\n" + kXtalkAntagonists, "e.yaml");
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain->crosstalk_window_s, 0);
  EXPECT_EQ(plain->victim.command, (std::vector<std::string>{"v"}));
}

TEST(CrosstalkSpec, RefusalsNameTheirLocation) {
  EXPECT_EQ(XtalkErrorOf("name: x\ncrosstalk: true\nvictim: {command: [v]}\n" + kXtalkAntagonists),
            "e.yaml:3:1: victim: a crosstalk experiment has no victim: each antagonist runs "
            "alone over an idle window (drop victim, or crosstalk: false)");
  EXPECT_EQ(XtalkErrorOf("name: x\ncrosstalk: {window: 0.5s}\n" + kXtalkAntagonists),
            "e.yaml:2:21: crosstalk.window: must be between 1s and 1h: the antagonists' 0.2 s "
            "samples need a second at least");
  EXPECT_NE(XtalkErrorOf("name: x\ncrosstalk: {windw: 2s}\n" + kXtalkAntagonists)
                .find("e.yaml:2:13: crosstalk: unknown key 'windw'"),
            std::string::npos)
      << XtalkErrorOf("name: x\ncrosstalk: {windw: 2s}\n" + kXtalkAntagonists);
  EXPECT_EQ(XtalkErrorOf("name: x\ncrosstalk: true\n"),
            "e.yaml:2:12: crosstalk: needs antagonists: their footprints are measured");
  EXPECT_NE(XtalkErrorOf("name: x\ncrosstalk: true\nantagonists:\n  - {name: d, injector: "
                         "io_uring, tolerance: {slowdown: 1.1}}\n")
                .find("e.yaml:4:5: antagonists[0]: a tolerance search needs a victim; a "
                      "crosstalk experiment has none"),
            std::string::npos);
  // Without crosstalk the victim is still required.
  EXPECT_NE(XtalkErrorOf("name: x\n" + kXtalkAntagonists).find("missing required key 'victim'"),
            std::string::npos);
}

}  // namespace
}  // namespace codl::experiment
