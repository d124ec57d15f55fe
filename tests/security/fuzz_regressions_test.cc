// Inputs the fuzzers (tests/fuzz, docs/security.md "Fuzzing") found to crash or hang a parser:
// one test per finding, each must now be refused promptly with a clear error.
#include <string>

#include <gtest/gtest.h>

#include "lib/daemon/daemon_config.h"
#include "lib/spec/spec.h"

namespace codl {
namespace {

// fuzz_experiment: yaml-cpp's LoadAll never returned on a top-level ", " (an endless stream of
// empty documents), so one `codlctl submit` could hang a controller handler thread for good.
TEST(FuzzRegressions, TopLevelFlowSeparatorIsRefusedNotHung) {
  for (const char* text : {", ", ",", "a: 1\n, ", ",,,,"}) {
    auto spec = experiment::ParseExperiment(text, "e.yaml", experiment::ParseHooks{});
    EXPECT_FALSE(spec.ok()) << text;
    auto config = daemon::ParseAgentConfig(text, "agent.yaml");
    EXPECT_FALSE(config.ok()) << text;
  }
}

// Item 3: numbers in YAML are range-checked — a duration that would overflow int64 nanoseconds,
// a sub-second lease or a 1 ns heartbeat in a daemon config.
TEST(NumberBounds, DurationsInExperimentsAndConfigs) {
  const std::string exp =
      "name: t\nsettle: 1e300s\nvictim:\n  command: [\"true\"]\n  progress: {format: wall}\n"
      "antagonists:\n  - name: n\n    injector: noop\n    levels: [0.5]\n";
  auto spec = experiment::ParseExperiment(exp, "e.yaml", experiment::ParseHooks{});
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().find("e.yaml:2:9"), std::string::npos) << spec.error();
  std::string short_lease = exp;
  short_lease.replace(short_lease.find("settle: 1e300s"), 14, "lease: 200ms");
  auto lease = experiment::ParseExperiment(short_lease, "e.yaml", experiment::ParseHooks{});
  ASSERT_FALSE(lease.ok());
  EXPECT_NE(lease.error().find("at least 1s"), std::string::npos) << lease.error();
  EXPECT_FALSE(daemon::ParseControllerConfig("lease: 0.001s\n", "c.yaml").ok());
  EXPECT_FALSE(daemon::ParseControllerConfig("heartbeat_interval: 1ns\n", "c.yaml").ok());
  EXPECT_FALSE(daemon::ParseControllerConfig("lease: 1e300s\n", "c.yaml").ok());
  EXPECT_TRUE(daemon::ParseControllerConfig("lease: 10s\nheartbeat_interval: 1s\n", "c.yaml").ok());
}

}  // namespace
}  // namespace codl
