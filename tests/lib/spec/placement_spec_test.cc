// cpus: / numa: in the experiment YAML (syntax only; the agent checks the node). The CPU list
// parser itself: tests/lib/common/cpu_list_test.cc.
#include <gtest/gtest.h>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

TEST(PlacementSpec, VictimAndAntagonistCarryCpusNumaAndTheirLocation) {
  auto spec = ParseExperiment(
      "name: x\n"
      "victim:\n"
      "  command: [a]\n"
      "  cpus: 2-3,0\n"
      "antagonists:\n"
      "  - name: m\n"
      "    injector: memcpy\n"
      "    levels: [1]\n"
      "    numa: 0\n"
      "    cpus: 1\n",
      "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->victim.placement.cpus, "0,2,3");
  EXPECT_EQ(spec->victim.placement.numa, -1);
  EXPECT_EQ(spec->victim.placement.where, "e.yaml:3:3: victim");
  EXPECT_EQ(spec->antagonists[0].placement.cpus, "1");
  EXPECT_EQ(spec->antagonists[0].placement.numa, 0);
  EXPECT_EQ(spec->antagonists[0].placement.where, "e.yaml:6:5: antagonists[0]");
}

TEST(PlacementSpec, AbsentMeansAnywhere) {
  auto spec = ParseExperiment("name: x\nvictim: {command: [a]}\n", "e.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_TRUE(spec->victim.placement.empty());
}

TEST(PlacementSpec, SyntaxErrorsNameTheYamlLocation) {
  auto bad_cpus = ParseExperiment("name: x\nvictim:\n  command: [a]\n  cpus: 0-x\n", "e.yaml");
  ASSERT_FALSE(bad_cpus.ok());
  EXPECT_EQ(bad_cpus.error(),
            "e.yaml:4:9: victim.cpus: '0-x' is not a CPU number or range (e.g. 0-3,6)");
  // Placement goes through a cpu_set_t: CPUs past 1023 cannot be applied.
  auto too_high = ParseExperiment("name: x\nvictim:\n  command: [a]\n  cpus: 1024\n", "e.yaml");
  ASSERT_FALSE(too_high.ok());
  EXPECT_EQ(too_high.error(), "e.yaml:4:9: victim.cpus: CPU 1024 is out of range 0-1023");
  auto bad_numa = ParseExperiment("name: x\nvictim:\n  command: [a]\n  numa: -1\n", "e.yaml");
  ASSERT_FALSE(bad_numa.ok());
  EXPECT_NE(bad_numa.error().find("e.yaml:4:9: victim.numa:"), std::string::npos)
      << bad_numa.error();
}

}  // namespace
}  // namespace codl::experiment
