// antagonists[].workload: a real command as the neighbour; what it accepts, what it refuses
// (FILE:LINE:COL), and the solo trials the plan gives it.
#include <gtest/gtest.h>

#include <string>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

const std::string kWorkloadHead = "name: x\nvictim: {command: [a]}\nantagonists:\n";

std::string WorkloadErrorOf(const std::string& yaml) {
  auto spec = ParseExperiment(yaml, "e.yaml");
  return spec.ok() ? "(parsed)" : spec.error();
}

TEST(WorkloadSpec, ParsesEveryFieldWithTheVictimsProgressFormats) {
  auto spec = ParseExperiment(kWorkloadHead +
                                  "  - name: job2\n"
                                  "    workload:\n"
                                  "      command: [python3, -m, codl.run, other.py]\n"
                                  "      env: {A: b}\n"
                                  "      workdir: /tmp\n"
                                  "      progress: {format: jsonl, field: step_time_s}\n"
                                  "      metric: throughput\n"
                                  "      warmup_steps: 5\n"
                                  "      settle: 90s\n"
                                  "    nodes: {count: 1}\n",
                              "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const AntagonistSpec& a = spec->antagonists.at(0);
  ASSERT_TRUE(a.workload.has_value());
  EXPECT_EQ(a.injector, kWorkloadInjector);
  EXPECT_EQ(a.workload->command.size(), 4u);
  EXPECT_EQ(a.workload->env.at("A"), "b");
  EXPECT_EQ(a.workload->workdir, "/tmp");
  EXPECT_TRUE(a.workload->throughput());
  EXPECT_EQ(a.workload->warmup_steps, 5);
  EXPECT_DOUBLE_EQ(a.workload->settle_timeout_s, 90);
  EXPECT_TRUE(a.nodes.specified);
  ASSERT_EQ(a.intensities.size(), 1u);
  EXPECT_EQ(a.intensities[0].label, kWorkloadRunLabel);
}

TEST(WorkloadSpec, LevelsRatesOptionsAndAnInjectorAreRefusedWhereWritten) {
  const std::string w = "  - name: job2\n    workload: {command: [b]}\n";
  EXPECT_EQ(WorkloadErrorOf(kWorkloadHead + w + "    levels: [0.5]\n"),
            "e.yaml:6:5: antagonists[0].levels: levels does not apply to a workload (a real "
            "command runs as it runs); remove it, or use an injector antagonist to sweep "
            "intensities");
  EXPECT_NE(WorkloadErrorOf(kWorkloadHead + w + "    rates: [1GiB/s]\n")
                .find("e.yaml:6:5: antagonists[0].rates"),
            std::string::npos);
  EXPECT_NE(WorkloadErrorOf(kWorkloadHead + w + "    injector: memcpy\n")
                .find("e.yaml:6:5: antagonists[0].injector"),
            std::string::npos);
  EXPECT_NE(
      WorkloadErrorOf(kWorkloadHead + w + "    options: {a: b}\n").find("antagonists[0].options"),
      std::string::npos);
}

TEST(WorkloadSpec, BadWorkloadFieldsNameTheirLocation) {
  EXPECT_EQ(WorkloadErrorOf(kWorkloadHead + "  - name: j\n    workload: {command: []}\n"),
            "e.yaml:5:25: antagonists[0].workload.command: must not be empty");
  EXPECT_NE(WorkloadErrorOf(kWorkloadHead +
                            "  - name: j\n    workload: {command: [b], progress: {format: wall}}\n")
                .find("antagonists[0].workload.progress: a workload runs until it is stopped"),
            std::string::npos);
  EXPECT_NE(
      WorkloadErrorOf(kWorkloadHead + "  - name: j\n    workload: {command: [b], metric: p99}\n")
          .find("'p99' is not a workload metric"),
      std::string::npos);
  EXPECT_NE(
      WorkloadErrorOf(kWorkloadHead + "  - name: j\n    workload: {command: [b], colour: red}\n")
          .find("antagonists[0].workload"),
      std::string::npos);
  EXPECT_NE(WorkloadErrorOf(kWorkloadHead + "  - name: j\n")
                .find("missing required key 'injector' (or 'workload'"),
            std::string::npos);
}

TEST(WorkloadSpec, ThePlanHasOneSoloTrialPerWorkloadPerBlock) {
  auto spec = ParseExperiment(kWorkloadHead +
                                  "  - {name: job2, workload: {command: [b]}}\n"
                                  "  - {name: mem, injector: memcpy, levels: [0.5, 1]}\n"
                                  "pairings: pairs\nrepetitions: 4\n",
                              "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto plan = ExpandPlan(*spec);
  EXPECT_EQ(static_cast<double>(plan.size()), CountPlannedTrials(*spec));
  int solo = 0, baselines = 0, run = 0;
  for (const auto& t : plan) {
    if (t.solo) {
      ++solo;
      EXPECT_EQ(t.pairing, "job2@solo");
      EXPECT_FALSE(t.baseline);
      ASSERT_EQ(t.parts.size(), 1u);
    }
    baselines += t.baseline;
    run += t.pairing.find("job2@run") != std::string::npos;
  }
  EXPECT_EQ(solo, 4);
  EXPECT_EQ(run, 4 * 3);  // job2 alone, and with mem at each of its two levels
  EXPECT_EQ(baselines, 4 * 2);
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

const std::string kToleranceHead = "name: x\nvictim: {command: [a]}\nantagonists:\n";

std::string ToleranceErrorOf(const std::string& yaml) {
  auto spec = ParseExperiment(yaml, "e.yaml");
  return spec.ok() ? "(parsed)" : spec.error();
}

TEST(ToleranceSpec, OwnOrTopLevelAndNoLevelsNeeded) {
  auto spec = ParseExperiment(kToleranceHead +
                                  "  - name: a\n    injector: memcpy\n"
                                  "    tolerance: {slowdown: 1.2, resolution: 0.1, max_trials: 9}\n"
                                  "  - {name: b, injector: memcpy, levels: [0.5]}\n"
                                  "  - {name: job2, workload: {command: [b]}}\n"
                                  "tolerance: {slowdown: 1.05}\n",
                              "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto& a = spec->antagonists[0].tolerance;
  EXPECT_TRUE(a.enabled);
  EXPECT_DOUBLE_EQ(a.slowdown, 1.2);
  EXPECT_DOUBLE_EQ(a.resolution, 0.1);
  EXPECT_EQ(a.max_trials, 9);
  EXPECT_TRUE(spec->antagonists[0].intensities.empty());  // the search supplies its levels
  const auto& b = spec->antagonists[1].tolerance;         // the top-level one
  EXPECT_TRUE(b.enabled);
  EXPECT_DOUBLE_EQ(b.slowdown, 1.05);
  EXPECT_DOUBLE_EQ(b.resolution, 0.05);
  EXPECT_EQ(b.max_trials, 30);
  EXPECT_FALSE(spec->antagonists[2].tolerance.enabled);  // a workload has no level
}

TEST(ToleranceSpec, OutOfRangeValuesNameTheirLocation) {
  const std::string a = "  - name: a\n    injector: memcpy\n";
  EXPECT_EQ(ToleranceErrorOf(kToleranceHead + a + "    tolerance: {slowdown: 0.9}\n"),
            "e.yaml:6:27: antagonists[0].tolerance.slowdown: 0.9 is out of range (1, 100]: the "
            "slowdown the victim tolerates, e.g. 1.10");
  EXPECT_NE(
      ToleranceErrorOf(kToleranceHead + a + "    tolerance: {slowdown: 1.1, resolution: 1.5}\n")
          .find("antagonists[0].tolerance.resolution: 1.5 is out of range [0.001, 1)"),
      std::string::npos);
  EXPECT_NE(ToleranceErrorOf(kToleranceHead + a + "    tolerance: {resolution: 0.1}\n")
                .find("missing required key 'slowdown'"),
            std::string::npos);
  EXPECT_NE(ToleranceErrorOf(kToleranceHead + "  - name: j\n    workload: {command: [b]}\n"
                                              "    tolerance: {slowdown: 1.1}\n")
                .find("e.yaml:6:5: antagonists[0].tolerance: tolerance does not apply to a "
                      "workload"),
            std::string::npos);
  EXPECT_NE(ToleranceErrorOf(kToleranceHead + "  - {name: a, injector: memcpy}\n")
                .find("e.yaml:4:5: antagonists[0]: needs a non-empty 'levels' or 'rates' list (or "
                      "a 'tolerance' search)"),
            std::string::npos);
}

}  // namespace
}  // namespace codl::experiment
