// Regression tests for "no input crashes a daemon" (docs/design.md, security): each input here
// once crashed or broke the controller or the agent. They run the real parsers and a real child.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agent/child_process.h"
#include "agent/progress_parser.h"
#include "codl/v1/agent.pb.h"
#include "injectors/codl-inject/args.h"
#include "lib/analysis/results.h"
#include "lib/common/utf8.h"
#include "lib/spec/progress_pattern.h"
#include "lib/spec/spec.h"

namespace codl {
namespace {

using ::testing::HasSubstr;

std::string Experiment(const std::string& progress) {
  return "name: t\nvictim:\n  command: [codl-victim]\n  progress: " + progress + "\n";
}

// A 40 KB progress pattern made std::regex recurse until the controller's stack overflowed.
TEST(SecurityInput, HugeProgressPatternIsRefusedNotCompiled) {
  std::string pattern = "(";
  for (int i = 0; i < 20000; ++i) pattern += "(a)";
  pattern += ")";
  auto spec = experiment::ParseExperiment(Experiment("{format: regex, pattern: '" + pattern + "'}"),
                                          "big.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.error(), HasSubstr("big.yaml:4:"));
  EXPECT_THAT(spec.error(), HasSubstr("at most 1024 are allowed"));
}

TEST(SecurityInput, PatternsOutsideRe2AreRefusedWithTheReason) {
  auto backref = experiment::CompileProgressPattern("(a)\\1");
  ASSERT_FALSE(backref.ok());
  EXPECT_THAT(backref.error(), HasSubstr("RE2 syntax"));
  auto no_group = experiment::CompileProgressPattern("step_time=[0-9.]+");
  ASSERT_FALSE(no_group.ok());
  EXPECT_THAT(no_group.error(), HasSubstr("capture group"));
  EXPECT_TRUE(experiment::CompileProgressPattern("step_time=([0-9.]+)").ok());
}

// One long line of victim output (matched by a backtracking-prone pattern) took the agent down.
TEST(SecurityInput, LongVictimLineAgainstNestedPatternIsLinear) {
  experiment::ProgressSpec spec;
  spec.format = experiment::ProgressSpec::Format::kRegex;
  // Exponential for a backtracking engine on "=1aaaa…ab": (a|aa)* inside * before a failing $.
  spec.pattern = "=([0-9.]+)(?:(?:a|aa)*)*$";
  agent::ProgressParser parser(spec, 0);
  parser.OnStdoutLine("=1" + std::string(1 << 20, 'a') + "b", 0.1);  // the agent's cap: 1 MiB
  parser.OnStdoutLine("step_time=0.25", 0.2);
  auto out = parser.Finish(0, false, 1.0, "");
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_EQ(out.steps.size(), 1u);
}

TEST(SecurityInput, OversizedAndDeeplyNestedYamlIsRefusedBeforeParsing) {
  auto big = experiment::ParseExperiment(std::string(2 << 20, '#'), "big.yaml");
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.error(), HasSubstr("at most 1048576 bytes"));
  auto deep = experiment::ParseExperiment("name: " + std::string(100000, '[') + "\n", "deep.yaml");
  ASSERT_FALSE(deep.ok());
  EXPECT_THAT(deep.error(), HasSubstr("brackets nested 100000 deep"));
  // Brackets inside quotes and comments are text, not nesting.
  auto quoted = experiment::ParseExperiment(
      "# " + std::string(200, '[') + "\nname: '" + std::string(200, '{') + "'\n", "q.yaml");
  ASSERT_FALSE(quoted.ok());
  EXPECT_THAT(quoted.error(), ::testing::Not(HasSubstr("nested")));
}

TEST(SecurityInput, Utf8RepairKeepsValidTextAndReplacesTheRest) {
  EXPECT_EQ(ValidUtf8("plain, \xC3\xA9t\xC3\xA9, \xE2\x82\xAC"),
            "plain, \xC3\xA9t\xC3\xA9, \xE2\x82\xAC");
  EXPECT_EQ(ValidUtf8("cut \xE2\x82"), "cut \xEF\xBF\xBD\xEF\xBF\xBD");  // truncated euro sign
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");          // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80").substr(0, 3), "\xEF\xBF\xBD");         // above U+10FFFF
  // A tail cut inside a character starts on the next one.
  EXPECT_EQ(Utf8Tail("x\xE2\x82\xAC"
                     "ab",
                     4),
            "ab");
  EXPECT_EQ(Utf8Tail("\xE2\x82\xAC"
                     "ab",
                     3),
            "ab");
}

// A victim whose stderr tail ended inside a multi-byte character failed its trial with a
// protobuf error instead of its exit status: the tail must survive a proto round trip.
TEST(SecurityInput, ChildStderrWithBrokenUtf8SurvivesTheWire) {
  agent::ChildProcess::Options o;
  o.argv = {"/bin/sh", "-c", "printf 'failed: \\342\\202' >&2; exit 3"};
  auto child = agent::ChildProcess::Spawn(std::move(o));
  ASSERT_TRUE(child.ok()) << child.error();
  ASSERT_TRUE((*child)->WaitFor(10));
  EXPECT_EQ((*child)->exit_code(), 3);
  v1::RunVictimReply reply;
  reply.set_stderr_tail((*child)->stderr_tail());
  v1::RunVictimReply back;
  ASSERT_TRUE(back.ParseFromString(reply.SerializeAsString()));
  EXPECT_THAT(back.stderr_tail(), HasSubstr("failed: "));
  EXPECT_EQ(back.stderr_tail(), ValidUtf8(back.stderr_tail()));
}

TEST(SecurityInput, StartAtOverflowIsAnErrorNotAWrap) {
  auto args =
      inject::ParseArgs({"codl-inject", "noop", "--max", "--start-at", "99999999999999999999999"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.error(), HasSubstr("--start-at"));
}

// Phase names come from victim output and reach CSV cells, terminals, HTML and metric labels.
TEST(SecurityInput, VictimPhaseNamesAreRestricted) {
  experiment::ProgressSpec spec;  // jsonl, field step_time_s
  agent::ProgressParser parser(spec, 0);
  parser.OnStdoutLine(R"j({"step_time_s":0.1,"phases":{"read_s":0.05,"=HYPERLINK(\"x\")":1,)j"
                      R"j("\u001b[2Jclear":1,"<script>":1,"decode.cpu-2":0.01}})j",
                      0.1);
  auto out = parser.Finish(0, false, 1.0, "");
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_EQ(out.steps.size(), 1u);
  std::vector<std::string> names;
  for (const auto& [name, v] : out.steps[0].phases) names.push_back(name);
  EXPECT_THAT(names, ::testing::ElementsAre("decode.cpu-2", "read_s"));
}

TEST(SecurityInput, CsvTextCellsCannotBeFormulas) {
  experiment::ExperimentResults r;
  r.experiment_id = "=1+1";
  experiment::PairingSummary p;
  p.pairing = "@SUM(A1)";
  p.slowdown = -0.5;  // numbers keep their sign
  experiment::AntagonistSummary a;
  a.name = "-cmd";
  a.injector = "+x";
  a.intensity = "-0.25";
  p.antagonists.push_back(a);
  r.pairings.push_back(p);
  const std::string csv = experiment::FormatCsv(r);
  EXPECT_THAT(csv, HasSubstr("'=1+1,'@SUM(A1),"));
  EXPECT_THAT(csv, HasSubstr(",-0.5,"));
  EXPECT_THAT(csv, HasSubstr(",'-cmd,'+x,-0.25,"));
}

TEST(SecurityInput, TerminalTextHasNoControlSequences) {
  EXPECT_EQ(TerminalSafe("ok\x1b[2J\x07\tend\xC2\x9B"), "ok\\x1B[2J\\x07\tend\\x9B");
  EXPECT_EQ(TerminalSafe("caf\xC3\xA9"), "caf\xC3\xA9");
}

}  // namespace
}  // namespace codl
