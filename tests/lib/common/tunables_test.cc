// The orderings the tunables must keep across processes, and the flag defaults made from them.
#include <gtest/gtest.h>

#include "lib/common/tunables.h"
#include "lib/common/units.h"

namespace codl::tunables {
namespace {

TEST(Tunables, TheControllersStartDeadlineOutlastsTheAgentsStartTimeout) {
  // Whatever timeout the controller sends, its own deadline is later: the agent gives up (and
  // kills the child) before the controller stops waiting for the answer.
  for (double sent : {0.0, 1.0, 120.0, 125.5, 600.0, 3600.0}) {
    const double agent_waits = sent > 0 ? sent : kAntagonistStartTimeoutS;
    EXPECT_GT(StartDeadlineS(sent), agent_waits) << "start_timeout_s " << sent;
    EXPECT_GE(StartDeadlineS(sent) - agent_waits, kStartReplyMarginS);
  }
  // A request without the field (an older controller): the agent's default, plus the margin.
  EXPECT_DOUBLE_EQ(StartDeadlineS(0), kAntagonistStartTimeoutS + kStartReplyMarginS);
}

TEST(Tunables, HeartbeatsFitInTheLeaseAndAgentsAreNotDeclaredDeadOnOneLateBeat) {
  EXPECT_LT(kDefaultHeartbeatIntervalS, kDefaultLeaseS);
  EXPECT_LT(kEmbeddedHeartbeatIntervalS, kDefaultLeaseS);
  EXPECT_GE(kDefaultLeaseS, kMinLeaseS);
  for (double hb : {kMinHeartbeatIntervalS, 0.5, 1.0, 5.0}) {
    EXPECT_GE(AgentDeadAfterS(hb), 2 * hb) << "heartbeat " << hb;
    EXPECT_GE(AgentDeadAfterS(hb), kMinAgentDeadAfterS);
  }
  EXPECT_GT(kEmbeddedAgentDeadAfterS, 2 * kEmbeddedHeartbeatIntervalS);
}

TEST(Tunables, FlagDefaultTextParsesBackToTheValue) {
  for (double v : {kDefaultLeaseS, kDefaultHeartbeatIntervalS, kMinLeaseS, 0.5, 0.05}) {
    auto parsed = ParseDuration(DurationFlagText(v));
    ASSERT_TRUE(parsed.ok()) << DurationFlagText(v) << ": " << parsed.error();
    EXPECT_DOUBLE_EQ(*parsed, v);
  }
  EXPECT_EQ(DurationFlagText(kDefaultLeaseS), "10s");
}

}  // namespace
}  // namespace codl::tunables
