// The order phases are shown in: codl-victim's pipeline first, then the victim's own order.
#include "lib/analysis/phase_order.h"

#include <gtest/gtest.h>

namespace codl::experiment {
namespace {

TrialRecord Trial(std::vector<std::string> order, std::vector<std::string> medians) {
  TrialRecord t;
  for (const auto& name : medians) t.phase_medians[name] = 0.1;
  t.phase_order = std::move(order);
  return t;
}

TEST(PhaseOrder, PipelineFirstThenFirstReportedOrder) {
  const TrialRecord a =
      Trial({"zeta_s", "compute_s", "alpha_s"}, {"alpha_s", "compute_s", "zeta_s"});
  const TrialRecord b = Trial({"mid_s", "read_s", "alpha_s"}, {"alpha_s", "mid_s", "read_s"});
  EXPECT_EQ(OrderPhases({&a, &b}),
            (std::vector<std::string>{"read_s", "compute_s", "zeta_s", "alpha_s", "mid_s"}));
  EXPECT_EQ(OrderPhases({&b, &a}),
            (std::vector<std::string>{"read_s", "compute_s", "mid_s", "alpha_s", "zeta_s"}));
}

TEST(PhaseOrder, RecordsWithoutAnOrderFallBackToNameOrder) {
  const TrialRecord old = Trial({}, {"zeta_s", "alpha_s", "data_wait_s"});
  EXPECT_EQ(OrderPhases({&old}), (std::vector<std::string>{"data_wait_s", "alpha_s", "zeta_s"}));
  // Listed names without a median are skipped; medians the order misses come after it.
  const TrialRecord partial =
      Trial({"zeta_s", "ghost_s", "zeta_s"}, {"zeta_s", "beta_s", "alpha_s"});
  EXPECT_EQ(ReportedPhases(partial), (std::vector<std::string>{"zeta_s", "alpha_s", "beta_s"}));
  EXPECT_TRUE(OrderPhases({}).empty());
}

}  // namespace
}  // namespace codl::experiment
