// codl-inject's hand-written argv parser: the contract with the agent.
#include <gtest/gtest.h>

#include "injectors/codl-inject/args.h"

namespace codl::inject {
namespace {

Result<CliArgs> Parse(std::vector<std::string> v) {
  v.insert(v.begin(), "codl-inject");
  return ParseArgs(v);
}

TEST(ArgsTest, FullRunLine) {
  auto a = Parse({"io_uring", "--set", "mode=read", "--set=queue_depth=8", "--level", "0.5",
                  "--peak", "2GiB/s", "--duration=3s", "--json", "--scratch-root", "/s1",
                  "--scratch-root=/s2", "--calibrate-duration", "500ms"});
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->command, Command::kRun);
  EXPECT_EQ(a->injector, "io_uring");
  EXPECT_EQ(a->options.at("mode"), "read");
  EXPECT_EQ(a->options.at("queue_depth"), "8");
  EXPECT_EQ(a->intensity, Intensity::kLevel);
  EXPECT_DOUBLE_EQ(a->level, 0.5);
  EXPECT_EQ(a->peak_text, "2GiB/s");
  EXPECT_DOUBLE_EQ(a->duration_s, 3);
  EXPECT_DOUBLE_EQ(a->calibrate_duration_s, 0.5);
  EXPECT_TRUE(a->json);
  EXPECT_EQ(a->scratch_roots, (std::vector<std::string>{"/s1", "/s2"}));
}

TEST(ArgsTest, StartAt) {
  auto a = Parse({"memcpy", "--rate", "1GiB/s", "--start-at", "1764450000123456789"});
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->start_at_unix_ns, 1764450000123456789LL);
  EXPECT_EQ(Parse({"memcpy", "--max"})->start_at_unix_ns, 0);
}

TEST(ArgsTest, Commands) {
  EXPECT_EQ(Parse({"--list", "--json"})->command, Command::kList);
  EXPECT_EQ(Parse({"--help"})->command, Command::kUsage);
  EXPECT_EQ(Parse({"memcpy", "--help"})->command, Command::kInjectorHelp);
  EXPECT_EQ(Parse({"memcpy", "--calibrate"})->command, Command::kCalibrate);
  EXPECT_EQ(Parse({"--cleanup-stale"})->command, Command::kCleanupStale);
  EXPECT_EQ(Parse({"memcpy", "--max"})->intensity, Intensity::kMax);
  EXPECT_EQ(Parse({"memcpy", "--rate", "1GiB/s"})->rate_text, "1GiB/s");
}

TEST(ArgsTest, UsageErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> argv;
    std::string message;
  };
  const Case cases[] = {
      {{"memcpy", "--level", "1.5"}, "--level: 1.5 is out of range [0, 1]"},
      {{"memcpy", "--level", "half"}, "--level: 'half' is not a number"},
      {{"memcpy", "--max", "--rate", "1"}, "--rate: choose one of --max, --rate, --level"},
      {{"memcpy", "--rate", "1", "--peak", "2"}, "--peak only goes with --level"},
      {{"memcpy"}, "say how hard to push: --max, --rate R, --level F, or --calibrate"},
      {{"memcpy", "--calibrate", "--max"},
       "--calibrate measures the peak; it takes no --max/--rate/--level"},
      {{"memcpy", "--max", "--set", "threads"}, "--set: 'threads' is not KEY=VALUE"},
      {{"memcpy", "--max", "--set", "a=1", "--set", "a=2"}, "--set: option 'a' is given twice"},
      {{"memcpy", "--max", "--duration", "soon"},
       "--duration: 'soon' is not a duration (examples: 500ms, 30s, 2m, 1h)"},
      {{"memcpy", "--max", "--duration", "0"}, "--duration: 0 must be greater than 0"},
      {{"memcpy", "--max", "--duration"}, "--duration needs a value"},
      {{"memcpy", "--max", "--start-at", "soon"},
       "--start-at: 'soon' is not a positive Unix time in nanoseconds"},
      {{"memcpy", "--max", "--start-at", "-5"},
       "--start-at: '-5' is not a positive Unix time in nanoseconds"},
      {{"memcpy", "--max", "--frobnicate"}, "unknown flag '--frobnicate' (see codl-inject --help)"},
      {{"memcpy", "io_uring", "--max"}, "unexpected argument 'io_uring' (one injector per run)"},
      {{"--max"}, "no injector given (see codl-inject --list)"},
      {{"--json=yes", "--list"}, "--json takes no value"},
  };
  for (const auto& c : cases) {
    auto a = Parse(c.argv);
    ASSERT_FALSE(a.ok()) << c.message;
    EXPECT_EQ(a.error(), c.message);
  }
}

}  // namespace
}  // namespace codl::inject
