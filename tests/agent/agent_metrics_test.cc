// The agent's metrics: rates under base-unit names (never a unit label), series that go away
// when their antagonist stops, and codl_build_info.
#include "agent/agent_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lib/common/version.h"

namespace codl::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AgentMetrics, RatesUseBaseUnitNamesPerKind) {
  AgentMetrics m;
  AgentMetrics::Snapshot s;
  s.achieved_by_injector["memcpy"] = {2.5e9, "bytes/s"};
  s.achieved_by_injector["mps_cotenant"] = {1e12, "FLOP/s"};
  m.Update(s);
  const std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("codl_agent_antagonist_bytes_per_second{injector=\"memcpy\"} "));
  EXPECT_THAT(text, HasSubstr("codl_agent_antagonist_flop_per_second{injector=\"mps_cotenant\"} "));
  EXPECT_THAT(text, Not(HasSubstr("unit=")));
}

TEST(AgentMetrics, StoppedAntagonistSeriesIsRemoved) {
  AgentMetrics m;
  AgentMetrics::Snapshot s;
  s.achieved_by_injector["io_uring"] = {1e8, "bytes/s"};
  m.Update(s);
  EXPECT_THAT(m.Exposition(), HasSubstr("{injector=\"io_uring\"}"));
  s.achieved_by_injector.clear();
  m.Update(s);
  EXPECT_THAT(m.Exposition(), Not(HasSubstr("{injector=\"io_uring\"}")));
}

TEST(AgentMetrics, BuildInfoCarriesTheVersion) {
  AgentMetrics m;
  EXPECT_THAT(m.Exposition(), HasSubstr("codl_build_info{daemon=\"agent\",version=\"" +
                                        std::string(CodlVersion()) + "\"} 1"));
}

}  // namespace
}  // namespace codl::agent
