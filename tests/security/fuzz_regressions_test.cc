// Inputs the fuzzers (tests/fuzz, docs/security.md "Fuzzing") found to crash or hang a parser:
// one test per finding, each must now be refused promptly with a clear error.
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

}  // namespace
}  // namespace codl
