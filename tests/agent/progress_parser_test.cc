#include "agent/progress_parser.h"

#include <csignal>

#include <gtest/gtest.h>

namespace codl::agent {
namespace {

using codl::experiment::ProgressSpec;

ProgressSpec Jsonl(std::string field = "step_time_s") {
  ProgressSpec s;
  s.format = ProgressSpec::Format::kJsonl;
  s.field = std::move(field);
  return s;
}

ProgressSpec Regex(std::string pattern) {
  ProgressSpec s;
  s.format = ProgressSpec::Format::kRegex;
  s.pattern = std::move(pattern);
  return s;
}

ProgressSpec Wall() {
  ProgressSpec s;
  s.format = ProgressSpec::Format::kWall;
  return s;
}

void Feed(ProgressParser& p, const std::vector<std::string>& lines) {
  double t = 0;
  for (const auto& l : lines) p.OnStdoutLine(l, t += 0.5);
}

TEST(ProgressParser, JsonlStepsPhasesAndMedians) {
  ProgressParser p(Jsonl(), 0);
  Feed(
      p,
      {
          R"({"config":true,"reader":"posix"})",
          R"({"step":0,"step_time_s":0.30,"phases":{"read_s":0.2,"compute_s":0.1}})",
          R"({"step":1,"step_time_s":0.10,"phases":{"read_s":0.05,"compute_s":0.05,"comm_s":0.01}})",
          R"({"step":2,"step_time_s":0.20,"phases":{"read_s":0.1,"compute_s":0.1,"note":"x"}})",
          R"({"summary":true,"step_time_s":99,"steps":3})",
      });
  auto o = p.Finish(0, false, 2.0, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_DOUBLE_EQ(o.value_s, 0.20);
  ASSERT_EQ(o.steps.size(), 3u);  // neither the config nor the summary line is a step
  EXPECT_EQ(o.steps[1].step, 1);
  EXPECT_DOUBLE_EQ(o.steps[1].t_s, 1.5);
  EXPECT_EQ(o.steps[2].phases.count("note"), 0u);  // non-numeric phases are dropped
  EXPECT_DOUBLE_EQ(o.phase_medians.at("read_s"), 0.1);
  EXPECT_DOUBLE_EQ(o.phase_medians.at("compute_s"), 0.1);
  EXPECT_DOUBLE_EQ(o.phase_medians.at("comm_s"), 0.01);  // median over the steps that report it
  EXPECT_EQ(o.malformed_lines, 0);
}

TEST(ProgressParser, EvenCountMedianAndCustomField) {
  ProgressParser p(Jsonl("iter_s"), 0);
  Feed(p, {R"({"iter_s":4})", R"({"iter_s":1})", R"({"iter_s":3})", R"({"iter_s":2})",
           R"({"step_time_s":100})"});
  auto o = p.Finish(0, false, 1, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_DOUBLE_EQ(o.value_s, 2.5);
  EXPECT_EQ(o.steps.size(), 4u);
  EXPECT_EQ(o.steps[3].step, 3);  // numbered in order when the line has no "step"
}

TEST(ProgressParser, MalformedLinesAreIgnoredButCounted) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {"Epoch 1/10 starting", R"({"step":0,"step_time_s":0.5)", "[1,2,3]",
           R"({"step_time_s":"fast"})", R"({"step_time_s":-1})", R"({"step":1,"step_time_s":0.5})",
           "", "   ", "{\"step\":2,\"step_time_s\":0.7}\r"});
  auto o = p.Finish(0, false, 1, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(o.value_s, 0.6);
  EXPECT_EQ(o.malformed_lines, 5);
  EXPECT_EQ(o.lines, 7);  // blank lines are not counted
}

TEST(ProgressParser, MissingFieldIsNoParsableProgress) {
  ProgressParser p(Jsonl(), 0);
  std::vector<std::string> lines;
  for (int i = 0; i < 12; ++i)
    lines.push_back(R"({"step":)" + std::to_string(i) + R"(,"loss":1.5})");
  Feed(p, lines);
  auto o = p.Finish(0, false, 3, "");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.value_s, 0);
  EXPECT_EQ(o.error,
            "victim printed no parsable progress (field 'step_time_s' not found in 12 lines)");
}

TEST(ProgressParser, NoOutputAtAll) {
  ProgressParser p(Jsonl(), 0);
  auto o = p.Finish(0, false, 3, "");
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("not found in 0 lines"), std::string::npos) << o.error;
}

TEST(ProgressParser, RegexFirstCaptureGroupIsTheMetric) {
  ProgressParser p(Regex(R"(iteration \d+ took ([0-9.eE+-]+) s)"), 1);
  Feed(p, {"loading data", "iteration 0 took 0.9 s", "iteration 1 took 0.2 s", "noise",
           "iteration 2 took 0.4 s", "iteration 3 took abc s", "iteration 4 took 1.2.3 s"});
  auto o = p.Finish(0, false, 5, "");
  ASSERT_TRUE(o.ok) << o.error;
  ASSERT_EQ(o.steps.size(), 3u);
  EXPECT_TRUE(o.steps[0].warmup);
  EXPECT_DOUBLE_EQ(o.value_s, 0.3);  // median of 0.2 and 0.4; 0.9 was warmup
  EXPECT_EQ(o.malformed_lines, 1);   // "1.2.3" matched the group but is not a number
  EXPECT_TRUE(o.phase_medians.empty());
}

TEST(ProgressParser, RegexThatNeverMatchesOrIsInvalid) {
  ProgressParser none(Regex(R"(step_time=([0-9.]+))"), 0);
  Feed(none, {"a", "b"});
  auto o = none.Finish(0, false, 1, "");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error,
            "victim printed no parsable progress (pattern 'step_time=([0-9.]+)' matched none of 2 "
            "lines)");

  ProgressParser bad(Regex("step=([0-9"), 0);
  Feed(bad, {"step=1"});
  o = bad.Finish(0, false, 1, "");
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("invalid regex: missing ]"), std::string::npos) << o.error;

  ProgressParser no_group(Regex("step=[0-9]+"), 0);
  Feed(no_group, {"step=1"});
  o = no_group.Finish(0, false, 1, "");
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("needs a capture group"), std::string::npos) << o.error;
}

TEST(ProgressParser, WallUsesTheWallTimeAndIgnoresStdout) {
  ProgressParser p(Wall(), 5);
  Feed(p, {R"({"step_time_s":0.1})", "anything"});
  auto o = p.Finish(0, false, 12.5, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_DOUBLE_EQ(o.value_s, 12.5);
  EXPECT_TRUE(o.steps.empty());
}

TEST(ProgressParser, NonZeroExitIsNeverAMeasurement) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {R"({"step_time_s":0.1})", R"({"step_time_s":0.1})"});
  auto o = p.Finish(3, false, 1, "Traceback: boom");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.value_s, 0);
  EXPECT_EQ(o.error, "victim exited with status 3 (2 steps reported)");
  EXPECT_EQ(o.steps.size(), 2u);  // kept for the record
  EXPECT_TRUE(o.phase_medians.empty());

  ProgressParser w(Wall(), 0);
  o = w.Finish(1, false, 4, "");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error, "victim exited with status 1");
}

TEST(ProgressParser, KilledBySignal) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {R"({"step_time_s":0.1})"});
  auto o = p.Finish(-SIGKILL, false, 1, "");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error, "victim killed by signal 9 (SIGKILL) (1 step reported)");
  o = p.Finish(-SIGSEGV, false, 1, "");
  EXPECT_NE(o.error.find("signal 11 (SIGSEGV)"), std::string::npos) << o.error;
}

TEST(ProgressParser, TimeoutWinsOverEverythingElse) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {R"({"step_time_s":0.1})", R"({"step_time_s":0.2})"});
  auto o = p.Finish(-SIGTERM, true, 30.0, "");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error,
            "victim timed out after 30.0 s (2 steps reported); then killed by signal 15 (SIGTERM)");
  o = p.Finish(0, true, 30.04, "");  // exited 0 just as the deadline passed: still a timeout
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error.rfind("victim timed out after 30.0 s", 0), 0u) << o.error;
  ProgressParser w(Wall(), 0);
  EXPECT_EQ(w.Finish(-SIGKILL, true, 7.24, "").error,
            "victim timed out after 7.2 s; then killed by signal 9 (SIGKILL)");
}

TEST(ProgressParser, WarmupStepsAreKeptButExcluded) {
  ProgressParser p(Jsonl(), 2);
  Feed(p, {R"({"step":0,"step_time_s":5.0,"phases":{"read_s":4.0}})",
           R"({"step":1,"step_time_s":3.0,"phases":{"read_s":2.0}})",
           R"({"step":2,"step_time_s":0.1,"phases":{"read_s":0.05}})",
           R"({"step":3,"step_time_s":0.3,"phases":{"read_s":0.15}})",
           R"({"step":4,"step_time_s":0.2,"phases":{"read_s":0.1}})"});
  auto o = p.Finish(0, false, 9, "");
  ASSERT_TRUE(o.ok) << o.error;
  ASSERT_EQ(o.steps.size(), 5u);
  EXPECT_TRUE(o.steps[0].warmup);
  EXPECT_TRUE(o.steps[1].warmup);
  EXPECT_FALSE(o.steps[2].warmup);
  EXPECT_DOUBLE_EQ(o.value_s, 0.2);
  EXPECT_DOUBLE_EQ(o.phase_medians.at("read_s"), 0.1);
}

TEST(ProgressParser, VictimMarkedWarmupIsExcludedToo) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {R"({"step":0,"step_time_s":9,"warmup":true})", R"({"step":1,"step_time_s":1})",
           R"({"step":2,"step_time_s":3})"});
  auto o = p.Finish(0, false, 9, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_TRUE(o.steps[0].warmup);
  EXPECT_DOUBLE_EQ(o.value_s, 2.0);
}

TEST(ProgressParser, OnlyWarmupStepsIsAFailure) {
  ProgressParser p(Jsonl(), 5);
  Feed(p, {R"({"step_time_s":0.1})", R"({"step_time_s":0.1})", R"({"step_time_s":0.1})"});
  auto o = p.Finish(0, false, 1, "");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error, "only warmup steps were reported (3 steps, warmup_steps 5)");
  EXPECT_EQ(o.steps.size(), 3u);
}

}  // namespace
// Phases keep the order the victim first listed them in, not the name order of the map.
TEST(ProgressParser, PhaseOrderIsTheFirstReportedOrder) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {
              R"({"step":0,"step_time_s":0.3,"phases":{"zeta_s":0.1,"alpha_s":0.1}})",
              R"({"step":1,"step_time_s":0.3,"phases":{"mid_s":0.1,"alpha_s":0.1,"zeta_s":0.1}})",
              R"({"step":2,"step_time_s":0.3,"phases":{"alpha_s":0.1,"bad name":0.1}})",
          });
  auto o = p.Finish(0, false, 1.0, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.phase_order, (std::vector<std::string>{"zeta_s", "alpha_s", "mid_s"}));
  EXPECT_EQ(o.phase_medians.size(), 3u);
}

// A phase reported only in warm-up steps has no median, so it is not in the order either.
TEST(ProgressParser, PhaseOrderListsOnlyPhasesWithAMedian) {
  ProgressParser p(Jsonl(), 1);
  Feed(p, {
              R"({"step":0,"step_time_s":0.3,"phases":{"warm_s":0.1,"b_s":0.1}})",
              R"({"step":1,"step_time_s":0.3,"phases":{"b_s":0.1,"a_s":0.1}})",
          });
  auto o = p.Finish(0, false, 1.0, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.phase_order, (std::vector<std::string>{"b_s", "a_s"}));
}

// codl-victim's dataset records: a phase of their own, never a step, in every format.
TEST(ProgressParser, DatasetRecordsAreProgressNotSteps) {
  using Kind = ProgressParser::LineKind;
  for (const ProgressSpec& spec : {Jsonl(), Regex("step_time=([0-9.]+)"), Wall()}) {
    ProgressParser p(spec, 0);
    EXPECT_EQ(p.dataset().total, 0);
    EXPECT_EQ(
        p.OnStdoutLine(R"({"dataset":true,"generated":0,"total":256,"sample_size":4096})", 0.1),
        Kind::kDataset);
    EXPECT_EQ(p.OnStdoutLine(R"({"dataset":true,"generated":100,"total":256})", 0.6),
              Kind::kDataset);
    EXPECT_EQ(p.dataset().generated, 100);
    EXPECT_EQ(p.dataset().total, 256);
    EXPECT_DOUBLE_EQ(p.dataset().t_s, 0.6);
    EXPECT_TRUE(p.steps().empty());
  }
  ProgressParser p(Jsonl(), 0);
  EXPECT_EQ(p.OnStdoutLine(R"({"step":0,"step_time_s":0.2})", 1), Kind::kStep);
  EXPECT_EQ(p.OnStdoutLine(R"({"config":true})", 1), Kind::kOther);
}

TEST(ProgressParser, BadDatasetRecordsAreMalformedAndChangeNothing) {
  ProgressParser p(Jsonl(), 0);
  Feed(p, {
              R"({"dataset":true,"generated":5,"total":10})",
              R"({"dataset":true,"generated":11,"total":10})",
              R"({"dataset":true,"generated":-1,"total":10})",
              R"({"dataset":true,"generated":"5","total":10})",
              R"({"dataset":false,"generated":7,"total":10})",
              R"({"step":0,"step_time_s":0.2})",
          });
  EXPECT_EQ(p.dataset().generated, 5);
  auto o = p.Finish(0, false, 1.0, "");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.malformed_lines, 3);
  EXPECT_EQ(o.steps.size(), 1u);
}

}  // namespace codl::agent
